//go:build !js

package transport_test

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// netTestResult is what the network test page finds (window.netTestResult).
type netTestResult struct {
	TCP struct {
		RTT, Jitter  *float64
		Failed, Sent int
		Error        string
	}
	UDP struct {
		Addr        string
		RTT, Jitter *float64
		Loss        *float64
		Sent        int
		Error       string
	}
}

// TestNetTestPage opens the server's network test (engine.NetTestPath)
// in headless Chromium, as a player would, and checks its figures
// against the links: through a relay with 20 ms each way and a quarter
// of the answers lost, the UDP round trip is 40 ms and the loss about a
// quarter; on the node's own port (the pion stack, whose socket answers
// the probes too) the round trip is a few milliseconds and nothing is
// lost. TCP goes straight to the node in both.
func TestNetTestPage(t *testing.T) {
	needBrowser(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bctx, stop, err := browser.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for _, tc := range []struct {
		name   string
		stack  transport.Stack
		relay  bool
		probes int
	}{
		{"lean through a lossy relay", transport.StackLean, true, 24},
		{"pion on its own port", transport.StackPion, false, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := engine.Config{Secret: []byte("0123456789abcdef0123456789abcdef"), UDPAddr: "127.0.0.1:0", Stack: tc.stack, IncludeLoopback: true}
			if tc.relay {
				cfg.PublicIPs = []string{"127.0.0.2"} // the relay's address, at the server's port
			}
			s, err := engine.NewServer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Shutdown(context.Background())
			web := httptest.NewServer(s.Handler())
			defer web.Close()
			var relay *udpimpair.Relay
			if tc.relay {
				udp := s.UDPAddr().(*net.UDPAddr).AddrPort()
				front := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.2"), udp.Port())
				relay, err = udpimpair.New(front.String(), udp,
					udpimpair.Link{Delay: 20 * time.Millisecond}, udpimpair.Link{Delay: 20 * time.Millisecond, Loss: 0.25}, 3)
				if err != nil {
					t.Fatal(err)
				}
				defer relay.Close()
			}
			var raw string
			if err := chromedp.Run(bctx,
				chromedp.Navigate(web.URL+engine.NetTestPath+"?probes="+strconv.Itoa(tc.probes)),
				chromedp.Poll(`window.netTestResult && JSON.stringify(window.netTestResult)`, &raw, chromedp.WithPollingTimeout(60*time.Second)),
			); err != nil {
				t.Fatalf("browser: %v", err)
			}
			var r netTestResult
			if err := json.Unmarshal([]byte(raw), &r); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			t.Logf("%s", raw)
			if relay != nil {
				st := relay.Stats()
				t.Logf("relay: %d requests up, %d answers down, %d lost", st.Up, st.Down, st.DownLost)
			}
			u := r.UDP
			if u.Error != "" || u.RTT == nil || u.Loss == nil || u.Sent != tc.probes {
				t.Fatalf("UDP: %+v", u)
			}
			if r.TCP.Error != "" || r.TCP.RTT == nil || r.TCP.Failed != 0 || *r.TCP.RTT > 30 {
				t.Errorf("TCP, straight to the node: %+v", r.TCP)
			}
			if tc.relay {
				// 40 ms and the browser's few milliseconds of its own.
				if *u.RTT < 39 || *u.RTT > 70 || *u.Loss < 0.04 || *u.Loss > 0.5 {
					t.Errorf("through the relay: round trip %.1f ms, loss %.2f: want 40 ms and about 0.25", *u.RTT, *u.Loss)
				}
			} else if *u.RTT > 20 || *u.Loss > 0.2 || math.IsNaN(*u.RTT) {
				t.Errorf("on the node's port: round trip %.1f ms, loss %.2f", *u.RTT, *u.Loss)
			}
		})
	}
}

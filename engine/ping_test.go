//go:build !js

package engine

import (
	"context"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/udpimpair"
)

// TestMeasureRegions: a player measures two regions' nodes. On the
// node's own UDP port the round trip is the loopback's; through a relay
// that delays 30 ms each way and loses 20% it is 60 ms, with that loss;
// a node whose UDP port does not answer is measured over HTTP. The
// regions come back in order, each with its best node, and as the
// matchmaker's round trips.
func TestMeasureRegions(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	udp := s.UDPAddr().(*net.UDPAddr).AddrPort()
	relay, err := udpimpair.New("127.0.0.1:0", udp,
		udpimpair.Link{Delay: 30 * time.Millisecond, Loss: 0.2}, udpimpair.Link{Delay: 30 * time.Millisecond}, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	closed, _ := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	dead := closed.LocalAddr().String()
	closed.Close() // nothing answers there

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pings, err := MeasureRegions(ctx, []RegionNode{
		{Region: "far", URL: web.URL, UDP: relay.Addr().String()},
		{Region: "near", URL: web.URL},
		{Region: "near", URL: web.URL, UDP: relay.Addr().String()}, // the region's worse node
		{Region: "blocked", URL: web.URL, UDP: dead},
	}, &MeasureConfig{Pings: 100, Interval: 2 * time.Millisecond, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(pings) != 3 || pings[0].Region != "far" || pings[1].Region != "near" || pings[2].Region != "blocked" {
		t.Fatalf("regions %+v", pings)
	}
	for _, p := range pings {
		t.Logf("%s over %s: rtt %v, jitter %v, loss %.2f of %d (%v)", p.Region, p.Over, p.RTT, p.Jitter, p.Loss, p.Sent, p.Err)
	}
	far, near, blocked := pings[0], pings[1], pings[2]
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	switch {
	case far.Over != "udp" || math.Abs(ms(far.RTT)-60) > 8 || math.Abs(far.Loss-0.2) > 0.12:
		t.Errorf("through the relay: %+v, want 60 ms and 20%% loss over UDP", far)
	case near.Over != "udp" || near.RTT > 5*time.Millisecond || near.Loss > 0.05:
		t.Errorf("on the node's own port: %+v", near)
	case blocked.Over != "http" || blocked.Err != nil || blocked.RTT <= 0 || blocked.Sent < 50:
		t.Errorf("with UDP blocked: %+v, want HTTP", blocked)
	}
	if rtts := RegionRTTs(pings); len(rtts) != 3 || math.Abs(float64(rtts["far"])-60) > 8 || rtts["near"] > 5 {
		t.Errorf("round trips for the matchmaker %v", rtts)
	}
	// The answer to GET /ping names the UDP port.
	if got := s.pingUDP(); got != netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), udp.Port()).String() {
		t.Errorf("ping names %q, the port is %v", got, udp)
	}
}

// TestMeasureRegionsRefusals: a node that is not there, or a URL that is
// none, is an error of its region; the others are measured.
func TestMeasureRegionsRefusals(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	gone := httptest.NewServer(nil)
	gone.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pings, err := MeasureRegions(ctx, []RegionNode{{Region: "ok", URL: web.URL}, {Region: "gone", URL: gone.URL}, {Region: "bad", URL: "::"}}, nil)
	if err != nil || len(pings) != 3 || pings[0].Err != nil || pings[1].Err == nil || pings[2].Err == nil {
		t.Fatalf("%+v %v", pings, err)
	}
	if rtts := RegionRTTs(pings); len(rtts) != 1 {
		t.Fatalf("round trips %v", rtts)
	}
}

// TestNetTestServed: the network test's page and script are served to
// anyone, the script to pages of any origin (the browser test, in
// interop/transport, runs them).
func TestNetTestServed(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	for _, tc := range []struct{ path, kind, has, origin string }{
		{NetTestPath, "text/html", `<script src="nettest.js">`, ""},
		{NetTestScript, "text/javascript", "tongbuNetTest", "*"},
	} {
		resp, err := http.Get(web.URL + tc.path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.kind) ||
			!strings.Contains(string(body), tc.has) || resp.Header.Get("Access-Control-Allow-Origin") != tc.origin {
			t.Errorf("%s: %d %q origin %q, %d bytes", tc.path, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header.Get("Access-Control-Allow-Origin"), len(body))
		}
	}
}

// TestStunRTTs: a browser's STUN probes count as answered when they came
// within 200 ms of the fastest; one later waited for the browser's
// retransmission (its first request or answer was lost), and one with no
// answer is lost.
func TestStunRTTs(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var out []time.Duration
		for _, x := range v {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	for _, tc := range []struct {
		times []time.Duration
		rtts  []time.Duration
	}{
		{ms(41, 40, 43), ms(41, 40, 43)},
		{ms(40, 300, 42, -1), ms(40, 42)},
		{ms(-1, -1), nil},
		{nil, nil},
	} {
		rtts, sent := stunRTTs(tc.times)
		if sent != len(tc.times) || !slices.Equal(rtts, tc.rtts) {
			t.Errorf("%v: %v of %d, want %v", tc.times, rtts, sent, tc.rtts)
		}
	}
	rtt, _, loss := pingStats(stunRTTs(ms(40, 300, 42, -1)))
	if rtt != 42*time.Millisecond || loss != 0.5 {
		t.Errorf("stats %v %.2f", rtt, loss)
	}
}

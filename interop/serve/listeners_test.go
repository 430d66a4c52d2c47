//go:build !js

package serve_test

import (
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestServeListenersBounded opens every TCP listener `tongbu serve` can
// open (signaling's HTTPS, the ICE-TCP port, the metrics' address, the
// ACME http-01 challenges') and, from one address, more idle connections
// than a client network may hold: each listener keeps that network's
// share and closes the rest at once, and a client of another address is
// still served. (Before, the ACME listener was a bare net.Listen whose
// idle connections used up the process's descriptors, and the ICE-TCP
// port's bound was global: one address's idle connections locked every
// TCP player out.)
func TestServeListenersBounded(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.json")
	// Loopback counted like any other network, so that 127.0.0.2 and
	// 127.0.0.3 are two clients; a connection rate high enough that the
	// per-network share is what bounds the HTTP listeners.
	if err := os.WriteFile(cfg, []byte(`{"bound_loopback": true, "http_conn_rate": 1000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	acmeAddr := "127.0.0.1:" + freePort(t)
	p := startServeWith(t, "0123456789abcdef0123", "listeners", "-config", cfg, "-rooms", "1",
		"-tcp", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0",
		"-acme-domains", "game.test", "-acme-directory", "https://127.0.0.1:1/dir",
		"-acme-cache", filepath.Join(dir, "acme"), "-acme-http", acmeAddr)
	m := regexp.MustCompile(`^tongbu serve: https://(\S+) \(UDP \S+, TCP (\S+)\); metrics at http://(\S+)/metrics`).FindStringSubmatch(p.first)
	if m == nil {
		t.Fatalf("the first line %q does not name the listeners", p.first)
	}
	for _, l := range []struct {
		name, addr string
		share      int
		get        string // a path to GET from another client afterwards; "" for none
	}{
		{"signaling (HTTPS)", m[1], 32, ""},
		{"ICE-TCP", m[2], 16, ""},
		{"metrics", m[3], 32, "/metrics"},
		{"ACME http-01", acmeAddr, 8, "/.well-known/acme-challenge/nothing"},
	} {
		t.Run(l.name, func(t *testing.T) {
			held, conns := idleFrom(t, "127.0.0.2", l.addr, l.share+8)
			defer func() {
				for _, c := range conns {
					c.Close()
				}
			}()
			if held > l.share {
				t.Errorf("one address holds %d idle connections, more than its share of %d", held, l.share)
			}
			if held < l.share/2 {
				t.Errorf("one address holds only %d idle connections of its share of %d", held, l.share)
			}
			other, _ := idleFrom(t, "127.0.0.3", l.addr, 1)
			if other != 1 {
				t.Fatalf("a client of another address was closed beside the idle ones")
			}
			if l.get == "" {
				return
			}
			client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
				DialContext:       (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 3)}}).DialContext,
				DisableKeepAlives: true,
			}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Get("http://" + l.addr + l.get)
			if err != nil {
				t.Fatalf("another client's request: %v", err)
			}
			resp.Body.Close()
			if resp.StatusCode >= 500 {
				t.Errorf("another client's request: %s", resp.Status)
			}
		})
	}
}

// idleFrom opens n connections to addr from the local address ip and
// sends nothing; it returns how many the server still holds open a
// moment later, and the connections.
func idleFrom(t *testing.T, ip, addr string, n int) (int, []net.Conn) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	var conns []net.Conn
	for range n {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %s from %s: %v", addr, ip, err)
		}
		conns = append(conns, c)
	}
	time.Sleep(300 * time.Millisecond)
	held := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			held++ // still open, waiting
		}
	}
	return held, conns
}

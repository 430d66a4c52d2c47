//go:build !js

package transport

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// refusals records what the Refused hook is told.
type refusals struct {
	mu      sync.Mutex
	reasons []string
}

func (r *refusals) hook(_ int, reason string) {
	r.mu.Lock()
	r.reasons = append(r.reasons, reason)
	r.mu.Unlock()
}

func (r *refusals) count(reason string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, x := range r.reasons {
		if x == reason {
			n++
		}
	}
	return n
}

// bearer is an Authorize hook that takes "Bearer good" and nothing else.
func bearer(r *http.Request) (any, error) {
	if r.Header.Get("Authorization") != "Bearer good" {
		return nil, errors.New("bad ticket")
	}
	return "good", nil
}

// slowOffer opens a raw connection to the signaling URL and sends the
// headers of a large offer, with auth as its Authorization, and then only
// a few bytes of the body: the attack that held every handshake slot.
func slowOffer(t *testing.T, signalURL, auth string) (net.Conn, *bufio.Reader) {
	t.Helper()
	u, err := url.Parse(signalURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/sdp\r\nAuthorization: %s\r\nContent-Length: 100000000\r\n\r\nv=0\r\n", u.Host, auth)
	return c, bufio.NewReader(c)
}

// status reads the status code of the response on a raw connection,
// waiting at most d.
func status(t *testing.T, c net.Conn, br *bufio.Reader, d time.Duration) int {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no answer within %v: %v", d, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitPending waits until the server has n handshakes in progress.
func waitPending(t *testing.T, s *testServer, n int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); s.Pending() != n; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pending %d, want %d", s.Pending(), n)
		}
	}
}

// TestSignalingSlowBodies: clients that send their offer's headers and
// then trickle the body hold handshake slots only until OfferTimeout, are
// answered 408, and a real client joins once they are gone.
func TestSignalingSlowBodies(t *testing.T) {
	var ref refusals
	s := newTestServer(t, ServerConfig{
		MaxPending: 3, MaxPendingPerAddr: 3, OfferTimeout: 400 * time.Millisecond,
		Authorize: bearer, Refused: ref.hook,
	})
	type slow struct {
		c  net.Conn
		br *bufio.Reader
	}
	var held []slow
	for range 3 {
		c, br := slowOffer(t, s.http.URL, "Bearer good")
		held = append(held, slow{c, br})
	}
	waitPending(t, s, 3)
	offer, _ := offerOnly(t)
	if code, _ := post(t, s.http.URL, "application/sdp", offer, map[string]string{"Authorization": "Bearer good"}); code != http.StatusTooManyRequests {
		t.Fatalf("an offer while every slot is held: %d, want 429", code)
	}
	for i, h := range held {
		if code := status(t, h.c, h.br, 10*time.Second); code != http.StatusRequestTimeout {
			t.Fatalf("slow body %d: %d, want 408", i, code)
		}
	}
	waitPending(t, s, 0)
	if n := ref.count("slow_offer"); n != 3 {
		t.Fatalf("%d slow_offer refusals reported, want 3 (all: %v)", n, ref.reasons)
	}
	if ref.count("busy") != 1 {
		t.Fatalf("busy refusals %v, want one", ref.reasons)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.http.URL, &ClientConfig{IncludeLoopback: true, Header: http.Header{"Authorization": {"Bearer good"}}})
	if err != nil {
		t.Fatalf("a real client after the slow ones: %v", err)
	}
	c.Close()
}

// TestSignalingForgedTakesNoSlot: a request with a bad ticket is refused
// before its body is read and takes no slot, however many there are.
func TestSignalingForgedTakesNoSlot(t *testing.T) {
	s := newTestServer(t, ServerConfig{MaxPending: 2, OfferTimeout: time.Minute, Authorize: bearer})
	for i := range 50 {
		c, br := slowOffer(t, s.http.URL, "Bearer forged")
		if code := status(t, c, br, 5*time.Second); code != http.StatusForbidden {
			t.Fatalf("forged request %d: %d, want 403", i, code)
		}
		if s.Pending() != 0 {
			t.Fatalf("a forged request holds a slot (pending %d)", s.Pending())
		}
	}
}

// TestSignalingPerAddress: one address cannot take more than
// MaxPendingPerAddr slots, though the server has more; another address
// still gets one.
func TestSignalingPerAddress(t *testing.T) {
	var ref refusals
	s := newTestServer(t, ServerConfig{
		MaxPending: 10, MaxPendingPerAddr: 2, OfferTimeout: time.Minute,
		Authorize: bearer, Refused: ref.hook,
	})
	// The test's connections are all loopback, which the bound leaves
	// alone: a header names the address each stands for.
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.RemoteAddr = r.Header.Get("X-Test-From") + ":40000"
		s.ServeHTTP(w, r)
	}))
	defer func() {
		web.CloseClientConnections() // the slow offers: Close would wait out their minute
		web.Close()
	}()
	from := func(ip string) (net.Conn, *bufio.Reader) {
		return slowOffer(t, web.URL, "Bearer good\r\nX-Test-From: "+ip)
	}
	from("203.0.113.7")
	from("203.0.113.7")
	waitPending(t, s, 2)
	c, br := from("203.0.113.7")
	if code := status(t, c, br, 5*time.Second); code != http.StatusTooManyRequests {
		t.Fatalf("third offer from one address: %d, want 429", code)
	}
	if ref.count("busy_addr") != 1 || s.Pending() != 2 {
		t.Fatalf("refusals %v, pending %d; want one busy_addr and 2 pending", ref.reasons, s.Pending())
	}
	from("198.51.100.1")
	waitPending(t, s, 3)
}

// TestSignalingPerTicket is issue 34's lock-out with one ticket: slow
// offers that all carry one valid ticket hold at most MaxPendingPerKey
// slots, whatever their addresses, and an honest client with its own
// ticket still gets in.
func TestSignalingPerTicket(t *testing.T) {
	var ref refusals
	s := newTestServer(t, ServerConfig{
		MaxPending: 10, OfferTimeout: time.Minute, Refused: ref.hook,
		Authorize: func(r *http.Request) (any, error) {
			if a := r.Header.Get("Authorization"); a == "Bearer good" || a == "Bearer other" {
				return a, nil
			}
			return nil, errors.New("bad ticket")
		},
		OfferKey: func(meta any) string { return meta.(string) },
		// Each slow offer stands for another address, behind a proxy.
		ClientNetworks: ClientNetworks{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	for i := range 5 {
		c, br := slowOffer(t, s.http.URL, fmt.Sprintf("Bearer good\r\nX-Forwarded-For: 203.0.113.%d", i))
		if i < 2 {
			waitPending(t, s, i+1) // in turn: concurrent offers take their slots in any order
			continue
		}
		if code := status(t, c, br, 5*time.Second); code != http.StatusTooManyRequests {
			t.Fatalf("slow offer %d with one ticket: %d, want 429", i, code)
		}
	}
	waitPending(t, s, 2)
	if ref.count("busy_ticket") != 3 {
		t.Fatalf("refusals %v, want three busy_ticket", ref.reasons)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, s.http.URL, &ClientConfig{IncludeLoopback: true, Header: http.Header{"Authorization": {"Bearer other"}}})
	if err != nil {
		t.Fatalf("another ticket: %v", err)
	}
	c.Close()
}

// TestSignalingPerNetwork: the addresses of one IPv6 /64 share one
// MaxPendingPerAddr, and a trusted proxy's requests count against the
// clients it names.
func TestSignalingPerNetwork(t *testing.T) {
	var ref refusals
	s := newTestServer(t, ServerConfig{
		MaxPending: 10, MaxPendingPerAddr: 2, OfferTimeout: time.Minute, Authorize: bearer, Refused: ref.hook,
		ClientNetworks: ClientNetworks{TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}},
	})
	from := func(ip string) (net.Conn, *bufio.Reader) {
		return slowOffer(t, s.http.URL, "Bearer good\r\nX-Forwarded-For: "+ip)
	}
	from("2001:db8:5:6::1")
	from("2001:db8:5:6:ffff::2")
	waitPending(t, s, 2)
	c, br := from("2001:db8:5:6:1234:5678:9abc:def0")
	if code := status(t, c, br, 5*time.Second); code != http.StatusTooManyRequests {
		t.Fatalf("a third address of one /64: %d, want 429", code)
	}
	from("2001:db8:5:7::1") // the next /64
	waitPending(t, s, 3)
	if ref.count("busy_addr") != 1 {
		t.Fatalf("refusals %v, want one busy_addr", ref.reasons)
	}
}

// TestSignalingAdmitAfterParse: Admit (which spends a one-use ticket) runs
// only for an offer that parses, and its refusal closes what was made.
func TestSignalingAdmitAfterParse(t *testing.T) {
	var (
		mu       sync.Mutex
		admitted []any
		deny     bool
	)
	var ref refusals
	s := newTestServer(t, ServerConfig{
		Authorize: bearer, Refused: ref.hook,
		Admit: func(meta any) error {
			mu.Lock()
			defer mu.Unlock()
			admitted = append(admitted, meta)
			if deny {
				return errors.New("ticket spent")
			}
			return nil
		},
	})
	auth := map[string]string{"Authorization": "Bearer good"}
	for _, garbage := range []string{"v=0\r\nthis is not sdp", "\x00\xff\x10\x80", strings.Repeat("a=x\r\n", 100)} {
		if code, body := post(t, s.http.URL, "application/sdp", garbage, auth); code != http.StatusBadRequest {
			t.Fatalf("garbage offer %q: %d %s, want 400", garbage[:4], code, body)
		}
	}
	mu.Lock()
	if len(admitted) != 0 {
		t.Fatalf("Admit ran for garbage offers: %v", admitted)
	}
	deny = true
	mu.Unlock()
	if n := ref.count("bad_offer"); n != 3 {
		t.Fatalf("bad_offer refusals %v, want 3", ref.reasons)
	}
	offer, _ := offerOnly(t)
	if code, body := post(t, s.http.URL, "application/sdp", offer, auth); code != http.StatusForbidden || !strings.Contains(body, "ticket spent") {
		t.Fatalf("offer Admit refuses: %d %s, want 403 naming the reason", code, body)
	}
	waitPending(t, s, 0)
	mu.Lock()
	deny = false
	mu.Unlock()
	offer, _ = offerOnly(t)
	if code, body := post(t, s.http.URL, "application/sdp", offer, auth); code != http.StatusCreated {
		t.Fatalf("good offer: %d %s", code, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(admitted, []any{"good", "good"}) {
		t.Fatalf("Admit saw %v, want the Authorize value twice", admitted)
	}
}

// TestLoopbackByItself: a server bound to a loopback address and a client
// dialing a loopback URL connect without IncludeLoopback on either side.
func TestLoopbackByItself(t *testing.T) {
	s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	web := httptest.NewServer(s)
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, web.URL, nil)
	if err != nil {
		t.Fatalf("dial a loopback server without IncludeLoopback: %v", err)
	}
	c.Close()
	for _, tt := range []struct {
		url  string
		want bool
	}{
		{"http://127.0.0.1:8080/connect", true},
		{"http://localhost/connect", true},
		{"http://[::1]:80/", true},
		{"https://game.example/connect", false},
		{"::bad", false},
	} {
		if got := isLoopbackURL(tt.url); got != tt.want {
			t.Errorf("isLoopbackURL(%q) = %v", tt.url, got)
		}
	}
}

// TestDialSaysNoPath: a dial whose answer names an address nobody serves
// times out saying there is no network path, not only "timeout".
func TestDialSaysNoPath(t *testing.T) {
	s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", PublicIPs: []string{"192.0.2.1"}}) // TEST-NET-1: unreachable
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	web := httptest.NewServer(s)
	defer web.Close()
	_, err = Dial(context.Background(), web.URL, &ClientConfig{Limits: Limits{HandshakeTimeout: time.Second}})
	if !errors.Is(err, ErrHandshakeTimeout) || !strings.Contains(err.Error(), "no network path") {
		t.Fatalf("dial with no path: %v", err)
	}
}

// TestSignalingRefusalEndsConnection: a request refused before its body
// is read (a forged ticket, a full server) is answered and its
// connection ended at once; net/http would otherwise wait for the unread
// body, up to the server's read timeout, holding the connection.
func TestSignalingRefusalEndsConnection(t *testing.T) {
	s := newTestServer(t, ServerConfig{MaxPending: 1, OfferTimeout: time.Minute, Authorize: bearer})
	slowOffer(t, s.http.URL, "Bearer good") // holds the one slot
	waitPending(t, s, 1)
	u, _ := url.Parse(s.http.URL)
	for _, hdr := range []string{"Authorization: Bearer forged", "Authorization: Bearer good", "Origin: https://evil.example\r\nAuthorization: Bearer good"} {
		// A body net/http would wait for (under its 256 KiB).
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/sdp\r\n%s\r\nContent-Length: 100000\r\n\r\nv=0\r\n", hdr)
		br := bufio.NewReader(c)
		began := time.Now()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("%q: no answer: %v", hdr, err)
		}
		if resp.Header.Get("Connection") != "close" && !resp.Close {
			t.Errorf("%q: refused %d without Connection: close", hdr, resp.StatusCode)
		}
		_, err = io.Copy(io.Discard, br)
		if took := time.Since(began); err != nil || took > 2*time.Second {
			t.Errorf("%q: %d, connection ended after %v (%v)", hdr, resp.StatusCode, took, err)
		}
	}
}

// TestRefusalText: the body of a refusal says what kind it is, as its
// status does: a version refusal is not called "not authorized".
func TestRefusalText(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		text string
	}{
		{errors.New("bad ticket"), http.StatusForbidden, "not authorized: bad ticket"},
		{&Refusal{Status: http.StatusUpgradeRequired, Reason: "wire_version", Err: errors.New("wire 1, server 3")}, 0, "wire version refused: "},
		{&Refusal{Status: http.StatusConflict, Reason: "build", Err: errors.New("build 1.0")}, 0, "build refused: "},
		{&Refusal{Status: http.StatusNotFound, Reason: "not_found", Err: errors.New("no room")}, 0, "refused: "},
	} {
		s := newTestServer(t, ServerConfig{Authorize: func(*http.Request) (any, error) { return nil, tc.err }})
		resp, err := http.Post(s.http.URL, "application/sdp", strings.NewReader("v=0"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.HasPrefix(string(body), tc.text) || tc.code != 0 && resp.StatusCode != tc.code {
			t.Errorf("%v: %d %q, want the body to start %q", tc.err, resp.StatusCode, body, tc.text)
		}
	}
}

// TestPreflight: a page of another allowed origin may send the headers a
// client sends (its ticket, the engine's wire version): the CORS
// preflight allows them.
func TestPreflight(t *testing.T) {
	s := newTestServer(t, ServerConfig{AllowedOrigins: []string{"https://game.example"}})
	req, _ := http.NewRequest(http.MethodOptions, s.http.URL, nil)
	req.Header.Set("Origin", "https://game.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,tongbu-wire")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	allowed := strings.ToLower(resp.Header.Get("Access-Control-Allow-Headers"))
	for _, h := range []string{"authorization", "content-type", "tongbu-wire"} {
		if !strings.Contains(allowed, h) {
			t.Errorf("the preflight allows %q, not %s", allowed, h)
		}
	}
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("Access-Control-Allow-Origin") != "https://game.example" {
		t.Errorf("preflight: %d, origin %q", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}

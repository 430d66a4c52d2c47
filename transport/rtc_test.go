//go:build !js

package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/lean"
)

type testServer struct {
	*Server
	http *httptest.Server
}

func newTestServer(t *testing.T, cfg ServerConfig) *testServer {
	t.Helper()
	cfg.UDPAddr = "127.0.0.1:0"
	cfg.IncludeLoopback = true
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, http: httptest.NewServer(s)}
	t.Cleanup(func() {
		ts.http.Close()
		s.Close()
	})
	return ts
}

func dialTest(t *testing.T, url string, lim Limits) Conn {
	t.Helper()
	return dialStack(t, url, lim, StackPion)
}

func dialStack(t *testing.T, url string, lim Limits, stack Stack) Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, &ClientConfig{IncludeLoopback: true, Limits: lim, Stack: stack})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func accept(t *testing.T, s *testServer) Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// collect receives until n messages arrived on ch or the deadline passes.
func collect(c Conn, ch Channel, n int, d time.Duration) []uint32 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var got []uint32
	for len(got) < n {
		m, err := c.Receive(ctx)
		if err != nil {
			break
		}
		if m.Channel == ch {
			got = append(got, binary.LittleEndian.Uint32(m.Data))
		}
	}
	return got
}

func numbered(i int) []byte {
	b := make([]byte, 200)
	binary.LittleEndian.PutUint32(b, uint32(i))
	return b
}

func TestWebRTCBothChannelsBothWays(t *testing.T) {
	for _, st := range []struct{ server, client Stack }{
		{StackPion, StackPion}, {StackLean, StackPion}, {StackLean, StackLean}, {StackPion, StackLean},
	} {
		t.Run(fmt.Sprintf("server %s client %s", st.server, st.client), func(t *testing.T) {
			s := newTestServer(t, ServerConfig{Stack: st.server})
			client := dialStack(t, s.http.URL, Limits{}, st.client)
			server := accept(t, s)
			bothWays(t, client, server)
		})
	}
}

// bothWays sends 1000 reliable and 1000 unreliable messages each way and
// checks what arrived.
func bothWays(t *testing.T, client, server Conn) {

	for _, dir := range []struct {
		name     string
		from, to Conn
	}{{"client to server", client, server}, {"server to client", server, client}} {
		t.Run(dir.name, func(t *testing.T) {
			var wg sync.WaitGroup
			var rel, unrel []uint32
			wg.Add(1)
			go func() {
				defer wg.Done()
				rel = collect(dir.to, Reliable, 1000, 20*time.Second)
			}()
			for i := range 1000 {
				if err := dir.from.SendReliable(numbered(i)); err != nil {
					t.Fatal(err)
				}
			}
			wg.Wait()
			if len(rel) != 1000 {
				t.Fatalf("reliable: %d of 1000 arrived", len(rel))
			}
			for i, v := range rel {
				if v != uint32(i) {
					t.Fatalf("reliable message %d arrived as %d: order broken", i, v)
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				unrel = collect(dir.to, Unreliable, 1000, 5*time.Second)
			}()
			dropped := 0
			for i := range 1000 {
				if err := dir.from.SendUnreliable(numbered(i)); errors.Is(err, ErrDropped) {
					dropped++
				} else if err != nil {
					t.Fatal(err)
				}
				if i%50 == 49 {
					time.Sleep(2 * time.Millisecond) // a game sends at a rate, not in one burst
				}
			}
			wg.Wait()
			if len(unrel)+dropped < 950 {
				t.Fatalf("unreliable: %d arrived, %d dropped at the sender, of 1000 on loopback", len(unrel), dropped)
			}
			// Each direction has its own sender: 1000 reliable and 1000
			// unreliable sends, each either sent or dropped and counted.
			if st := dir.from.Stats(); st.SentMessages+st.DroppedUnreliable != 2000 || st.DroppedUnreliable != uint64(dropped) {
				t.Fatalf("sender stats %+v, dropped %d", st, dropped)
			}
		})
	}
	if rtt := client.Stats().RTT; rtt <= 0 || rtt > time.Second {
		t.Errorf("client RTT estimate %v after 4000 messages on loopback", rtt)
	}
}

func TestWebRTCManyClients(t *testing.T) {
	s := newTestServer(t, ServerConfig{})
	const n = 50
	go func() { // echo server
		for {
			c, err := s.Accept(context.Background())
			if err != nil {
				return
			}
			go func() {
				for {
					m, err := c.Receive(context.Background())
					if err != nil {
						return
					}
					c.SendReliable(m.Data)
				}
			}()
		}
	}()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			c, err := Dial(ctx, s.http.URL, &ClientConfig{IncludeLoopback: true})
			if err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
				return
			}
			defer c.Close()
			if err := c.SendReliable(numbered(i)); err != nil {
				errs <- err
				return
			}
			m, err := c.Receive(ctx)
			if err != nil || binary.LittleEndian.Uint32(m.Data) != uint32(i) {
				errs <- fmt.Errorf("client %d: echo %v, %v", i, m.Data[:4], err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestWebRTCCloseAndReconnect(t *testing.T) {
	s := newTestServer(t, ServerConfig{})
	client := dialTest(t, s.http.URL, Limits{})
	server := accept(t, s)
	client.Close()
	select {
	case <-server.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not see the client close")
	}
	if _, err := server.Receive(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("receive on closed conn: %v", err)
	}
	if err := client.SendReliable([]byte("x")); !errors.Is(err, ErrClosed) {
		t.Fatalf("send on closed conn: %v", err)
	}
	again := dialTest(t, s.http.URL, Limits{})
	server2 := accept(t, s)
	if server2.ID() == server.ID() {
		t.Fatal("a new connection reused the peer id")
	}
	if err := again.SendReliable([]byte("back")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m, err := server2.Receive(ctx); err != nil || string(m.Data) != "back" {
		t.Fatalf("after reconnect: %q, %v", m.Data, err)
	}
}

func TestWebRTCIdleTimeoutAndKeepalive(t *testing.T) {
	s := newTestServer(t, ServerConfig{Limits: Limits{IdleTimeout: 1500 * time.Millisecond}})
	// A client that keeps alive every 300 ms stays connected.
	alive := dialTest(t, s.http.URL, Limits{IdleTimeout: 900 * time.Millisecond, KeepAlive: 300 * time.Millisecond})
	aliveSrv := accept(t, s)
	// A client whose keepalives come every 20 s goes idle.
	quiet := dialTest(t, s.http.URL, Limits{IdleTimeout: time.Minute, KeepAlive: 20 * time.Second})
	quietSrv := accept(t, s)
	select {
	case <-quietSrv.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("idle connection not closed")
	}
	if err := quietSrv.(interface{ Err() error }).Err(); !errors.Is(err, ErrIdle) {
		t.Fatalf("closed for %v, want ErrIdle", err)
	}
	select {
	case <-aliveSrv.Done():
		t.Fatalf("kept-alive connection closed: %v", aliveSrv.(interface{ Err() error }).Err())
	case <-alive.Done():
		t.Fatal("kept-alive client closed")
	default:
	}
	_ = quiet
}

// offerOnly makes a real offer with the two channels and never completes
// the handshake.
func offerOnly(t testing.TB) (string, *webrtc.PeerConnection) {
	t.Helper()
	var se webrtc.SettingEngine
	se.SetIncludeLoopbackCandidate(true)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	for _, p := range []webrtc.DataChannelInit{unreliableParams, reliableParams} {
		if _, err := pc.CreateDataChannel("x", &p); err != nil {
			t.Fatal(err)
		}
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	<-g
	return pc.LocalDescription().SDP, pc
}

func post(t *testing.T, url, ctype, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", ctype)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pionConns returns how many connections a pion-stack server holds (none
// on the lean stack, whose peers the server does not keep).
func pionConns(s *Server) int {
	p, ok := s.stack.(*pionServer)
	if !ok {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func TestWebRTCHandshakeTimeout(t *testing.T) {
	s := newTestServer(t, ServerConfig{Limits: Limits{HandshakeTimeout: 700 * time.Millisecond}})
	offer, _ := offerOnly(t)
	if code, body := post(t, s.http.URL, "application/sdp", offer, nil); code != http.StatusCreated {
		t.Fatalf("offer: %d %s", code, body)
	}
	if s.Pending() != 1 {
		t.Fatalf("pending %d after an unanswered handshake, want 1", s.Pending())
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.Pending() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the stalled handshake was never timed out")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if left := pionConns(s.Server); left != 0 {
		t.Fatalf("%d connections held after the timeout", left)
	}
}

func TestWebRTCSignalingRejects(t *testing.T) {
	s := newTestServer(t, ServerConfig{
		MaxPending:     1,
		MaxOfferBytes:  4096,
		AllowedOrigins: []string{"https://game.example"},
		Limits:         Limits{HandshakeTimeout: 30 * time.Second},
		Authorize: func(r *http.Request) (any, error) {
			if r.Header.Get("Authorization") == "deny" {
				return nil, errors.New("bad ticket")
			}
			return "ok", nil
		},
	})
	base := runtime.NumGoroutine()
	tests := []struct {
		name   string
		method string
		ctype  string
		body   string
		header map[string]string
		code   int
	}{
		{"get", http.MethodGet, "", "", nil, http.StatusMethodNotAllowed},
		{"wrong content type", http.MethodPost, "application/json", `{"sdp":"x"}`, nil, http.StatusUnsupportedMediaType},
		{"oversized body", http.MethodPost, "application/sdp", strings.Repeat("a", 5000), nil, http.StatusRequestEntityTooLarge},
		{"garbage sdp", http.MethodPost, "application/sdp", "v=0\r\nthis is not sdp", nil, http.StatusBadRequest},
		{"binary garbage", http.MethodPost, "application/sdp", "\x00\xff\x10\x80", nil, http.StatusBadRequest},
		{"origin not allowed", http.MethodPost, "application/sdp", "v=0", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same host, another port", http.MethodPost, "application/sdp", "v=0", map[string]string{"Origin": "http://127.0.0.1:1"}, http.StatusForbidden},
		// A page the server itself served passes the origin check (and
		// fails on its garbage offer).
		{"own origin", http.MethodPost, "application/sdp", "garbage", map[string]string{"Origin": s.http.URL}, http.StatusBadRequest},
		{"listed origin", http.MethodPost, "application/sdp", "garbage", map[string]string{"Origin": "https://game.example"}, http.StatusBadRequest},
		{"not authorized", http.MethodPost, "application/sdp", "v=0", map[string]string{"Authorization": "deny"}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, s.http.URL, strings.NewReader(tt.body))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			for k, v := range tt.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.code {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, bytes.TrimSpace(b), tt.code)
			}
			if len(bytes.TrimSpace(b)) == 0 {
				t.Fatal("no explanation in the body")
			}
			// A refused origin is named, with how to allow it.
			if o := tt.header["Origin"]; tt.code == http.StatusForbidden && o != "" &&
				(!bytes.Contains(b, []byte(o)) || !bytes.Contains(b, []byte("AllowedOrigins"))) {
				t.Fatalf("refusal %q does not name %s and how to allow it", b, o)
			}
		})
	}
	// Over the pending limit: one stalled handshake holds the only slot.
	offer, pc1 := offerOnly(t)
	if code, body := post(t, s.http.URL, "application/sdp", offer, nil); code != http.StatusCreated {
		t.Fatalf("first offer: %d %s", code, body)
	}
	offer2, pc2 := offerOnly(t)
	if code, _ := post(t, s.http.URL, "application/sdp", offer2, nil); code != http.StatusTooManyRequests {
		t.Fatalf("second offer: %d, want 429", code)
	}
	s.Close() // releases the stalled handshake
	if s.Pending() != 0 {
		t.Fatalf("pending %d after close", s.Pending())
	}
	pc1.Close()
	pc2.Close()
	s.http.CloseClientConnections()
	http.DefaultClient.CloseIdleConnections()
	waitGoroutines(t, base) // nothing of the refused or stalled requests is left
}

func TestWebRTCUnreliableDropsWhenBackedUp(t *testing.T) {
	s := newTestServer(t, ServerConfig{})
	client := dialTest(t, s.http.URL, Limits{MaxBufferedUnreliable: 4096})
	server := accept(t, s)
	_ = server
	msg := make([]byte, 1000)
	dropped := 0
	for range 20000 {
		if err := client.SendUnreliable(msg); errors.Is(err, ErrDropped) {
			dropped++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	st := client.Stats()
	if dropped == 0 || st.DroppedUnreliable != uint64(dropped) {
		t.Fatalf("a 20 MB burst dropped %d at the sender (stats %d)", dropped, st.DroppedUnreliable)
	}
	if err := client.SendUnreliable(make([]byte, DefaultMaxUnreliable+1)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized unreliable message: %v", err)
	}
	if err := client.SendReliable(nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("empty message: %v", err)
	}
}

// waitGoroutines waits until the goroutine count is back to at most n.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for runtime.NumGoroutine() > n {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines left, want at most %d:\n%s", runtime.NumGoroutine(), n, buf)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestWebRTCNoGoroutinesLeftAfterClose(t *testing.T) {
	// The lean clients of a process share one endpoint, and its flusher,
	// for the life of the process: count it in whether or not a test that
	// ran before made it.
	if err := lean.StartClients(conn.Limits(Limits{}.WithDefaults())); err != nil {
		t.Fatal(err)
	}
	base := runtime.NumGoroutine()
	func() {
		s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		var clients []Conn
		for range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			c, err := Dial(ctx, hs.URL, &ClientConfig{IncludeLoopback: true})
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
			sc := accept(t, &testServer{Server: s})
			if err := c.SendReliable([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if m, err := sc.Receive(context.Background()); err != nil || string(m.Data) != "hello" {
				t.Fatalf("%q %v", m.Data, err)
			}
		}
		for _, c := range clients {
			c.Close()
		}
		s.Close()
		hs.Close()
		http.DefaultClient.CloseIdleConnections()
	}()
	waitGoroutines(t, base)
}

// TestWebRTCPublicAddress: behind a 1:1 NAT the answer offers exactly
// the public addresses, on both stacks, whatever the interfaces are
// (pion once added the host's IPv6 one), at the UDP and the TCP port; and
// both stacks answer setup:passive and a 256 KiB max-message-size (SPEC.md
// §6.3). Only the SDP is inspected; nothing is sent to these
// (documentation-range) addresses.
func TestWebRTCPublicAddress(t *testing.T) {
	for _, stack := range []Stack{StackLean, StackPion} {
		for _, public := range [][]string{{"203.0.113.7"}, {"2001:db8::7"}, {"203.0.113.7", "2001:db8::7"}} {
			t.Run(fmt.Sprint(stack, public), func(t *testing.T) {
				s, err := NewServer(ServerConfig{UDPAddr: ":0", TCPAddr: ":0", PublicIPs: public, Stack: stack})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				hs := httptest.NewServer(s)
				defer hs.Close()
				offer, _ := offerOnly(t)
				code, answer := post(t, hs.URL, "application/sdp", offer, nil)
				if code != http.StatusCreated {
					t.Fatalf("offer: %d %s", code, answer)
				}
				got := map[string]bool{}
				for _, line := range strings.Split(answer, "\r\n") {
					// candidate:<f> <component> <transport> <priority> <address> <port> typ host
					if f := strings.Fields(strings.TrimPrefix(line, "a=candidate:")); len(f) >= 6 && strings.HasPrefix(line, "a=candidate:") && f[1] == "1" {
						got[strings.ToLower(f[2])+" "+f[4]] = true
					}
				}
				want := map[string]bool{}
				for _, ip := range public {
					want["udp "+ip], want["tcp "+ip] = true, true
				}
				if !maps.Equal(got, want) {
					t.Errorf("candidates %v, want %v:\n%s", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)), answer)
				}
				for _, attr := range []string{"a=setup:passive\r\n", "a=max-message-size:262144\r\n"} {
					if !strings.Contains(answer, attr) {
						t.Errorf("the answer has no %q:\n%s", strings.TrimSpace(attr), answer)
					}
				}
			})
		}
	}
}

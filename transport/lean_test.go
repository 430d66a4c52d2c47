//go:build !js

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/internal/lean"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// TestLeanThroughLoss runs both channels between a lean server and each
// native client through a user-space relay that loses 20% each way with
// 30±20 ms of delay: every reliable message arrives, in order; about 80%
// of the unreliable ones do; the connection stays up.
func TestLeanThroughLoss(t *testing.T) {
	for _, clientStack := range []Stack{StackLean, StackPion} {
		t.Run("client "+clientStack.String(), func(t *testing.T) {
			s, hs, relay := impairedServer(t, udpimpair.Link{Loss: 0.2, Delay: 30 * time.Millisecond, Jitter: 20 * time.Millisecond}, 3)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			client, err := Dial(ctx, hs.URL, &ClientConfig{Stack: clientStack, Limits: Limits{HandshakeTimeout: 30 * time.Second}})
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := s.Accept(ctx)
			if err != nil {
				t.Fatal(err)
			}
			const n = 300
			var wg sync.WaitGroup
			var rel []uint32
			var unrel int
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Until every reliable message is in and nothing has come
				// for half a second: the unreliable ones that arrive after
				// the last reliable one count too (they did not, and a
				// late retransmission of the last reliable one made the
				// count of the pion client's unreliable ones swing from
				// 0.37 to 1.0).
				end := time.Now().Add(25 * time.Second)
				for time.Now().Before(end) {
					ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
					m, err := server.Receive(ctx)
					cancel()
					if err != nil {
						if len(rel) == n || server.(*lean.Peer).IsDone() {
							return
						}
						continue
					}
					if m.Channel == Reliable {
						rel = append(rel, uint32(m.Data[0])|uint32(m.Data[1])<<8)
					} else {
						unrel++
					}
				}
			}()
			for i := range n {
				if err := client.SendReliable([]byte{byte(i), byte(i >> 8)}); err != nil {
					t.Fatal(err)
				}
				client.SendUnreliable([]byte{byte(i), 0xff})
				time.Sleep(5 * time.Millisecond)
			}
			wg.Wait()
			if len(rel) != n {
				t.Fatalf("%d of %d reliable messages arrived (relay %+v)", len(rel), n, relay.Stats())
			}
			for i, v := range rel {
				if v != uint32(i) {
					t.Fatalf("reliable message %d arrived as %d", i, v)
				}
			}
			// The lean client never resends an unreliable message; pion's
			// resends some (its partial reliability gives up only at a
			// retransmission), so only the floor holds for it.
			if frac := float64(unrel) / n; frac < 0.65 || clientStack == StackLean && frac > 0.92 {
				t.Errorf("%.2f of unreliable messages arrived through 20%% loss", frac)
			}
			if st := relay.Stats(); st.UpLost == 0 || st.DownLost == 0 {
				t.Errorf("the relay lost nothing: %+v", st)
			}
		})
	}
}

// impairedServer returns a lean server on 127.0.0.1 that advertises
// 127.0.0.2, where a relay with link each way (seeded with seed) forwards
// to it; all three close when the test ends.
func impairedServer(t testing.TB, link udpimpair.Link, seed uint64) (*Server, *httptest.Server, *udpimpair.Relay) {
	t.Helper()
	s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0", PublicIPs: []string{"127.0.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	port := s.UDPAddr().(*net.UDPAddr).AddrPort().Port()
	relay, err := udpimpair.New(fmt.Sprintf("127.0.0.2:%d", port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), link, link, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	return s, hs, relay
}

// leanPair returns a lean server with n lean clients connected, and the
// server's side of each.
func leanPair(t *testing.T, n int) (*Server, []Conn, []Conn) {
	t.Helper()
	return leanPairWith(t, n, nil)
}

// leanPairWith is leanPair with the clients dialed with cfg.
func leanPairWith(t testing.TB, n int, cfg *ClientConfig) (*Server, []Conn, []Conn) {
	t.Helper()
	s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var clients, servers []Conn
	for range n {
		c, sc := dialAccept(t, ctx, s, hs.URL, cfg)
		clients, servers = append(clients, c), append(servers, sc)
	}
	return s, clients, servers
}

// dialAccept dials s at url with cfg and returns the client and the
// server's side of it; the client closes when the test ends.
func dialAccept(t testing.TB, ctx context.Context, s *Server, url string, cfg *ClientConfig) (Conn, Conn) {
	t.Helper()
	c, err := Dial(ctx, url, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	sc, err := s.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return c, sc
}

// TestICETimeout: an offer whose client never sends an ICE check gives
// its handshake slot back after ICETimeout, well before HandshakeTimeout,
// on both stacks.
func TestICETimeout(t *testing.T) {
	for _, stack := range []Stack{StackLean, StackPion} {
		t.Run(stack.String(), func(t *testing.T) {
			s := newTestServer(t, ServerConfig{Stack: stack, Limits: Limits{HandshakeTimeout: 20 * time.Second, ICETimeout: 300 * time.Millisecond}})
			offer, _ := offerOnly(t)
			start := time.Now()
			if code, body := post(t, s.http.URL, "application/sdp", offer, nil); code != 201 {
				t.Fatalf("offer: %d %s", code, body)
			}
			for s.Pending() != 0 {
				if time.Since(start) > 5*time.Second {
					t.Fatalf("the slot is still held after %v (ICETimeout 300 ms)", time.Since(start))
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("%s: slot back after %v", stack, time.Since(start).Round(10*time.Millisecond))
		})
	}
}

// TestLeanAllInterfaces: a lean server bound to every interface (":0", a
// dual-stack socket where the system has IPv6) serves an IPv4 client.
func TestLeanAllInterfaces(t *testing.T) {
	s, err := NewServer(ServerConfig{UDPAddr: ":0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hs := httptest.NewServer(s)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, stack := range []Stack{StackLean, StackPion} {
		c, sc := dialAccept(t, ctx, s, hs.URL, &ClientConfig{Stack: stack})
		if err := sc.SendReliable([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		if m, err := c.Receive(ctx); err != nil || string(m.Data) != "hello" {
			t.Fatalf("%s client: %q %v", stack, m.Data, err)
		}
		c.Close()
	}
}

// TestLeanSockets: a lean server on several sockets of one port (one a
// core by default; three here) serves lean and pion clients on an IPv4
// address and on every interface alike, and says how many it reads.
func TestLeanSockets(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", ":0"} {
		s, err := NewServer(ServerConfig{UDPAddr: addr, IncludeLoopback: true, Sockets: 3})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		want := 3
		if runtime.GOOS != "linux" {
			want = 1 // one socket a port elsewhere
		}
		if got := s.DataPath().Sockets; got != want {
			t.Errorf("%s: %d sockets, want %d", addr, got, want)
		}
		hs := httptest.NewServer(s)
		defer hs.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for i := range 8 {
			stack := StackLean
			if i%4 == 3 {
				stack = StackPion
			}
			c, sc := dialAccept(t, ctx, s, hs.URL, &ClientConfig{Stack: stack})
			if err := sc.SendReliable([]byte("hello")); err != nil {
				t.Fatal(err)
			}
			if m, err := c.Receive(ctx); err != nil || string(m.Data) != "hello" {
				t.Fatalf("%s: %s client %d: %q %v", addr, stack, i, m.Data, err)
			}
			if err := c.SendReliable([]byte("back")); err != nil {
				t.Fatal(err)
			}
			if m, err := sc.Receive(ctx); err != nil || string(m.Data) != "back" {
				t.Fatalf("%s: %s client %d: the server got %q %v", addr, stack, i, m.Data, err)
			}
		}
	}
}

// TestLeanHandle: a lean connection hands its messages to a Handler in
// order, those queued before Handle first; the handler may send on the
// connection and close it; Receive's queue stays empty.
func TestLeanHandle(t *testing.T) {
	_, clients, servers := leanPair(t, 1)
	client, server := clients[0], servers[0]
	const before, after = 3, 100
	for i := range before {
		if err := client.SendReliable([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for server.Stats().RecvMessages < before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	var mu sync.Mutex
	var got []byte
	server.(Handler).Handle(func(m Message) {
		if string(m.Data) == "bye" {
			server.Close()
			return
		}
		mu.Lock()
		got = append(got, m.Data[0])
		mu.Unlock()
		if err := server.SendReliable(m.Data); err != nil {
			t.Errorf("echo from the handler: %v", err)
		}
	})
	for i := before; i < before+after; i++ {
		if err := client.SendReliable([]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range before + after {
		m, err := client.Receive(ctx)
		if err != nil {
			t.Fatalf("echo %d: %v", i, err)
		}
		if m.Data[0] != byte(i) {
			t.Fatalf("echo %d is %d: out of order", i, m.Data[0])
		}
	}
	mu.Lock()
	if len(got) != before+after {
		t.Errorf("the handler took %d messages, want %d", len(got), before+after)
	}
	mu.Unlock()
	if _, ok := server.TryReceive(); ok {
		t.Error("TryReceive returned a message after Handle")
	}
	client.SendReliable([]byte("bye"))
	select {
	case <-server.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a handler that closed its connection: not closed")
	}
	select {
	case <-client.Done():
	case <-time.After(5 * time.Second):
		t.Error("the client did not see the close")
	}
}

// TestLeanFarServer: a lean client reaches a server whose round trip is
// longer than the client's interval between ICE checks. Each check is
// the same STUN transaction resent (RFC 8489, 6.2.1), so the answer to
// an early one is taken when it comes; a new transaction per check would
// never see its answer at a fixed RTT over the interval.
func TestLeanFarServer(t *testing.T) {
	for _, oneWay := range []time.Duration{20 * time.Millisecond, 60 * time.Millisecond, 150 * time.Millisecond} {
		t.Run(fmt.Sprint("one way ", oneWay), func(t *testing.T) {
			s, hs, _ := impairedServer(t, udpimpair.Link{Delay: oneWay}, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			client, server := dialAccept(t, ctx, s, hs.URL, &ClientConfig{Limits: Limits{HandshakeTimeout: 15 * time.Second}})
			if err := client.SendReliable([]byte("far")); err != nil {
				t.Fatal(err)
			}
			if m, err := server.Receive(ctx); err != nil || string(m.Data) != "far" {
				t.Fatalf("got %q, %v", m.Data, err)
			}
		})
	}
}

// TestDialSaysStage: a lean dial that fails says how far the handshake
// got, names the timeout once, and tells a handshake that failed (the
// server's certificate is not the one its answer named) from one that ran
// out of time.
func TestDialSaysStage(t *testing.T) {
	for _, tt := range []struct {
		name string
		drop func(b []byte) bool // what the path between them loses
		want string
	}{
		{"DTLS cut off", func(b []byte) bool { return len(b) > 0 && b[0] >= 20 && b[0] <= 63 }, "the server answered ICE, but the DTLS handshake did not finish"},
		{"SCTP cut off", func(b []byte) bool { return len(b) > 0 && b[0] == 23 }, "DTLS done, but the SCTP association did not open"}, // application data
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, hs, _ := impairedServer(t, udpimpair.Link{Drop: tt.drop}, 1)
			_, err := Dial(context.Background(), hs.URL, &ClientConfig{Limits: Limits{HandshakeTimeout: 3 * time.Second}})
			if !errors.Is(err, ErrHandshakeTimeout) || errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("dial: %v", err)
			}
			if n := strings.Count(err.Error(), "handshake timeout"); n != 1 {
				t.Errorf("%q says handshake timeout %d times", err, n)
			}
			t.Log(err)
		})
	}
	t.Run("wrong certificate", func(t *testing.T) {
		s, err := NewServer(ServerConfig{UDPAddr: "127.0.0.1:0"})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		// The signaling answers with another certificate's fingerprint,
		// as a tampered or misrouted answer would.
		forged := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, r)
			answer := rec.Body.String()
			const line = "a=fingerprint:sha-256 "
			i := strings.Index(answer, line)
			if i < 0 {
				t.Errorf("no %q in the answer: %q", line, answer)
				http.Error(w, "no fingerprint", http.StatusInternalServerError)
				return
			}
			i += len(line)
			flip := "00"
			if answer[i:i+2] == flip {
				flip = "11"
			}
			w.WriteHeader(rec.Code)
			io.WriteString(w, answer[:i]+flip+answer[i+2:])
		}))
		defer forged.Close()
		_, err = Dial(context.Background(), forged.URL, &ClientConfig{Limits: Limits{HandshakeTimeout: 20 * time.Second}})
		if !errors.Is(err, ErrHandshake) || errors.Is(err, ErrHandshakeTimeout) || !strings.Contains(err.Error(), "fingerprint") {
			t.Fatalf("dial: %v", err)
		}
		t.Log(err)
	})
}

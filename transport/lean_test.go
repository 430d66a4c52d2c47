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

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/record"
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
						if len(rel) == n || server.(*leanPeer).IsDone() {
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

// peerAddr is the address the server knows a peer by.
func peerAddr(c Conn) *net.UDPAddr {
	p := c.(*leanPeer)
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.raddr
}

// leanOf returns a lean-stack server's stack.
func leanOf(s *Server) *leanServer { return s.stack.(*leanServer) }

func leanState(s *Server) (peers, addrs, ufrags int) {
	leanOf(s).ep.mu.Lock()
	peers = len(leanOf(s).ep.peers)
	leanOf(s).ep.mu.Unlock()
	leanOf(s).sock.mu.RLock()
	addrs, ufrags = len(leanOf(s).sock.byAddr), len(leanOf(s).sock.byUfrag)
	leanOf(s).sock.mu.RUnlock()
	return
}

// TestLeanStrangers sends a lean server's socket what strangers could:
// datagrams of every kind from unknown addresses, binding requests with a
// bad MAC or an unknown ufrag, DTLS records forged for a real peer. None
// creates state, and the real peer's connection goes on.
func TestLeanStrangers(t *testing.T) {
	s, clients, servers := leanPair(t, 1)
	peers0, addrs0, ufrags0 := leanState(s)
	stranger, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	srvAddr := s.UDPAddr().(*net.UDPAddr).AddrPort()
	victim := servers[0].(*leanPeer)
	victim.mu.Lock()
	ufrag, remote := victim.ufrag, victim.remote.ufrag
	victim.mu.Unlock()
	var sent [][]byte
	// Binding requests: no MAC, a wrong MAC, an unknown ufrag.
	for _, b := range []struct{ user, pwd string }{{ufrag + ":" + remote, ""}, {ufrag + ":" + remote, "wrong"}, {"nosuch:" + remote, "x"}} {
		setters := []stun.Setter{stun.TransactionID, stun.BindingRequest, stun.NewUsername(b.user)}
		if b.pwd != "" {
			setters = append(setters, stun.NewShortTermIntegrity(b.pwd))
		}
		setters = append(setters, stun.Fingerprint)
		m := stun.MustBuild(setters...)
		sent = append(sent, m.Raw)
	}
	// DTLS: a ClientHello-like record, application data under made-up keys.
	sent = append(sent, []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	forger, _ := record.New(make([]byte, 16), make([]byte, 4), make([]byte, 16), make([]byte, 4))
	sent = append(sent, forger.Seal(nil, record.ApplicationData, []byte("forged sctp")))
	sent = append(sent, []byte{99, 1, 2, 3})
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	for range 200 {
		for _, b := range sent {
			stranger.WriteToUDPAddrPort(b, srvAddr)
		}
	}
	// And forged records from the real peer's own address, injected at
	// the socket as the kernel would hand them over.
	from := peerAddr(servers[0])
	for range 200 {
		leanOf(s).sock.datagram(time.Now(), forger.Seal(nil, record.ApplicationData, []byte("forged")), from, netip.Addr{})
	}
	stranger.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := stranger.ReadFromUDPAddrPort(make([]byte, 1500)); err == nil {
		t.Errorf("the server answered a stranger (%d bytes)", n)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	if peers, addrs, ufrags := leanState(s); peers != peers0 || addrs != addrs0 || ufrags != ufrags0 {
		t.Errorf("state after strangers: %d peers %d addresses %d ufrags, was %d %d %d", peers, addrs, ufrags, peers0, addrs0, ufrags0)
	}
	if grown := int64(ms1.HeapInuse) - int64(ms0.HeapInuse); grown > 256<<10 {
		t.Errorf("heap grew %d bytes for strangers' datagrams", grown)
	}
	if err := clients[0].SendReliable([]byte("still here")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m, err := servers[0].Receive(ctx); err != nil || string(m.Data) != "still here" {
		t.Fatalf("the real peer after strangers: %q %v", m.Data, err)
	}
}

// TestLeanFlood cuts off a peer that floods datagrams, and its neighbour
// does not notice.
func TestLeanFlood(t *testing.T) {
	s, clients, servers := leanPair(t, 2)
	flooder := clients[0].(*leanPeer)
	from := peerAddr(servers[0])
	// The flooder's own keys: these are valid records, at a rate no game
	// sends.
	start := time.Now()
	for time.Since(start) < 10*time.Second && !servers[0].(*leanPeer).IsDone() {
		flooder.mu.Lock()
		rec := flooder.ciph.Seal(nil, record.Alert, []byte{1, 99})
		flooder.mu.Unlock()
		leanOf(s).sock.datagram(time.Now(), rec, from, netip.Addr{})
	}
	if err := servers[0].(*leanPeer).Err(); !errors.Is(err, errFlood) {
		t.Fatalf("the flooder: %v, want cut off for flooding", err)
	}
	if err := clients[1].SendReliable([]byte("neighbour")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m, err := servers[1].Receive(ctx); err != nil || string(m.Data) != "neighbour" {
		t.Fatalf("the neighbour: %q %v", m.Data, err)
	}
}

// TestLeanCloseBothWays: a close on either side reaches the other at once
// (ABORT and close_notify), and nothing is left on the server.
func TestLeanCloseBothWays(t *testing.T) {
	s, clients, servers := leanPair(t, 2)
	clients[0].Close()
	servers[1].Close()
	for i, c := range []Conn{servers[0], clients[1]} {
		select {
		case <-c.Done():
		case <-time.After(3 * time.Second):
			t.Errorf("side %d did not see the other close", i)
		}
	}
	if peers, addrs, ufrags := leanState(s); peers != 0 || addrs != 0 || ufrags != 0 {
		t.Errorf("after closing: %d peers, %d addresses, %d ufrags", peers, addrs, ufrags)
	}
}

// TestLeanRebind: a binding request with the peer's credentials from a new
// address (the client's NAT rebound) is answered, but moves the peer only
// once a record that authenticates under its keys comes from there (path
// validation); a check with a wrong MAC, or a forged record, moves
// nothing; and no peer moves more than maxMoves times a minute.
func TestLeanRebind(t *testing.T) {
	s, clients, servers := leanPair(t, 1)
	p := servers[0].(*leanPeer)
	client := clients[0].(*leanPeer)
	p.mu.Lock()
	ufrag, pwd, remote, old := p.ufrag, p.pwd, p.remote.ufrag, p.rap
	p.mu.Unlock()
	moved, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer moved.Close()
	srv := p.sock.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	check := func(pass string) {
		m := stun.MustBuild(stun.TransactionID, stun.BindingRequest, stun.NewUsername(ufrag+":"+remote),
			stun.NewShortTermIntegrity(pass), stun.Fingerprint)
		moved.WriteToUDPAddrPort(m.Raw, srv)
	}
	where := func() netip.AddrPort {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.rap
	}
	check("wrong")
	time.Sleep(200 * time.Millisecond)
	if where() != old {
		t.Fatalf("a check with a wrong MAC moved the peer to %v", where())
	}
	check(pwd)
	moved.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 1500)
	n, _, err := moved.ReadFromUDPAddrPort(buf)
	if err != nil {
		t.Fatal(err)
	}
	var resp stun.Message
	resp.Raw = buf[:n]
	if err := resp.Decode(); err != nil || resp.Type != stun.BindingSuccess {
		t.Fatalf("answer %v %v", resp.Type, err)
	}
	if where() != old {
		t.Fatalf("a check alone moved the peer to %v", where())
	}
	to := moved.LocalAddr().(*net.UDPAddr).AddrPort()
	forger, _ := record.New(make([]byte, 16), make([]byte, 4), make([]byte, 16), make([]byte, 4))
	leanOf(s).sock.datagram(time.Now(), forger.Seal(nil, record.Alert, []byte{1, 99}), net.UDPAddrFromAddrPort(to), netip.Addr{})
	if where() != old {
		t.Fatalf("a forged record from the new address moved the peer to %v", where())
	}
	client.mu.Lock()
	rec := client.ciph.Seal(nil, record.Alert, []byte{1, 99}) // a warning alert: nothing to act on
	client.mu.Unlock()
	leanOf(s).sock.datagram(time.Now(), rec, net.UDPAddrFromAddrPort(to), netip.Addr{})
	if got := where(); got != to {
		t.Fatalf("the peer is at %v after a record from %v", got, to)
	}
	if st := s.DataPath(); st.Moves != 1 {
		t.Errorf("%d moves counted, want 1", st.Moves)
	}
	// Back and forth: the fifth move within a minute is refused.
	addrs := []netip.AddrPort{old, to}
	for i := range maxMoves {
		next := addrs[i%2]
		leanOf(s).sock.datagram(time.Now(), mustBuild(t, ufrag+":"+remote, pwd), net.UDPAddrFromAddrPort(next), netip.Addr{})
		client.mu.Lock()
		rec := client.ciph.Seal(nil, record.Alert, []byte{1, 99})
		client.mu.Unlock()
		leanOf(s).sock.datagram(time.Now(), rec, net.UDPAddrFromAddrPort(next), netip.Addr{})
	}
	if st := s.DataPath(); st.Moves != maxMoves || st.MovesRefused != 1 {
		t.Errorf("%d moves, %d refused; want %d and 1", st.Moves, st.MovesRefused, maxMoves)
	}
}

// mustBuild returns an authenticated ICE binding request of user.
func mustBuild(t *testing.T, user, pwd string) []byte {
	t.Helper()
	m, err := stun.Build(stun.TransactionID, stun.BindingRequest, stun.NewUsername(user),
		stun.NewShortTermIntegrity(pwd), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// TestLeanSpoofedCheck is issue 34's address takeover: a peer's own
// credentials in a check forged from another live peer's address (as an
// attacker on a network that lets it spoof sources would send, over a
// sweep of ports) move nothing and get no answer, and the victim keeps
// exchanging messages.
func TestLeanSpoofedCheck(t *testing.T) {
	s, clients, servers := leanPair(t, 2)
	victim, attacker := servers[0].(*leanPeer), servers[1].(*leanPeer)
	attacker.mu.Lock()
	user, pwd, home := attacker.ufrag+":"+attacker.remote.ufrag, attacker.pwd, attacker.rap
	attacker.mu.Unlock()
	victimAt := peerAddr(victim).AddrPort()
	check := mustBuild(t, user, pwd)
	quiet := startHonestRoom(t, clients[:1], servers[:1])
	time.Sleep(500 * time.Millisecond)
	quietMax, _, _ := quiet.end()
	room := startHonestRoom(t, clients[:1], servers[:1])
	// A sweep of every ephemeral port of the victim's address, its own
	// among them, at the speed of the reader.
	for port := uint16(32768); port <= 60999; port++ {
		leanOf(s).sock.datagram(time.Now(), check, net.UDPAddrFromAddrPort(netip.AddrPortFrom(victimAt.Addr(), port)), netip.Addr{})
	}
	leanOf(s).sock.datagram(time.Now(), check, net.UDPAddrFromAddrPort(victimAt), netip.Addr{})
	time.Sleep(500 * time.Millisecond)
	maxGap, _, drops := room.end()
	t.Logf("the victim's largest frame gap: %v quiet, %v through the sweep", quietMax, maxGap)
	if drops > 0 || maxGap > generous(quietMax) {
		t.Errorf("the victim's largest gap %v (quiet %v), dropped %v", maxGap, quietMax, drops > 0)
	}
	if got := peerAddr(victim).AddrPort(); got != victimAt {
		t.Fatalf("the victim moved to %v", got)
	}
	leanOf(s).sock.mu.RLock()
	holder := leanOf(s).sock.byAddr[victimAt]
	leanOf(s).sock.mu.RUnlock()
	if holder != victim {
		t.Fatalf("the victim's address routes to %p, not the victim %p", holder, victim)
	}
	if st := s.DataPath(); st.ChecksRefused == 0 {
		t.Errorf("no check refused: %+v", st)
	}
	// The attacker's records from the victim's address would go to the
	// victim, whose keys refuse them; and the attacker stays where it is.
	if got := peerAddr(attacker).AddrPort(); got != home {
		t.Errorf("the attacker moved to %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for i := range 20 {
		msg := fmt.Appendf(nil, "still mine %d", i)
		if err := clients[0].SendUnreliable(msg); err != nil {
			t.Fatal(err)
		}
		if err := victim.SendUnreliable(msg); err != nil {
			t.Fatal(err)
		}
		if m, err := victim.Receive(ctx); err != nil || string(m.Data) != string(msg) {
			t.Fatalf("the victim's server side got %q %v", m.Data, err)
		}
		if m, err := clients[0].Receive(ctx); err != nil || string(m.Data) != string(msg) {
			t.Fatalf("the victim got %q %v", m.Data, err)
		}
	}
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

// TestLeanCandidateRate: checks from a new address past the handshake
// get at most maxCandChecks answers a second, so forged ones neither cost
// much nor make the server a reflector.
func TestLeanCandidateRate(t *testing.T) {
	_, _, servers := leanPair(t, 1)
	p := servers[0].(*leanPeer)
	p.mu.Lock()
	user, pwd := p.ufrag+":"+p.remote.ufrag, p.pwd
	p.mu.Unlock()
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	srv := p.sock.conn.LocalAddr().(*net.UDPAddr).AddrPort()
	for range 40 {
		other.WriteToUDPAddrPort(mustBuild(t, user, pwd), srv)
	}
	answers := 0
	buf := make([]byte, 1500)
	for {
		other.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, _, err := other.ReadFromUDPAddrPort(buf); err != nil {
			break
		}
		answers++
	}
	// The 40 may straddle a second: two seconds' worth at most.
	if answers == 0 || answers > 2*maxCandChecks {
		t.Fatalf("%d of 40 checks from a new address answered, want 1 to %d", answers, 2*maxCandChecks)
	}
}

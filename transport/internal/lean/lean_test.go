//go:build !js

package lean

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/record"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// testServer is a lean Server with what a transport.Server adds around
// it, for the tests of this package: a queue of the connections that
// opened, for Accept, and signaling in-process (post answers an offer as
// the HTTP handler would, with no HTTP between).
type testServer struct {
	*Server
	accept chan *Peer
}

// newTestServer returns a lean server on udpAddr that advertises public
// (when set); it closes when the test ends.
func newTestServer(t testing.TB, udpAddr string, public []string) *testServer {
	t.Helper()
	return newTestServerWith(t, udpAddr, ServerConfig{PublicIPs: public})
}

// newTestServerWith is newTestServer with cfg's addresses, listener
// (ICE-TCP's) and limits.
func newTestServerWith(t testing.TB, udpAddr string, cfg ServerConfig) *testServer {
	t.Helper()
	return newTestServerOn(t, udpAddr, cfg, 1)
}

// newTestServerOn is newTestServerWith on n sockets (shards).
func newTestServerOn(t testing.TB, udpAddr string, cfg ServerConfig, n int) *testServer {
	t.Helper()
	socks, err := Listen(udpAddr, n)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{accept: make(chan *Peer, 128)}
	ts.Server, err = NewServer(socks, ServerConfig{
		Limits: conn.WithDefaults(cfg.Limits), Logger: slog.New(slog.DiscardHandler), PublicIPs: cfg.PublicIPs, TCP: cfg.TCP, Network: cfg.Network,
		Opened: func(p *Peer, refuse func()) {
			select {
			case ts.accept <- p:
			default:
				refuse()
			}
		},
	})
	if err != nil {
		for _, c := range socks {
			c.Close()
		}
		t.Fatal(err)
	}
	t.Cleanup(ts.Close)
	return ts
}

// post answers an offer, as the server's signaling does.
func (ts *testServer) post(ctx context.Context, offer string) (string, error) {
	answer, code, err := ts.Answer(ctx, offer, nil, func() {})
	if err != nil {
		return "", fmt.Errorf("signaling refused: %d: %w", code, err)
	}
	return answer, nil
}

// dialConfig is what a client of ts dials with: the default limits, on
// the shared socket when shared is set.
func (ts *testServer) dialConfig(shared bool) DialConfig {
	return DialConfig{Limits: conn.WithDefaults(conn.Limits{}), SharedSocket: shared, Loopback: true, Post: ts.post}
}

// Accept returns the next connection whose channels are both open.
func (ts *testServer) Accept(ctx context.Context) (*Peer, error) {
	select {
	case p := <-ts.accept:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// impairedServer returns a lean server on 127.0.0.1 that advertises
// 127.0.0.2, where a relay with link each way (seeded with seed) forwards
// to it; both close when the test ends.
func impairedServer(t testing.TB, link udpimpair.Link, seed uint64) (*testServer, *udpimpair.Relay) {
	t.Helper()
	s := newTestServer(t, "127.0.0.1:0", []string{"127.0.0.2"})
	port := s.UDPAddr().(*net.UDPAddr).AddrPort().Port()
	relay, err := udpimpair.New(fmt.Sprintf("127.0.0.2:%d", port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), link, link, seed)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	return s, relay
}

// leanPair returns a lean server with n lean clients connected, and the
// server's side of each.
func leanPair(t *testing.T, n int) (*testServer, []*Peer, []*Peer) {
	t.Helper()
	return leanPairWith(t, n, false)
}

// leanPairWith is leanPair with the clients on the shared socket when
// shared is set.
func leanPairWith(t testing.TB, n int, shared bool) (*testServer, []*Peer, []*Peer) {
	t.Helper()
	s := newTestServer(t, "127.0.0.1:0", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var clients, servers []*Peer
	for range n {
		c, sc := dialAccept(t, ctx, s, shared)
		clients, servers = append(clients, c), append(servers, sc)
	}
	return s, clients, servers
}

// dialAccept dials s (on the shared socket when shared is set) and
// returns the client and the server's side of it; the client closes when
// the test ends.
func dialAccept(t testing.TB, ctx context.Context, s *testServer, shared bool) (*Peer, *Peer) {
	t.Helper()
	c, err := Dial(ctx, s.dialConfig(shared))
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
func peerAddr(p *Peer) netip.AddrPort {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rap
}

// leanState counts what the server holds: peers, and the addresses and
// ufrags its socket routes by.
func leanState(s *testServer) (peers, addrs, ufrags int) {
	s.ep.mu.Lock()
	peers = len(s.ep.peers)
	s.ep.mu.Unlock()
	s.sock.mu.RLock()
	addrs, ufrags = len(s.sock.byAddr), s.sock.ufrags.len()
	s.sock.mu.RUnlock()
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
	victim := servers[0]
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
		s.sock.datagram(time.Now(), forger.Seal(nil, record.ApplicationData, []byte("forged")), from, netip.Addr{})
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
	flooder := clients[0]
	from := peerAddr(servers[0])
	// The flooder's own keys: these are valid records, at a rate no game
	// sends.
	start := time.Now()
	for time.Since(start) < 10*time.Second && !servers[0].IsDone() {
		flooder.mu.Lock()
		rec := flooder.ciph.Seal(nil, record.Alert, []byte{1, 99})
		flooder.mu.Unlock()
		s.sock.datagram(time.Now(), rec, from, netip.Addr{})
	}
	if err := servers[0].Err(); !errors.Is(err, errFlood) {
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
	for i, c := range []*Peer{servers[0], clients[1]} {
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
	p := servers[0]
	client := clients[0]
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
	s.sock.datagram(time.Now(), forger.Seal(nil, record.Alert, []byte{1, 99}), to, netip.Addr{})
	if where() != old {
		t.Fatalf("a forged record from the new address moved the peer to %v", where())
	}
	client.mu.Lock()
	rec := client.ciph.Seal(nil, record.Alert, []byte{1, 99}) // a warning alert: nothing to act on
	client.mu.Unlock()
	s.sock.datagram(time.Now(), rec, to, netip.Addr{})
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
		s.sock.datagram(time.Now(), mustBuild(t, ufrag+":"+remote, pwd), next, netip.Addr{})
		client.mu.Lock()
		rec := client.ciph.Seal(nil, record.Alert, []byte{1, 99})
		client.mu.Unlock()
		s.sock.datagram(time.Now(), rec, next, netip.Addr{})
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
	victim, attacker := servers[0], servers[1]
	attacker.mu.Lock()
	user, pwd, home := attacker.ufrag+":"+attacker.remote.ufrag, attacker.pwd, attacker.rap
	attacker.mu.Unlock()
	victimAt := peerAddr(victim)
	check := mustBuild(t, user, pwd)
	quiet := startHonestRoom(t, clients[:1], servers[:1])
	time.Sleep(500 * time.Millisecond)
	quietMax, _, _ := quiet.end()
	room := startHonestRoom(t, clients[:1], servers[:1])
	// A sweep of every ephemeral port of the victim's address, its own
	// among them, at the speed of the reader.
	for port := uint16(32768); port <= 60999; port++ {
		s.sock.datagram(time.Now(), check, netip.AddrPortFrom(victimAt.Addr(), port), netip.Addr{})
	}
	s.sock.datagram(time.Now(), check, victimAt, netip.Addr{})
	time.Sleep(500 * time.Millisecond)
	maxGap, _, drops := room.end()
	t.Logf("the victim's largest frame gap: %v quiet, %v through the sweep", quietMax, maxGap)
	if drops > 0 || maxGap > generous(quietMax) {
		t.Errorf("the victim's largest gap %v (quiet %v), dropped %v", maxGap, quietMax, drops > 0)
	}
	if got := peerAddr(victim); got != victimAt {
		t.Fatalf("the victim moved to %v", got)
	}
	s.sock.mu.RLock()
	holder := s.sock.byAddr[victimAt]
	s.sock.mu.RUnlock()
	if holder != victim {
		t.Fatalf("the victim's address routes to %p, not the victim %p", holder, victim)
	}
	if st := s.DataPath(); st.ChecksRefused == 0 {
		t.Errorf("no check refused: %+v", st)
	}
	// The attacker's records from the victim's address would go to the
	// victim, whose keys refuse them; and the attacker stays where it is.
	if got := peerAddr(attacker); got != home {
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

// TestLeanCandidateRate: checks from a new address past the handshake
// get at most maxCandChecks answers a second, so forged ones neither cost
// much nor make the server a reflector.
func TestLeanCandidateRate(t *testing.T) {
	_, _, servers := leanPair(t, 1)
	p := servers[0]
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

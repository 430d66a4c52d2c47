//go:build linux

package lean

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/record"
	"golang.org/x/sys/unix"
)

// sharedPair returns a lean server with n lean clients on the shared
// socket, and the server's side of each.
func sharedPair(t testing.TB, n int) (*testServer, []*Peer, []*Peer) {
	t.Helper()
	return leanPairWith(t, n, true)
}

func sharedClients(sock *socket) int {
	sock.mu.RLock()
	defer sock.mu.RUnlock()
	return len(sock.byLocal)
}

// exchange sends each client's index both ways on both channels and
// checks that each side gets its own.
func exchange(t *testing.T, clients, servers []*Peer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range clients {
		msg := []byte(fmt.Sprint("to server ", i))
		if err := clients[i].SendReliable(msg); err != nil {
			t.Fatal(err)
		}
		if err := servers[i].SendReliable([]byte(fmt.Sprint("to client ", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range clients {
		for _, side := range []struct {
			c    *Peer
			want string
		}{{servers[i], fmt.Sprint("to server ", i)}, {clients[i], fmt.Sprint("to client ", i)}} {
			m, err := side.c.Receive(ctx)
			if err != nil {
				t.Fatalf("client %d: %v", i, err)
			}
			if string(m.Data) != side.want {
				t.Fatalf("client %d: got %q, want %q", i, m.Data, side.want)
			}
		}
	}
	// The unreliable channel, a few tries (nothing is lost on loopback,
	// but nothing promises it either).
	for i := range clients {
		want := fmt.Sprint("u", i)
		got := false
		for try := 0; try < 5 && !got; try++ {
			clients[i].SendUnreliable([]byte(want))
			rctx, rcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			m, err := servers[i].Receive(rctx)
			rcancel()
			if err == nil && m.Channel == conn.Unreliable && string(m.Data) == want {
				got = true
			}
		}
		if !got {
			t.Fatalf("client %d: no unreliable message", i)
		}
	}
}

// TestSharedSocket: clients on the shared socket each reach the server
// from an address of their own, on the one socket's port; each gets its
// own messages on both channels; closing some leaves the others going and
// frees their addresses.
func TestSharedSocket(t *testing.T) {
	const n = 24
	_, clients, servers := sharedPair(t, n)
	sock := clients[0].sock
	port := sock.conn.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	seen := map[netip.Addr]bool{}
	for i, c := range clients {
		p := c
		if p.sock != sock || !p.sock.shared {
			t.Fatalf("client %d is not on the shared socket", i)
		}
		ap := peerAddr(servers[i])
		a := netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
		if a.Addr() != p.local || a.Port() != port {
			t.Errorf("the server knows client %d as %v, want %v:%d", i, a, p.local, port)
		}
		if !a.Addr().IsLoopback() || a.Addr() == netip.MustParseAddr("127.0.0.1") || seen[a.Addr()] {
			t.Errorf("client %d's address %v: want a loopback address of its own", i, a.Addr())
		}
		seen[a.Addr()] = true
	}
	exchange(t, clients, servers)

	before := sharedClients(sock)
	for i := 0; i < n; i += 2 {
		clients[i].Close()
	}
	if got := sharedClients(sock); got != before-n/2 {
		t.Errorf("%d clients on the shared socket after closing %d of %d, want %d", got, n/2, before, before-n/2)
	}
	var left, leftSrv []*Peer
	for i := range clients {
		if i%2 == 0 {
			select {
			case <-servers[i].Done():
			case <-time.After(3 * time.Second):
				t.Errorf("the server did not see client %d close", i)
			}
			continue
		}
		left, leftSrv = append(left, clients[i]), append(leftSrv, servers[i])
	}
	exchange(t, left, leftSrv)
}

// TestSharedStrangers sends a shared socket what strangers could, to a
// client's address and to addresses no client holds: datagrams of every
// kind, a binding response, records forged for the client. None creates
// state or gets an answer, and the client's connection goes on.
func TestSharedStrangers(t *testing.T) {
	_, clients, servers := sharedPair(t, 1)
	p := clients[0]
	sock := p.sock
	port := sock.conn.LocalAddr().(*net.UDPAddr).AddrPort().Port()
	stranger, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	before := sharedClients(sock)
	forger, err := record.New(make([]byte, 16), make([]byte, 4), make([]byte, 16), make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	bindOK := stun.MustBuild(stun.TransactionID, stun.BindingSuccess, stun.Fingerprint)
	junk := [][]byte{
		{0}, {1, 2, 3}, bindOK.Raw, bytes.Repeat([]byte{0xff}, 1200),
		{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
		forger.Seal(nil, record.ApplicationData, []byte("forged")),
		forger.Seal(nil, record.Alert, []byte{1, 0}),
	}
	for _, to := range []netip.Addr{p.local, netip.MustParseAddr("127.200.0.1"), netip.MustParseAddr("127.0.0.1")} {
		for _, b := range junk {
			for range 20 {
				stranger.WriteToUDPAddrPort(b, netip.AddrPortFrom(to, port))
			}
		}
	}
	stranger.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := stranger.ReadFromUDPAddrPort(make([]byte, 1500)); err == nil {
		t.Errorf("the shared socket answered a stranger (%d bytes)", n)
	}
	if got := sharedClients(sock); got != before {
		t.Errorf("%d clients on the shared socket, %d before", got, before)
	}
	select {
	case <-p.Done():
		t.Fatalf("the client closed: %v", p.Err())
	default:
	}
	exchange(t, clients, servers)
}

// TestSharedAddresses: local addresses are handed out in turn, skip those
// still held, and wrap before 127.255.255.255.
func TestSharedAddresses(t *testing.T) {
	s := &socket{shared: true, byLocal: map[netip.Addr]*Peer{}}
	a, b := &Peer{}, &Peer{}
	if err := s.attach(a); err != nil || a.local != netip.MustParseAddr("127.1.0.1") || a.oob == nil {
		t.Fatalf("first: %v %v", a.local, err)
	}
	s.next = 0 // as after a wrap: 127.1.0.1 is held, so b gets the next
	if err := s.attach(b); err != nil || b.local != netip.MustParseAddr("127.1.0.2") {
		t.Fatalf("second: %v %v", b.local, err)
	}
	c := &Peer{}
	s.next = sharedCount - 1
	if err := s.attach(c); err != nil || c.local != netip.MustParseAddr("127.255.255.254") {
		t.Fatalf("last: %v %v", c.local, err)
	}
	d := &Peer{}
	if err := s.attach(d); err != nil || d.local != netip.MustParseAddr("127.1.0.3") {
		t.Fatalf("after the last: %v %v", d.local, err)
	}
	s.forget(a, peerKeys{local: a.local, ufrag: a.ufrag, rap: a.rap, cand: a.cand})
	if s.byLocal[a.local] != nil || len(s.byLocal) != 3 {
		t.Fatalf("forget left %v", s.byLocal)
	}
}

// cmsg builds one control message as the kernel lays it out.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	n := uint64(unix.CmsgLen(len(data)))
	if unix.SizeofCmsghdr == 16 {
		binary.NativeEndian.PutUint64(b, n)
		binary.NativeEndian.PutUint32(b[8:], uint32(level))
		binary.NativeEndian.PutUint32(b[12:], uint32(typ))
	} else {
		binary.NativeEndian.PutUint32(b, uint32(n))
		binary.NativeEndian.PutUint32(b[4:], uint32(level))
		binary.NativeEndian.PutUint32(b[8:], uint32(typ))
	}
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func TestPktinfoDst(t *testing.T) {
	info := []byte{1, 0, 0, 0, 127, 0, 0, 1, 127, 1, 2, 3} // ifindex, spec_dst, addr
	good := cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, info)
	other := cmsg(unix.SOL_SOCKET, unix.SO_TIMESTAMP, make([]byte, 16))
	for _, tc := range []struct {
		name string
		oob  []byte
		want string
	}{
		{"pktinfo", good, "127.1.2.3"},
		{"after another", append(bytes.Clone(other), good...), "127.1.2.3"},
		{"none", nil, ""},
		{"another only", other, ""},
		{"short data", cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, info[:8]), ""},
		{"without its padding", good[:unix.CmsgLen(len(info))], "127.1.2.3"},
		{"truncated", good[:len(good)-8], ""},
		{"length past the end", append(bytes.Clone(good[:8]), 0xff), ""},
		{"zero length", make([]byte, 32), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, ok := pktinfoDst(tc.oob)
			if tc.want == "" {
				if ok {
					t.Fatalf("got %v, want none", a)
				}
				return
			}
			if !ok || a != netip.MustParseAddr(tc.want) {
				t.Fatalf("got %v %v, want %s", a, ok, tc.want)
			}
		})
	}
}

// FuzzSharedDatagram feeds the shared socket, with two clients on it,
// what could reach it: the datagram to the victim's address from its
// server and from a stranger, the same sealed with the victim's keys, and
// to an address no client holds; and the bytes as a control message.
// Nothing panics, and the other client is unaffected.
func FuzzSharedDatagram(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{23, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 9, 0, 4, 1, 2, 3, 4})
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add([]byte{0x13, 0x88, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 17, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 53, 'x'})
	f.Add(cmsg(unix.IPPROTO_IP, unix.IP_PKTINFO, []byte{1, 0, 0, 0, 127, 0, 0, 1, 127, 1, 2, 3}))
	for _, b := range captured(f) {
		f.Add(b)
	}
	_, clients, _ := sharedPair(f, 2)
	victim, other := clients[0], clients[1]
	sock := victim.sock
	server := peerAddr(victim)
	stranger := netip.MustParseAddrPort("127.0.0.9:9")
	f.Fuzz(func(t *testing.T, b []byte) {
		pktinfoDst(b)
		if len(b) == 0 {
			return
		}
		now := time.Now()
		sock.datagram(now, bytes.Clone(b), server, victim.local)
		sock.datagram(now, bytes.Clone(b), stranger, victim.local)
		sock.datagram(now, bytes.Clone(b), server, netip.MustParseAddr("127.200.0.1"))
		if sealed := sealedBy(victim, b); sealed != nil {
			sock.datagram(now, sealed, server, victim.local)
		}
		for {
			if _, ok := victim.TryReceive(); !ok {
				break
			}
		}
		if other.IsDone() {
			t.Fatalf("another client closed: %v (datagram %x)", other.Err(), b)
		}
	})
}

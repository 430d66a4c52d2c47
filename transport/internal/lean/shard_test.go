//go:build !js

package lean

import (
	"context"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/internal/record"
)

// TestShards: a server on 1, 2 and 4 sockets of one port (SO_REUSEPORT)
// serves clients on their own sockets and on the shared one alike: every
// peer ends on the shard of the socket the kernel hashed it to (its
// reader and its flusher are that shard's), the peers spread over the
// shards, messages go both ways on both channels, and closing the
// clients leaves no peer in any shard's tables.
func TestShards(t *testing.T) {
	for _, n := range []int{1, 2, 4} {
		t.Run(string(rune('0'+n)), func(t *testing.T) {
			s := newTestServerOn(t, "127.0.0.1:0", ServerConfig{}, n)
			if !reusePortWorks {
				n = 1 // one socket a port here
			}
			if s.Sockets() != n {
				t.Fatalf("%d sockets, want %d", s.Sockets(), n)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var clients, servers []*Peer
			for i := range 16 {
				c, sc := dialAccept(t, ctx, s, i%2 == 1 && runtime.GOOS == "linux")
				clients, servers = append(clients, c), append(servers, sc)
			}
			used := map[*endpoint]bool{}
			for i, p := range servers {
				p.mu.Lock()
				sock, rap := p.sock, p.rap
				p.mu.Unlock()
				if p.home() != sock.ep {
					t.Errorf("peer %d reads on one shard's socket and flushes on another's", i)
				}
				sock.mu.RLock()
				at := sock.byAddr[rap]
				sock.mu.RUnlock()
				if at != p {
					t.Errorf("peer %d is not in its socket's table", i)
				}
				used[sock.ep] = true
			}
			if n > 1 && len(used) < 2 {
				t.Errorf("16 peers all on one shard of %d", n)
			}
			exchange(t, clients, servers)
			if st := s.DataPath(); st.Datagrams == 0 {
				t.Error("no datagram counted over the shards")
			}
			for _, c := range clients {
				c.Close()
			}
			waitFor(t, func() bool {
				for _, sh := range s.shards {
					sh.ep.mu.Lock()
					peers := len(sh.ep.peers)
					sh.ep.mu.Unlock()
					sh.sock.mu.RLock()
					addrs := len(sh.sock.byAddr) + len(sh.sock.byCand)
					sh.sock.mu.RUnlock()
					if peers+addrs > 0 {
						return false
					}
				}
				return s.ufrags.len() == 0
			})
		})
	}
}

// TestShardMove: a peer whose new address the kernel hashes to another
// shard's socket moves there, as on one socket, once a record that
// authenticates comes from it; the old shard's table forgets it, and it
// moves back the same way.
func TestShardMove(t *testing.T) {
	if !reusePortWorks {
		t.Skip("one socket a port here")
	}
	s := newTestServerOn(t, "127.0.0.1:0", ServerConfig{}, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, p := dialAccept(t, ctx, s, false)
	p.mu.Lock()
	home, old, ufrag, pwd, remote := p.sock, p.rap, p.ufrag, p.pwd, p.remote.ufrag
	p.mu.Unlock()
	other := s.shards[0].sock
	if other == home {
		other = s.shards[1].sock
	}
	alert := func() []byte {
		client.mu.Lock()
		defer client.mu.Unlock()
		return client.ciph.Seal(nil, record.Alert, []byte{1, 99}) // a warning: nothing to act on
	}
	at := func() (*socket, netip.AddrPort) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.sock, p.rap
	}
	in := func(sock *socket, ap netip.AddrPort) bool {
		sock.mu.RLock()
		defer sock.mu.RUnlock()
		return sock.byAddr[ap] == p
	}
	to := netip.MustParseAddrPort("127.0.0.1:9")
	other.datagram(time.Now(), mustBuild(t, ufrag+":"+remote, pwd), to, netip.Addr{})
	if sock, ap := at(); sock != home || ap != old {
		t.Fatal("a check alone moved the peer")
	}
	other.datagram(time.Now(), alert(), to, netip.Addr{})
	if sock, ap := at(); sock != other || ap != to || !in(other, to) || in(home, old) {
		t.Fatalf("after a record from the other shard: on its socket %v, at %v; in its table %v, in the old %v",
			sock == other, ap, in(other, to), in(home, old))
	}
	home.datagram(time.Now(), mustBuild(t, ufrag+":"+remote, pwd), old, netip.Addr{})
	home.datagram(time.Now(), alert(), old, netip.Addr{})
	if sock, ap := at(); sock != home || ap != old || in(other, to) {
		t.Fatalf("not back: on its first socket %v, at %v", sock == home, ap)
	}
	exchange(t, []*Peer{client}, []*Peer{p})
}

// TestListenTaken: a port another server holds is refused, with one
// socket or several, as it always was: SO_REUSEPORT never lets a second
// server share the first's port (even one on several sockets itself).
func TestListenTaken(t *testing.T) {
	for _, first := range []int{1, 3} {
		socks, err := Listen("127.0.0.1:0", first)
		if err != nil {
			t.Fatal(err)
		}
		at := socks[0].LocalAddr().String()
		for _, n := range []int{1, 2} {
			if again, err := Listen(at, n); err == nil {
				for _, c := range again {
					c.Close()
				}
				t.Errorf("a server on %d sockets took the port of one on %d", n, first)
			}
		}
		for _, c := range socks {
			c.Close()
		}
	}
}

//go:build !js

package lean

import (
	"bytes"
	"context"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/record"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// FuzzLeanDatagram feeds a lean server's socket, with one peer connected,
// what its address could send: the raw datagram (STUN, DTLS records of
// any type and epoch, anything else), and the same bytes sealed as an
// application record with the peer's own keys, so that they reach SCTP
// and the channels. Nothing panics, and another peer's connection is
// unaffected.
func FuzzLeanDatagram(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 0x21, 0x12, 0xa4, 0x42, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{23, 0xfe, 0xfd, 0, 1, 0, 0, 0, 0, 0, 9, 0, 4, 1, 2, 3, 4})
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Add([]byte{0x13, 0x88, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0, 0, 0, 3, 0, 17, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 53, 'x'})
	for _, b := range captured(f) {
		f.Add(b)
	}
	s := newTestServer(f, "127.0.0.1:0", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dial := func() (*Peer, *Peer) {
		c, err := Dial(ctx, s.dialConfig(false))
		if err != nil {
			f.Fatal(err)
		}
		sc, err := s.Accept(ctx)
		if err != nil {
			f.Fatal(err)
		}
		return c, sc
	}
	victim, victimSrv := dial()
	other, otherSrv := dial()
	defer victim.Close()
	defer other.Close()
	sock := s.sock
	from := func(*Peer) netip.AddrPort { return peerAddr(victimSrv) }
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		now := time.Now()
		sock.datagram(now, bytes.Clone(b), from(victim), netip.Addr{})
		sock.datagram(now, bytes.Clone(b), netip.MustParseAddrPort("127.0.0.9:9"), netip.Addr{})
		if sealed := sealedBy(victim, b); sealed != nil {
			sock.datagram(now, sealed, from(victim), netip.Addr{})
		}
		// And straight to the channels, as SCTP delivers a message.
		vp := victimSrv
		vp.mu.Lock()
		vp.deliver(time.Now(), uint16(b[0]%3), uint32(b[0]), b[1:])
		vp.fail = nil
		vp.mu.Unlock()
		var m stun.Message
		m.Raw = b
		if m.Decode() == nil {
			sock.stunPacket(b, netip.MustParseAddrPort("127.0.0.9:9"), nil)
		}
		for {
			if _, ok := victimSrv.TryReceive(); !ok {
				break
			}
		}
		if otherSrv.IsDone() {
			t.Fatalf("another peer closed: %v (datagram %x)", otherSrv.Err(), b)
		}
	})
}

// captured returns the datagrams of one real lean session, both ways, as
// they crossed the wire: the ICE check and its answer, the DTLS flights,
// and the sealed records of SCTP's setup, of messages on both channels
// and of the close. They seed the fuzz targets of what a socket reads.
func captured(t testing.TB) [][]byte {
	var mu sync.Mutex
	var got [][]byte
	tap := udpimpair.Link{Drop: func(b []byte) bool {
		mu.Lock()
		got = append(got, bytes.Clone(b))
		mu.Unlock()
		return false
	}}
	s, _ := impairedServer(t, tap, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, sc := dialAccept(t, ctx, s, false)
	for _, send := range []func([]byte) error{c.SendReliable, c.SendUnreliable, sc.SendReliable, sc.SendUnreliable} {
		if err := send([]byte("captured")); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []*Peer{sc, sc, c, c} {
		if _, err := r.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	select {
	case <-sc.Done():
	case <-ctx.Done():
		t.Fatal("the server's side did not see the close")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 8 {
		t.Fatalf("captured %d datagrams of a whole session", len(got))
	}
	return slices.Clone(got)
}

// sealedBy seals b as an application record with p's keys (as p's
// peer would receive it from p), or returns nil before p has keys.
func sealedBy(p *Peer, b []byte) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ciph == nil {
		return nil
	}
	return p.ciph.Seal(nil, record.ApplicationData, b)
}

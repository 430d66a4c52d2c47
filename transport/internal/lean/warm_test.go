//go:build !js

package lean

import (
	"context"
	"testing"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/transport/internal/record"
	"github.com/tongbu/tongbu/transport/internal/sctp"
)

// TestHotFields: what a datagram touches stays in the Peer's first cache
// lines, before hotEnd, which warm asks for; a field added among them,
// or one of them moved below, fails here.
func TestHotFields(t *testing.T) {
	var p Peer
	end := unsafe.Offsetof(p.hotEnd)
	if end > 8*64 {
		t.Errorf("the hot fields end at %d bytes: more than 8 cache lines", end)
	}
	for name, off := range map[string]uintptr{
		"ep": unsafe.Offsetof(p.ep), "mu": unsafe.Offsetof(p.mu), "phase": unsafe.Offsetof(p.phase),
		"rap": unsafe.Offsetof(p.rap), "ciph": unsafe.Offsetof(p.ciph), "assoc": unsafe.Offsetof(p.assoc),
		"keyed": unsafe.Offsetof(p.keyed), "taken": unsafe.Offsetof(p.taken), "rd": unsafe.Offsetof(p.rd),
		"w": unsafe.Offsetof(p.w), "timer": unsafe.Offsetof(p.timer), "handler": unsafe.Offsetof(p.handler),
		"handleMu": unsafe.Offsetof(p.handleMu), "inboxed": unsafe.Offsetof(p.inboxed),
	} {
		if off >= end {
			t.Errorf("%s is at %d, past the hot fields' end (%d)", name, off, end)
		}
	}
}

// TestWarmAhead: the hints go to peers before and after their keys,
// absent ones (nil) are skipped, at every place in lists of every
// length, and nothing they ask for changes a peer.
func TestWarmAhead(t *testing.T) {
	c, err := record.New(make([]byte, 16), make([]byte, 4), make([]byte, 16), make([]byte, 4))
	if err != nil {
		t.Fatal(err)
	}
	keyedPeer := &Peer{phase: phaseOpen}
	keyedPeer.keyed.Store(newKeyed(c, sctp.New(sctp.Config{}, time.Now())))
	for n := range 3*warmDistance + 3 {
		list := make([]*Peer, n)
		for i := range list {
			switch i % 3 {
			case 0:
				list[i] = keyedPeer
			case 1:
				list[i] = &Peer{phase: phaseDTLS} // no keys yet
			}
		}
		for i := range list {
			warmAhead(list, i, i%2 == 0)
		}
	}
	if keyedPeer.phase != phaseOpen || keyedPeer.keyed.Load() == nil {
		t.Fatal("a warm hint changed the peer")
	}
}

// TestWarm: Warm (transport.Warmer) may be called on a peer before it has
// keys, while it sends from another goroutine, and after it closed; it
// changes nothing, and every message still arrives in order.
func TestWarm(t *testing.T) {
	(&Peer{phase: phaseDTLS}).Warm() // no keys yet
	_, clients, servers := leanPair(t, 1)
	server, client := servers[0], clients[0]
	const n = 200
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			server.Warm()
			if err := server.SendReliable([]byte{byte(i)}); err != nil {
				t.Errorf("send %d: %v", i, err)
				return
			}
		}
	}()
	for range 1000 {
		server.Warm() // beside the sends
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		m, err := client.Receive(ctx)
		if err != nil || len(m.Data) != 1 || m.Data[0] != byte(i) {
			t.Fatalf("message %d: %v %v", i, m.Data, err)
		}
	}
	<-done
	server.Close()
	server.Warm()
}

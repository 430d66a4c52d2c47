//go:build !js

package lean

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/internal/conn"
)

// TestNoAllocPerMessage sends messages both ways between a lean client
// and server (in-process sockets, the real data path: recvmmsg, records,
// SCTP, the handler, the flusher, sendmmsg) and counts the heap
// allocations a round trip costs, both sides together: none.
func TestNoAllocPerMessage(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, ch := range []conn.Channel{conn.Unreliable, conn.Reliable} {
		t.Run(ch.String(), func(t *testing.T) {
			_, clients, servers := leanPair(t, 1)
			c, s := clients[0], servers[0]
			var atServer, atClient atomic.Uint64
			s.Handle(func(m conn.Message) {
				atServer.Add(1)
				if ch == conn.Unreliable {
					s.SendUnreliable(m.Data)
				} else {
					s.SendReliable(m.Data)
				}
			})
			back := make(chan struct{}, 1)
			c.Handle(func(conn.Message) {
				atClient.Add(1)
				select {
				case back <- struct{}{}:
				default:
				}
			})
			msg := make([]byte, 200)
			timer := time.NewTimer(time.Hour)
			round := func() {
				if ch == conn.Unreliable {
					c.SendUnreliable(msg)
				} else {
					c.SendReliable(msg)
				}
				timer.Reset(time.Second) // a lost datagram: go on
				select {
				case <-back:
				case <-timer.C:
				}
			}
			for range 200 { // warm up: buffers grow to their size
				round()
			}
			got := testing.AllocsPerRun(500, round)
			if got != 0 {
				t.Fatalf("%v allocations a round trip (%d echoes of %d)", got, atClient.Load(), atServer.Load())
			}
		})
	}
}

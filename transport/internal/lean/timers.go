//go:build !js

package lean

import "sync/atomic"

// timerTable holds the next association deadline of each of an
// endpoint's peers densely, in chunks that never move, so that the sweep
// every sweepEvery reads a few contiguous kilobytes rather than every
// peer's struct. A peer stores its deadline in its slot (Peer.timer);
// the endpoint's mu guards the rest.
type timerTable struct {
	chunks []*timerChunk
	free   []int32
	used   int32 // slots handed out so far: the sweep reads up to here
}

const timerChunkSize = 256

type timerChunk struct {
	at   [timerChunkSize]atomic.Int64 // unix nanoseconds; 0: none
	peer [timerChunkSize]*Peer
}

// add gives p a slot and points p's timer at it.
func (t *timerTable) add(p *Peer) int32 {
	var slot int32
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		slot = t.used
		t.used++
		if int(slot)/timerChunkSize == len(t.chunks) {
			t.chunks = append(t.chunks, new(timerChunk))
		}
	}
	c := t.chunks[slot/timerChunkSize]
	i := slot % timerChunkSize
	c.peer[i] = p
	c.at[i].Store(p.timerAt())
	p.timer.Store(&c.at[i])
	return slot
}

// remove frees slot.
func (t *timerTable) remove(slot int32) {
	c := t.chunks[slot/timerChunkSize]
	i := slot % timerChunkSize
	c.peer[i] = nil
	c.at[i].Store(0)
	t.free = append(t.free, slot)
}

// due appends the peers whose deadline is at or before ns.
func (t *timerTable) due(ns int64, out []*Peer) []*Peer {
	for k, c := range t.chunks {
		n := min(timerChunkSize, int(t.used)-k*timerChunkSize)
		for i := range n {
			if d := c.at[i].Load(); d != 0 && d <= ns && c.peer[i] != nil {
				out = append(out, c.peer[i])
			}
		}
	}
	return out
}

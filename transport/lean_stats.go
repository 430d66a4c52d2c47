//go:build !js

package transport

import (
	"sync/atomic"
	"time"
)

// DataPathStats describes the work of the lean stack's reader and the
// protection it applied: how long each datagram took to handle (every
// protocol of its peer, and the Handler the message went to), the most
// chunks one peer's SCTP held for reassembly, and the address moves made
// and refused. A server on the pion stack reports zeros.
type DataPathStats struct {
	// Datagrams counts the datagrams the reader handled.
	Datagrams uint64
	// DatagramBuckets[i] counts the datagrams handled in at most
	// DatagramBounds[i]; the last counts the rest.
	DatagramBuckets []uint64
	// DatagramTime is the time spent on all of them.
	DatagramTime time.Duration
	// MaxDatagram is the longest one datagram took.
	MaxDatagram time.Duration
	// HeldChunksMax is the most chunks one peer's SCTP association held
	// for reassembly or order at once (bounded per association).
	HeldChunksMax int
	// Moves counts peers that moved to a new address they proved theirs;
	// MovesRefused the proven moves refused (too many in a minute, or the
	// address taken meanwhile); ChecksRefused the authenticated ICE
	// checks from an address another peer holds (forged to take it).
	Moves, MovesRefused, ChecksRefused uint64
	// FlushesDeferred counts the times the flusher found a peer busy and
	// left it to be queued again, rather than wait for it.
	FlushesDeferred uint64
}

// DatagramBounds are the upper bounds of DataPathStats.DatagramBuckets.
var DatagramBounds = []time.Duration{
	time.Microsecond, 2 * time.Microsecond, 5 * time.Microsecond, 10 * time.Microsecond,
	20 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 200 * time.Microsecond,
	500 * time.Microsecond, time.Millisecond, 5 * time.Millisecond,
}

// dataPathCounters are an endpoint's DataPathStats as they are counted.
type dataPathCounters struct {
	datagrams       atomic.Uint64
	buckets         [12]atomic.Uint64 // len(DatagramBounds)+1
	nanos           atomic.Int64
	maxNanos        atomic.Int64
	heldMax         atomic.Int64
	moves           atomic.Uint64
	movesRefused    atomic.Uint64
	checksRefused   atomic.Uint64
	flushesDeferred atomic.Uint64
}

// datagram counts one datagram handled in d; only the reader calls it.
func (c *dataPathCounters) datagram(d time.Duration) {
	c.datagrams.Add(1)
	c.nanos.Add(int64(d))
	i := 0
	for i < len(DatagramBounds) && d > DatagramBounds[i] {
		i++
	}
	c.buckets[i].Add(1)
	if int64(d) > c.maxNanos.Load() {
		c.maxNanos.Store(int64(d))
	}
}

// held notes that a peer holds n chunks.
func (c *dataPathCounters) held(n int) {
	for {
		m := c.heldMax.Load()
		if int64(n) <= m || c.heldMax.CompareAndSwap(m, int64(n)) {
			return
		}
	}
}

func (c *dataPathCounters) snapshot() DataPathStats {
	s := DataPathStats{
		Datagrams:       c.datagrams.Load(),
		DatagramBuckets: make([]uint64, len(c.buckets)),
		DatagramTime:    time.Duration(c.nanos.Load()),
		MaxDatagram:     time.Duration(c.maxNanos.Load()),
		HeldChunksMax:   int(c.heldMax.Load()),
		Moves:           c.moves.Load(),
		MovesRefused:    c.movesRefused.Load(),
		ChecksRefused:   c.checksRefused.Load(),
		FlushesDeferred: c.flushesDeferred.Load(),
	}
	for i := range c.buckets {
		s.DatagramBuckets[i] = c.buckets[i].Load()
	}
	return s
}

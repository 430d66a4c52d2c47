//go:build !js

package lean

import (
	"sync/atomic"
	"time"
)

// DataPathStats are the figures of the reader's work and the protection
// it applied: transport.DataPathStats, where each field is described. It
// is the same struct (the transport converts one to the other, so the
// compiler holds the two alike), kept apart so that the public type keeps
// its documentation.
type DataPathStats struct {
	Sockets                            int
	Datagrams                          uint64
	DatagramBuckets                    []uint64 // by DatagramBounds
	DatagramTime, MaxDatagram          time.Duration
	HeldChunksMax                      int
	Moves, MovesRefused, ChecksRefused uint64
	FlushesDeferred                    uint64
	TCPConns, TCPRefused, TCPPaths     uint64
}

// DatagramBounds are the upper bounds of DataPathStats.DatagramBuckets
// (transport.DatagramBounds is this slice).
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
	tcpConns        atomic.Uint64
	tcpRefused      atomic.Uint64
	tcpPaths        atomic.Uint64
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

// add adds o's figures to s's (a server's shards'): the counts sum, the
// largest figures are the largest of either.
func (s *DataPathStats) add(o DataPathStats) {
	s.Datagrams += o.Datagrams
	if s.DatagramBuckets == nil {
		s.DatagramBuckets = make([]uint64, len(o.DatagramBuckets))
	}
	for i, n := range o.DatagramBuckets {
		s.DatagramBuckets[i] += n
	}
	s.DatagramTime += o.DatagramTime
	s.MaxDatagram = max(s.MaxDatagram, o.MaxDatagram)
	s.HeldChunksMax = max(s.HeldChunksMax, o.HeldChunksMax)
	s.Moves += o.Moves
	s.MovesRefused += o.MovesRefused
	s.ChecksRefused += o.ChecksRefused
	s.FlushesDeferred += o.FlushesDeferred
	s.TCPConns += o.TCPConns
	s.TCPRefused += o.TCPRefused
	s.TCPPaths += o.TCPPaths
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
		TCPConns:        c.tcpConns.Load(),
		TCPRefused:      c.tcpRefused.Load(),
		TCPPaths:        c.tcpPaths.Load(),
	}
	for i := range c.buckets {
		s.DatagramBuckets[i] = c.buckets[i].Load()
	}
	return s
}

//go:build !js

package lean

import (
	"testing"
	"time"
)

// TestDataPathCounters: each datagram lands in the first bucket whose
// bound it does not pass, the last bucket takes the rest, and there is a
// bucket for every bound.
func TestDataPathCounters(t *testing.T) {
	var c dataPathCounters
	if len(c.buckets) != len(DatagramBounds)+1 {
		t.Fatalf("%d buckets for %d bounds", len(c.buckets), len(DatagramBounds))
	}
	for _, d := range []time.Duration{0, time.Microsecond, time.Microsecond + 1, 3 * time.Millisecond, time.Second} {
		c.datagram(d)
	}
	c.held(5)
	c.held(3)
	s := c.snapshot()
	want := map[int]uint64{0: 2, 1: 1, 10: 1, 11: 1}
	for i, n := range s.DatagramBuckets {
		if n != want[i] {
			t.Errorf("bucket %d (<= %v): %d, want %d", i, DatagramBounds[min(i, len(DatagramBounds)-1)], n, want[i])
		}
	}
	if s.Datagrams != 5 || s.MaxDatagram != time.Second || s.HeldChunksMax != 5 {
		t.Errorf("%+v", s)
	}
}

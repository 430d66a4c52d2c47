//go:build !js

package jitter

import (
	"io"
	"slices"
	"testing"
	"time"
)

// flatTrace is a trace of frames all seen at the earliest delay but for
// the late ones, late[n] render ticks later (some frame must be on time);
// the delays and the oracle are the bench's own, from oracleOf.
func flatTrace(t *testing.T, frames int, late map[int]int64) *jitterTrace {
	t.Helper()
	start := time.Unix(0, 0)
	tr := &jitterTrace{start: start, seen: make([]int64, frames)}
	tr.run.stream = make([]time.Time, frames)
	for n := range frames {
		tr.seen[n] = int64(n)*ticksPerFrame + late[n]
		tr.run.stream[n] = at(start, tr.seen[n], jitterRenderHz)
	}
	var minD int64
	tr.delay, minD, tr.oracle = oracleOf(tr.seen)
	if minD != 0 {
		t.Fatalf("earliest delay %d ticks, want 0", minD)
	}
	for n, d := range tr.delay {
		if d != late[n] {
			t.Fatalf("frame %d: delay %d ticks, want %d", n, d, late[n])
		}
	}
	return tr
}

func TestJitterFixedPlay(t *testing.T) {
	// One frame 6 ticks late in window 0; window 1 is calm.
	tr := flatTrace(t, 300, map[int]int64{40: 6})
	// The oracle holds window 0 at its latest frame's delay, window 1 at 0.
	w0, w1 := tr.oracle[:framesPerWindow], tr.oracle[framesPerWindow:]
	if slices.Max(w0) != 6 || slices.Min(w0) != 6 || slices.Max(w1) != 0 || slices.Min(w1) != 0 {
		t.Fatalf("oracle %v to %v ticks in window 0, %v to %v in window 1; want 6 and 0", slices.Min(w0), slices.Max(w0), slices.Min(w1), slices.Max(w1))
	}
	for _, c := range []struct {
		delay  int64
		stalls int
	}{{0, 1}, {5, 1}, {6, 0}, {10, 0}} {
		if s, _, _ := fixedPlay(tr, c.delay); s != c.stalls {
			t.Errorf("delay %d ticks: %d stalls, want %d", c.delay, s, c.stalls)
		}
	}
	// Six ticks of delay: window 1's frames (half of all) are 100 ms above
	// its oracle of 0, so the p95 is 100 ms; none is below.
	if _, mean, p95 := fixedPlay(tr, 6); p95 != 100 || mean != 50 {
		t.Errorf("delay 6 ticks: excess mean %.1f, p95 %.1f", mean, p95)
	}
	// Within a 33 ms p95 the best fixed delay is 0, with its stall.
	if f, ok := bestFixed(fixedDelays(tr), excessP95Target); !ok || f.delay != 0 || f.stalls != 1 {
		t.Errorf("best fixed delay %d ticks with %d stalls (found: %v)", f.delay, f.stalls, ok)
	}
}

func TestJitterStallCauses(t *testing.T) {
	tr := flatTrace(t, 600, map[int]int64{200: 8, 210: 4, 300: 6})
	tr.run.stream[300] = time.Time{} // every copy of 300 lost
	got := stallCauses(tr, []int{200, 210, 300})
	want := [causeCount]int{causeRetransmit: 1, causeNewHigh: 1, causeHeldLow: 1}
	if got != want {
		t.Errorf("causes %v, want %v", got, want)
	}
}

func TestJitterSpikeBound(t *testing.T) {
	// Three minutes of calm frames with a 300 ms spike twice a minute: the
	// oracle is 0 in the calm windows, so nearly every spike stalls any
	// buffer within the p95 target.
	const perMinute = 60 * jitterHz
	late := map[int]int64{}
	var spikes []int
	for n := perMinute / 4; n < 3*perMinute; n += perMinute / 2 {
		spikes = append(spikes, n)
		late[n] = 18
	}
	tr := flatTrace(t, 3*perMinute, late)
	got := spikeBound(io.Discard, tr, spikes, excessP95Target, 0.75)
	if got < float64(len(spikes))*0.9 || got > float64(len(spikes)) {
		t.Errorf("at least %.1f of %d spikes stall", got, len(spikes))
	}
	// Spikes no higher than the margin the p95 allows cost nothing.
	for _, n := range spikes {
		late[n] = 2
	}
	if got := spikeBound(io.Discard, flatTrace(t, 3*perMinute, late), spikes, excessP95Target, 0.75); got != 0 {
		t.Errorf("spikes of 33 ms: %.1f stall", got)
	}
}

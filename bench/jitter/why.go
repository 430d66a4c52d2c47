package jitter

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// jitterTrace is one trace's frame schedule, in render ticks: when each
// frame was seen, its delay above the earliest (sched - minD), and the
// oracle's delay for it.
type jitterTrace struct {
	run    linkRun
	start  time.Time
	seen   []int64
	delay  []int64 // ticks above the earliest arrival schedule
	oracle []int64
}

// Stall causes, in the order printed.
const (
	causeRetransmit = iota // every redundant copy lost: waited for a retransmission
	causeNewHigh           // came later than any frame of the 10 s before
	causeHeldLow           // within the 10 s before's delays: the depth was below them
	causeCount
)

var causeNames = [causeCount]string{
	"every redundant copy lost, waited for retransmission",
	"later than any frame in the 10 s before (no history covers it)",
	"no later than a frame in the 10 s before, but the depth was below it",
}

// stallCauses sorts a playout's stalls, given by the frame each waited
// for, by what made that frame late.
func stallCauses(tr *jitterTrace, stalls []int) [causeCount]int {
	var out [causeCount]int
	for _, n := range stalls {
		if n >= len(tr.seen) {
			continue
		}
		st := tr.run.stream[n]
		if st.IsZero() || ticksAt(tr.start, st) > tr.seen[n] {
			out[causeRetransmit]++
			continue
		}
		prev := int64(math.MinInt64)
		for k := max(0, n-framesPerWindow); k < n; k++ {
			prev = max(prev, tr.delay[k])
		}
		if tr.delay[n] > prev {
			out[causeNewHigh]++
		} else {
			out[causeHeldLow]++
		}
	}
	return out
}

// ticksAt is the render tick at or after t.
func ticksAt(start, t time.Time) int64 {
	return (int64(t.Sub(start))*jitterRenderHz + int64(time.Second) - 1) / int64(time.Second)
}

// fixedPlay plays every frame a fixed delay (ticks above the earliest
// schedule) after its cut, or when it arrives if later, never before the
// frame before it: the stalls and the excess over the oracle.
func fixedPlay(tr *jitterTrace, delay int64) (stalls int, excessMean, excess95 float64) {
	excess := make([]float64, len(tr.delay))
	last := int64(math.MinInt64)
	waiting := false
	for n := range tr.delay {
		due := int64(n)*ticksPerFrame + delay // relative to minD, as tr.delay is
		arrive := tr.delay[n] + int64(n)*ticksPerFrame
		play := max(due, last)
		if arrive > play {
			if !waiting {
				stalls++
			}
			waiting, play = true, arrive
		} else {
			waiting = false
		}
		last = play
		excess[n] = float64(play-int64(n)*ticksPerFrame-tr.oracle[n]) * tickMs
	}
	excessMean, excess95 = meanP95(excess)
	return stalls, excessMean, excess95
}

// fixedResult is how a fixed delay (ticks above the earliest schedule)
// plays a trace (fixedPlay).
type fixedResult struct {
	delay     int64
	stalls    int
	mean, p95 float64 // excess over the oracle, ms
}

// fixedDelays plays the trace at every fixed delay up to 1 s.
func fixedDelays(tr *jitterTrace) []fixedResult {
	out := make([]fixedResult, 0, jitterRenderHz+1)
	for d := int64(0); d <= jitterRenderHz; d++ {
		s, m, p := fixedPlay(tr, d)
		out = append(out, fixedResult{delay: d, stalls: s, mean: m, p95: p})
	}
	return out
}

// bestFixed returns the result with the fewest stalls (the least delay
// among equals) whose p95 excess is within limit ms; false if none is.
func bestFixed(fixed []fixedResult, limit float64) (best fixedResult, ok bool) {
	for _, f := range fixed {
		if f.p95 <= limit && (!ok || f.stalls < best.stalls) {
			best, ok = f, true
		}
	}
	return best, ok
}

// spikeBound measures, for a trace with delay spikes (4g, held), why every
// causal buffer that keeps the p95 excess within limit ms stalls on most
// spikes: for each spike, the depth a buffer needed at its onset not to
// pause, against the oracle's depth in the windows without a spike.
// Holding that depth in those windows costs its excess on every frame
// held, and the p95 lets at most 5% of frames go more than limit above
// the oracle; a buffer that cannot tell when the next spike comes covers
// it only if it happens to be deep at that moment. It prints the figures
// and returns the fewest stalls such a buffer could expect.
func spikeBound(out io.Writer, tr *jitterTrace, spikes []int, limit float64, slowest float64) float64 {
	spiky := map[int]bool{}
	for _, n := range spikes {
		spiky[n/framesPerWindow] = true
	}
	var calm []float64
	for n, o := range tr.oracle {
		if !spiky[n/framesPerWindow] {
			calm = append(calm, float64(o)*tickMs)
		}
	}
	slices.Sort(calm)
	if len(calm) == 0 || len(spikes) == 0 {
		return 0
	}
	fmt.Fprintf(out, "spikes: %d; oracle depth in the %d frames of windows without one: median %.0f ms, max %.0f ms\n",
		len(spikes), len(calm), calm[len(calm)/2], calm[len(calm)-1])
	expected := 0.0
	var needs []float64
	for _, n := range spikes {
		// The depth needed at the onset: the spike's highest delay, less
		// what play stretched to the slowest speed gains while it lasts.
		hi := 0.0
		for k := n; k < min(n+framesPerWindow/2, len(tr.delay)); k++ {
			hi = max(hi, float64(tr.delay[k])*tickMs)
		}
		need := hi * slowest
		needs = append(needs, need)
		// Frames over all the trace whose oracle is more than limit below
		// the depth needed: a buffer that deep there breaks the p95 on them.
		over := float64(countBelow(calm, need-limit)) / float64(len(tr.oracle))
		cover := 1.0
		if over > 0.05 {
			cover = 0.05 / over
		}
		expected += 1 - cover
	}
	slices.Sort(needs)
	below := float64(countBelow(calm, needs[0]-limit)) / float64(len(tr.oracle))
	fmt.Fprintf(out, "depth needed at a spike's onset (slowest play %.2fx): %.0f to %.0f ms; %.1f%% of all frames have an oracle depth more than %.0f ms below the least of them,\n",
		slowest, needs[0], needs[len(needs)-1], 100*below, limit)
	fmt.Fprintf(out, "  so a buffer within the p95 target is that deep at most %.1f%% of the calm time, and stalls on at least %.1f of the %d spikes (%.1f per 10 min)\n",
		100*min(1, 0.05/max(below, 1e-9)), expected, len(spikes), expected*float64(10*time.Minute)/float64(time.Duration(len(tr.delay))*time.Second/jitterHz))
	return expected
}

// countBelow returns how many of the sorted xs are below v.
func countBelow(xs []float64, v float64) int {
	i, _ := slices.BinarySearch(xs, v)
	return i
}

package lockstep

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// arrivalProcess gives the extra delay of frame n above the base delay.
type arrivalProcess func(rng *rand.Rand, n int) time.Duration

// playTrace feeds a buffer frames at 15 Hz whose arrivals, polled at
// 30 Hz render ticks, follow extra, for d; it returns the playout stats
// and the mean delay the buffer added between a frame's arrival and its
// play.
func playTrace(t *testing.T, extra arrivalProcess, d time.Duration) (PlayoutStats, float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	const hz = 15
	jb := NewJitterBuffer(hz)
	start := time.Unix(1000, 0)
	period, render := time.Second/hz, time.Second/30
	frames := int(d / period)
	type arrival struct {
		n  int
		at time.Time
	}
	arr := make([]arrival, frames)
	for n := range arr {
		at := start.Add(time.Duration(n)*period + 40*time.Millisecond + extra(rng, n))
		ticks := math.Ceil(float64(at.Sub(start)) / float64(render))
		arr[n] = arrival{n, start.Add(time.Duration(ticks) * render)}
	}
	byTime := append([]arrival(nil), arr...)
	sort.Slice(byTime, func(i, j int) bool { return byTime[i].at.Before(byTime[j].at) })
	i := 0
	var added time.Duration
	played := 0
	for now := start; now.Before(start.Add(d)); now = now.Add(render) {
		for ; i < len(byTime) && !byTime[i].at.After(now); i++ {
			jb.Arrive(byTime[i].n, byTime[i].at)
		}
		_, to, _, _ := jb.Advance(now)
		for ; played < to && played < frames; played++ {
			added += now.Sub(arr[played].at)
		}
	}
	return jb.Stats(), float64(added) / float64(max(played, 1)) / 1e6
}

func TestJitterBufferCleanLinkAddsNothing(t *testing.T) {
	st, added := playTrace(t, func(rng *rand.Rand, n int) time.Duration {
		return time.Duration(rng.Float64() * float64(time.Millisecond)) // under 1 ms of jitter
	}, 5*time.Minute)
	if st.TargetMs != 0 || st.Stalls > 1 {
		t.Fatalf("clean link: target %.1f ms, %d stalls", st.TargetMs, st.Stalls)
	}
	if added > 40 { // the render tick alone adds up to 33 ms
		t.Fatalf("clean link: %.1f ms added on average", added)
	}
}

func TestJitterBufferAbsorbsLossDelays(t *testing.T) {
	// 20% loss: a frame comes a packet (a period) later each time its
	// packet is lost, as redundant frames do.
	d := 10 * time.Minute
	st, added := playTrace(t, func(rng *rand.Rand, n int) time.Duration {
		e := time.Duration(rng.Float64() * 20e6)
		for rng.Float64() < 0.2 {
			e += time.Second / 15
		}
		return e
	}, d)
	if frac := float64(st.Stalled) / float64(d); frac > 0.005 {
		t.Fatalf("stalled %.2f%% of the time (%d stalls)", 100*frac, st.Stalls)
	}
	if st.TargetMs < 100 {
		t.Fatalf("target %.1f ms cannot cover delays of whole periods", st.TargetMs)
	}
	t.Logf("stalls %d (%v), added %.1f ms, target %.1f ms, MAPDV2 %.1f ms, fast %v", st.Stalls, st.Stalled, added, st.TargetMs, st.MAPDV2Ms, st.Fast)
}

func TestJitterBufferStates(t *testing.T) {
	jb := NewJitterBuffer(10)
	start := time.Unix(0, 0)
	if _, _, _, s := jb.Advance(start); s != Paused {
		t.Fatalf("before any frame: %v", s)
	}
	jb.Arrive(0, start)
	from, to, _, s := jb.Advance(start.Add(50 * time.Millisecond))
	if from != 0 || to != 1 || s == Paused {
		t.Fatalf("first frame: [%d,%d) %v", from, to, s)
	}
	// Nothing more arrives: play pauses.
	for _, ms := range []int{500, 600} {
		if _, _, _, s = jb.Advance(start.Add(time.Duration(ms) * time.Millisecond)); s != Paused {
			t.Fatalf("no frames at %d ms: %v", ms, s)
		}
	}
	// Frames 1-20 arrive together, late; then 400 frames on time. The late
	// ones raise the target; once they leave the delay window the backlog
	// is drained with fast play, and the buffer returns to empty.
	for n := 1; n <= 20; n++ {
		jb.Arrive(n, start.Add(2*time.Second))
	}
	sawFast := false
	for k := 1; k <= 800; k++ {
		now := start.Add(2*time.Second + time.Duration(k)*50*time.Millisecond)
		if n := 20 + k/2; k%2 == 0 {
			jb.Arrive(n, now)
		}
		if _, _, _, s := jb.Advance(now); s == Fast {
			sawFast = true
		}
	}
	if !sawFast || jb.Stats().Fast == 0 {
		t.Fatal("the backlog was never played fast")
	}
	if d := jb.Depth(); d > 1 {
		t.Fatalf("depth %.1f frames after the link settled", d)
	}
	if jb.Stats().Stalls != 1 {
		t.Fatalf("stalls %d", jb.Stats().Stalls)
	}
}

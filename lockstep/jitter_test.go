package lockstep

import (
	"math"
	"math/rand/v2"
	"slices"
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
	t.Logf("stalls %d (%v), added %.1f ms, target %.1f ms, delay variation %.1f ms, fast %v", st.Stalls, st.Stalled, added, st.TargetMs, st.DelayVariationMs, st.Fast)
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

// playArrivals feeds a 15 Hz buffer frames 0 .. frames-1, frame n arriving
// arrive(n) after its cut, and advances it at 60 Hz render ticks until the
// last frame has arrived; it calls tick after each Advance with the
// render tick's number (60 a second).
func playArrivals(frames int, arrive func(n int) time.Duration, tick func(jb *JitterBuffer, k int, st PlayState)) *JitterBuffer {
	return playArrivalsIn(NewJitterBuffer(15), frames, arrive, tick)
}

// playArrivalsIn is playArrivals through jb, for frames at 15 Hz.
func playArrivalsIn(jb *JitterBuffer, frames int, arrive func(n int) time.Duration, tick func(jb *JitterBuffer, k int, st PlayState)) *JitterBuffer {
	const hz = 15
	start := time.Unix(1000, 0)
	period, render := time.Second/hz, time.Second/60
	type arrival struct {
		n  int
		at time.Time
	}
	arr := make([]arrival, frames)
	for n := range arr {
		arr[n] = arrival{n, start.Add(time.Duration(n)*period + arrive(n))}
	}
	sort.SliceStable(arr, func(i, k int) bool { return arr[i].at.Before(arr[k].at) })
	i := 0
	for k := 0; i < len(arr); k++ {
		now := start.Add(time.Duration(k) * render)
		for ; i < len(arr) && !arr[i].at.After(now); i++ {
			jb.Arrive(arr[i].n, arr[i].at)
		}
		_, _, _, st := jb.Advance(now)
		if tick != nil {
			tick(jb, k, st)
		}
	}
	return jb
}

// A single delay spike (the link stalls 300 ms and then releases what it
// held, in order) costs one pause, and the depth does not hold it: once
// the backlog has drained, play is back at the link's own delay.
func TestJitterBufferSpikeIsTransient(t *testing.T) {
	const period = time.Second / 15
	spikeAt := 20 * time.Second
	arrive := func(n int) time.Duration {
		sent := time.Duration(n) * period
		d := 30 * time.Millisecond
		if sent >= spikeAt && sent < spikeAt+300*time.Millisecond {
			d += spikeAt + 300*time.Millisecond - sent
		}
		return d
	}
	before, after := -1.0, -1.0
	jb := playArrivals(int(40*time.Second/period), arrive, func(jb *JitterBuffer, k int, _ PlayState) {
		switch k {
		case 60 * 19: // a second before the spike
			before = jb.Target()
		case 60 * 23: // 3 s after
			after = jb.Target()
			if d := jb.Depth(); d > 1 {
				t.Errorf("depth %.2f frames 3 s after the spike: the backlog was not drained", d)
			}
		}
	})
	st := jb.Stats()
	if st.Stalls != 1 {
		t.Errorf("%d stalls for one spike", st.Stalls)
	}
	// The spike is 4.5 frames high; what is left of it after 3 s is its
	// mark on MAPDV2, which decays.
	if before < 0 || after < 0 || after > before+0.5 {
		t.Errorf("target %.2f frames before the spike, %.2f after: the spike was held", before, after)
	}
	if st.Fast == 0 {
		t.Error("the spike's backlog was not played fast")
	}
}

// Delay peaks that recur are the link's character: the depth covers them,
// and after the first eventRank play no longer pauses for them.
func TestJitterBufferCoversRecurringPeaks(t *testing.T) {
	const period = time.Second / 15
	arrive := func(n int) time.Duration {
		if n%20 == 10 { // a frame 150 ms late every 1.3 s
			return 180 * time.Millisecond
		}
		return 30 * time.Millisecond
	}
	stallsAt := -1
	jb := playArrivals(int(60*time.Second/period), arrive, func(jb *JitterBuffer, k int, _ PlayState) {
		if k == 60*5 {
			stallsAt = jb.Stats().Stalls
		}
	})
	st := jb.Stats()
	if stallsAt < 0 || st.Stalls != stallsAt || stallsAt > eventRank {
		t.Errorf("%d stalls in the first 5 s, %d in all: recurring peaks not covered", stallsAt, st.Stalls)
	}
	// The peaks are 150 ms above the rest; the margin adds depthMargin.
	if tgt := st.TargetMs; tgt < 150+depthMargin-10 || tgt > 150+depthMargin+20 {
		t.Errorf("target %.1f ms for peaks 150 ms above the rest", tgt)
	}
}

// Two spikes in a window are transients like one: the depth does not hold
// them, and each costs one pause.
func TestJitterBufferTwoSpikesAreTransient(t *testing.T) {
	const period = time.Second / 15
	spikes := []time.Duration{20 * time.Second, 23 * time.Second}
	arrive := func(n int) time.Duration {
		sent := time.Duration(n) * period
		d := 30 * time.Millisecond
		for _, at := range spikes {
			if sent >= at && sent < at+300*time.Millisecond {
				d += at + 300*time.Millisecond - sent
			}
		}
		return d
	}
	after := -1.0
	jb := playArrivals(int(40*time.Second/period), arrive, func(jb *JitterBuffer, k int, _ PlayState) {
		if k == 60*27 { // 4 s after the second spike, within the window of both
			after = jb.Target()
		}
	})
	if after < 0 || after > 1 {
		t.Errorf("target %.2f frames after two spikes: they were held", after)
	}
	if st := jb.Stats(); st.Stalls != len(spikes) {
		t.Errorf("%d stalls for %d spikes", st.Stalls, len(spikes))
	}
}

// Slow play stretches at most to SlowestPlay: between two ticks that are
// not a pause, the playhead moves at least SlowestPlay of the frames the
// room's clock moved, and a frame that has not come is a pause, not a
// near-freeze.
func TestJitterBufferSlowestPlay(t *testing.T) {
	const period = time.Second / 15
	rng := rand.New(rand.NewPCG(3, 4))
	late := make(map[int]time.Duration)
	for n := range 1200 {
		if rng.Float64() < 0.05 {
			late[n] = time.Duration(rng.Float64() * 250e6)
		}
	}
	sawSlow := false
	prev := math.Inf(-1)
	playArrivals(1200, func(n int) time.Duration { return 30*time.Millisecond + late[n] }, func(jb *JitterBuffer, k int, st PlayState) {
		step := float64(time.Second/60) / float64(period) // frames a render tick is worth
		if st == Slow {
			sawSlow = true
			if moved := jb.playhead - prev; moved < SlowestPlay*step-1e-6 {
				t.Fatalf("tick %d: slow play moved %.6f frames (from %.6f), under %.2f of %.3f; have %d", k, moved, prev, SlowestPlay, step, jb.have)
			}
		}
		prev = jb.playhead
	})
	if !sawSlow {
		t.Fatal("no slow play on a link with late frames")
	}
}

// capture keeps the room's unreliable packets.
type capture struct{ pkts [][]byte }

func (c *capture) SendUnreliable(_ int, msg []byte) error {
	c.pkts = append(c.pkts, slices.Clone(msg))
	return nil
}
func (c *capture) SendReliable(int, []byte) error { return nil }

// Client.Received names the frames each packet brought first: a packet
// whose frames are all held brings none, and a packet that fills a gap
// brings the frames it filled.
func TestClientReceived(t *testing.T) {
	cfg := Config{Players: 1, Hz: 15}
	start := time.Unix(0, 0)
	out := &capture{}
	room, err := NewRoom(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	for n := range 4 {
		room.Tick(start.Add(time.Duration(n) * time.Second / 15))
	}
	// Packet 0 is lost; packet 1 carries frames 0 and 1; packet 3 carries
	// 0 .. 3 (the room has heard no acknowledgement).
	now := start.Add(time.Second)
	if err := c.Deliver(now, out.pkts[1]); err != nil {
		t.Fatal(err)
	}
	if got := c.Received(); !slices.Equal(got, []int{0, 1}) {
		t.Errorf("packet 1 brought %v", got)
	}
	if err := c.Deliver(now, out.pkts[3]); err != nil {
		t.Fatal(err)
	}
	if got := c.Received(); !slices.Equal(got, []int{2, 3}) {
		t.Errorf("packet 3 brought %v", got)
	}
	if err := c.Deliver(now, out.pkts[2]); err != nil {
		t.Fatal(err)
	}
	if got := c.Received(); len(got) != 0 {
		t.Errorf("a packet of held frames brought %v", got)
	}
}

// TestJitterBufferMaxDelay: the bound on what the buffer holds (seed
// 001's latency tolerance, Config.MaxDelay).
//
// On a link with a 1 s delay peak every 2 s, the unbounded buffer holds
// about a second of frames; with the default bound of 300 ms it holds
// that most of the time (a late frame releases a burst, which goes out
// fast), and pauses at the peaks instead. When the link's delay steps up
// by 1 s and stays there, the buffer keeps playing just behind the
// arrivals, as before: the bound is on what is held, not on the delay.
// After a 3 s spike the backlog goes out fast until it is under the bound.
func TestJitterBufferMaxDelay(t *testing.T) {
	const period = time.Second / 15
	bound := DefaultMaxDelay
	limit := float64(bound/period) + 1 // and a frame arriving between ticks
	run := func(name string, capped bool, arrive func(n int) time.Duration, after time.Duration) (median, most float64, jb *JitterBuffer) {
		jb = NewJitterBuffer(15)
		if capped {
			jb.SetMaxDelay(bound)
		}
		var depths []float64
		playArrivalsIn(jb, int(60*time.Second/period), arrive, func(jb *JitterBuffer, k int, _ PlayState) {
			if time.Duration(k)*time.Second/60 >= after {
				depths = append(depths, jb.Depth())
			}
		})
		slices.Sort(depths)
		median, most = depths[len(depths)/2], depths[len(depths)-1]
		t.Logf("%s, bounded %v: held %.1f frames (median), %.1f at most, after %v; %+v", name, capped, median, most, after, jb.Stats())
		return median, most, jb
	}
	peaks := func(n int) time.Duration {
		d := 30 * time.Millisecond
		if n%30 == 0 { // one frame every 2 s comes a second late
			d += time.Second
		}
		return d
	}
	if median, _, _ := run("peaks", false, peaks, 15*time.Second); median < 10 {
		t.Errorf("unbounded, the buffer held only %.1f frames on a link with 1 s peaks", median)
	}
	if median, _, _ := run("peaks", true, peaks, 15*time.Second); median > limit {
		t.Errorf("bounded, the buffer held %.1f frames, over %v (%.1f frames)", median, bound, limit)
	}
	step := func(n int) time.Duration {
		d := 30*time.Millisecond + time.Duration(n%3)*5*time.Millisecond
		if time.Duration(n)*period >= 20*time.Second {
			d += time.Second
		}
		return d
	}
	if _, most, jb := run("step", true, step, 0); jb.Stats().Stalls > 1 || most > limit {
		t.Errorf("a step in the link's delay: %d stalls, %.1f frames held at most", jb.Stats().Stalls, most)
	}
	spike := func(n int) time.Duration {
		sent := time.Duration(n) * period
		d := 30 * time.Millisecond
		if sent >= 20*time.Second && sent < 23*time.Second {
			d += 23*time.Second - sent
		}
		return d
	}
	if _, most, jb := run("spike", true, spike, 23*time.Second+4*time.Second); most > limit || jb.Stats().Fast == 0 {
		t.Errorf("4 s after a 3 s spike, the buffer held %.1f frames (bound %.1f), fast play %v", most, limit, jb.Stats().Fast)
	}
}

// kthEventScan is the eventRank-th highest delay event of the buffer's
// window found the long way, the whole window scanned eventRank times:
// what the buffer's picks, kept across arrivals, must agree with.
func kthEventScan(j *JitterBuffer) float64 {
	var at []float64
	kth := math.Inf(-1)
	for range eventRank {
		best := -1
		for i, s := range j.history {
			if (best < 0 || s.d > j.history[best].d) && !nearAny(s.at, at) {
				best = i
			}
		}
		if best < 0 {
			return math.Inf(-1)
		}
		at, kth = append(at, j.history[best].at), j.history[best].d
	}
	return kth
}

// TestJitterBufferPicksAgreeWithScan: the delay events the buffer keeps
// across arrivals, rescanning only when one is displaced, are the scan's
// after every arrival, on links calm, spiky, lossy (frames late and out
// of order) and quantized to whole milliseconds (ties in delay), across
// several turns of the window.
func TestJitterBufferPicksAgreeWithScan(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra func(rng *rand.Rand, n int) float64 // ms above the base delay
	}{
		{"calm", func(rng *rand.Rand, n int) float64 { return rng.Float64() * 2 }},
		{"spiky", func(rng *rand.Rand, n int) float64 {
			if rng.IntN(40) == 0 {
				return 50 + rng.Float64()*200
			}
			return rng.Float64() * 10
		}},
		{"quantized", func(rng *rand.Rand, n int) float64 { return float64(rng.IntN(4) * 10) }},
		{"rising", func(rng *rand.Rand, n int) float64 { return float64(n%400) / 4 }},
		{"falling", func(rng *rand.Rand, n int) float64 { return float64(400-n%400) / 4 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			j := NewJitterBuffer(15)
			origin := time.Unix(1000, 0)
			for n := range 1000 {
				ms := float64(n)*j.period + 20 + tc.extra(rng, n)
				j.Arrive(n, origin.Add(time.Duration(ms*float64(time.Millisecond))))
				want := kthEventScan(j)
				got := math.Inf(-1)
				if j.pickN == eventRank {
					got = j.history[j.picks[eventRank-1]].d
				}
				if got != want {
					t.Fatalf("frame %d: the picks' lowest event %v, the scan's %v", n, got, want)
				}
			}
		})
	}
}

// BenchmarkJitterBufferArrive: a frame's arrival on a link with some
// jitter, the window full.
func BenchmarkJitterBufferArrive(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	j := NewJitterBuffer(15)
	origin := time.Unix(1000, 0)
	n := 0
	for b.Loop() {
		ms := float64(n)*j.period + 20 + rng.Float64()*15
		j.Arrive(n, origin.Add(time.Duration(ms*float64(time.Millisecond))))
		n++
	}
}

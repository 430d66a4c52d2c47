package lockstep

import (
	"math"
	"time"
)

// PlayState is what the client's playout does on a render tick.
type PlayState uint8

const (
	// Paused: the next frame has not arrived; nothing is played (a stall).
	Paused PlayState = iota
	// Normal: frames are played at the room's rate.
	Normal
	// Fast: a backlog is drained at a bounded speed-up.
	Fast
	// Slow: the buffer is running low; play is stretched to refill it.
	Slow
)

func (s PlayState) String() string {
	return [...]string{"paused", "normal", "fast", "slow"}[s]
}

// SlowestPlay is the slowest the playout plays when the buffer runs low:
// 0.75 of the room's rate, a stretch a game can show without looking
// frozen. Below it play pauses, and the pause counts as a stall.
const SlowestPlay = 0.75

// Playout limits.
const (
	fastMax       = 2.0    // the most a backlog is sped up
	jitterWindow  = 150    // frames of delay history (10 s at 15 Hz)
	eventGap      = 1000.0 // ms: frames this close in arrival belong to one delay event
	eventRank     = 3      // the depth covers the third-highest delay event of the window
	depthMargin   = 30.0   // ms above that event, at least; half the delay variation on a jittery link
	mapdvGain     = 1.0 / 16
	delayMinDecay = 0.02 // ms the windowless minimum relaxes per frame, for route changes
	brakeFrames   = 2.0  // start slowing this far before running out of frames
	speedGain     = 0.5  // speed change per frame of lag
	visibleSpeed  = 0.05 // a speed change below this is reported as normal play
	dueEpsilon    = 1e-6 // a frame is due at, not after, its time
)

// JitterBuffer decides when frames are played. It watches when each frame
// arrives against when the room cut it, estimates the downlink's delay
// variation two ways, the mean absolute deviation of each delay from the
// running mean delay (ITU-T G.1020's MAPDV) and the third-highest delay
// event above the minimum in the last 150 frames (10 s at 15 Hz; a lone
// spike or loss burst is a transient it does not hold), and keeps the
// playout that far behind the earliest arrivals, plus a margin: no
// buffer on a clean link, more on a jittery one. Each render tick it
// plays normal, fast (a backlog), slow (running low, from two frames
// before the last one that has arrived, never slower than SlowestPlay) or
// pauses (nothing to play).
//
// Time is a parameter: the Client feeds it, and `tongbu bench jitter` feeds
// it recorded traces.
type JitterBuffer struct {
	period float64 // ms

	started    bool
	origin     time.Time // client time of the first arrival, the zero of delays
	minDelay   float64   // ms, relative to origin's frame
	meanDelay  float64
	mapdv2     float64
	history    []sample // recent delays, ring
	histPos    int
	picks      [eventRank]int // indices in history of the delay events picked, highest first
	pickN      int            // how many of picks are set: eventRank once the window has that many events
	targetMs   float64
	have       int // frames 0 .. have-1 have arrived (contiguous)
	arrived    map[int]bool
	playhead   float64 // frame position being shown; -1 before anything plays
	last       time.Time
	stallTime  time.Duration
	fastTime   time.Duration
	slowTime   time.Duration
	stalls     int
	inStall    bool
	played     int // frames handed to the game
	firstFrame int
	maxHold    float64 // frames the buffer may hold beyond the playhead; 0: no bound
	// A strict room's waits (ms): the newest known, and the one the first
	// frame was cut with. The schedule of delays moves by them.
	paused, paused0 float64
}

// sample is one frame's delay and when it arrived, in ms since the
// buffer's origin.
type sample struct{ d, at float64 }

// NewJitterBuffer returns a buffer for frames cut hz times a second.
func NewJitterBuffer(hz int) *JitterBuffer {
	return &JitterBuffer{
		period:   cutMs(1, hz),
		arrived:  make(map[int]bool),
		playhead: -1,
	}
}

// SetMaxDelay bounds the frames the buffer holds beyond the playhead, as
// time (Config.MaxDelay; d <= 0: no bound): past it, play goes fast until
// it is under it again, and a link too jittery for it pauses for its worst
// delays rather than hold more.
func (j *JitterBuffer) SetMaxDelay(d time.Duration) {
	j.maxHold = 0
	if d > 0 {
		j.maxHold = float64(d) / float64(time.Millisecond) / j.period
	}
}

// startAt makes a fresh buffer start play at frame n: the frames before
// were run while catching up.
func (j *JitterBuffer) startAt(n int) {
	j.have, j.played, j.playhead = n, n, float64(n-1)
}

// Arrive records that frame n arrived at t. Only a frame's first arrival
// counts.
func (j *JitterBuffer) Arrive(n int, t time.Time) { j.arrive(n, t, 0) }

// arrive records that frame n, cut paused ms behind the room's schedule
// (a strict room's waits), arrived at t.
func (j *JitterBuffer) arrive(n int, t time.Time, paused float64) {
	if n < j.have || j.arrived[n] {
		return
	}
	if !j.started { // the first arrival sets the zero of delays; play starts at frame 0
		j.started, j.origin, j.firstFrame = true, t, n
		j.last = t
		j.paused0 = paused
	}
	j.arrived[n] = true
	for j.arrived[j.have] {
		delete(j.arrived, j.have)
		j.have++
	}
	// Delay of frame n relative to the first frame's: its arrival against
	// its place in the room's schedule.
	d := float64(t.Sub(j.origin))/float64(time.Millisecond) - float64(n-j.firstFrame)*j.period - (paused - j.paused0)
	if len(j.history) == 0 {
		j.minDelay, j.meanDelay = d, d
	}
	j.minDelay = min(j.minDelay+delayMinDecay, d)
	j.meanDelay += (d - j.meanDelay) * mapdvGain
	j.mapdv2 += (math.Abs(d-j.meanDelay) - j.mapdv2) * mapdvGain
	now := float64(t.Sub(j.origin)) / float64(time.Millisecond)
	slot := len(j.history)
	if slot < jitterWindow {
		j.history = append(j.history, sample{d, now})
	} else {
		slot = j.histPos
		j.history[slot] = sample{d, now}
		j.histPos = (j.histPos + 1) % jitterWindow
	}
	if !j.picksHold(slot, d) {
		j.pickEvents()
	}
	j.updateTarget()
}

// picksHold reports whether the events picked before a sample of delay d
// went into history[slot] are still the ones pickEvents would pick: the
// window had its eventRank events, the sample it replaced was none of
// them, and d is below the lowest. Such a sample wins no pick, and the
// one it replaced won none (a sample ranks by delay, then by its place in
// history, and its place is the same), so the picks stand. Most frames
// are such, and the window is not scanned for them.
func (j *JitterBuffer) picksHold(slot int, d float64) bool {
	if j.pickN < eventRank {
		return false
	}
	for _, i := range j.picks {
		if i == slot {
			return false
		}
	}
	return d < j.history[j.picks[eventRank-1]].d
}

// pickEvents picks the window's delay events, highest first: the highest
// delay, then the highest of the samples not within eventGap (in arrival)
// of one picked, and again, up to eventRank.
func (j *JitterBuffer) pickEvents() {
	j.pickN = 0
	var at [eventRank]float64 // arrival times of the events picked
	for e := range j.picks {
		best := -1
		for i, s := range j.history {
			if (best < 0 || s.d > j.history[best].d) && !nearAny(s.at, at[:e]) {
				best = i
			}
		}
		if best < 0 { // fewer than eventRank events
			return
		}
		j.picks[e], at[e] = best, j.history[best].at
		j.pickN++
	}
}

// updateTarget sets the buffer depth: the window's third-highest delay
// event above the minimum (events are at least eventGap apart in
// arrival), plus a margin of depthMargin or half the mean delay
// variation, whichever is more, and at least twice that variation. One or two high events in 10 s, a spike or a
// loss burst, are transients: play slows or pauses for them once and then
// drains the backlog, and the depth does not hold them for the whole
// window. A delay that recurs is the link's character, and the depth
// covers it. A deeper rank or margin buys fewer stalls with more delay in
// the calm windows (`tongbu bench jitter` prints both). A depth under half a
// period gets no margin and under a millisecond is rounded away: a clean
// link plays at once.
func (j *JitterBuffer) updateTarget() {
	kth := math.Inf(-1) // the eventRank-th highest event (pickEvents)
	if j.pickN == eventRank {
		kth = j.history[j.picks[eventRank-1]].d
	}
	t := kth - j.minDelay
	if t >= j.period/2 {
		t += max(depthMargin, j.mapdv2/2)
	}
	t = max(t, 2*j.mapdv2)
	if t < 1 {
		t = 0
	}
	j.targetMs = t
}

// nearAny reports whether at is within eventGap of one of events.
func nearAny(at float64, events []float64) bool {
	for _, e := range events {
		if math.Abs(at-e) < eventGap {
			return true
		}
	}
	return false
}

// Target returns the depth the buffer aims for, in frames.
func (j *JitterBuffer) Target() float64 { return j.targetMs / j.period }

// Depth returns the frames buffered ahead of the playhead.
func (j *JitterBuffer) Depth() float64 { return max(0, float64(j.have-1)-j.playhead) }

// DelayVariation returns the current estimate of the downlink's mean
// delay variation (the mean absolute deviation of each frame's delay from
// the running mean delay), in milliseconds.
func (j *JitterBuffer) DelayVariation() float64 { return j.mapdv2 }

// Advance moves the playhead to render time t and returns the frames that
// became due (the first and one past the last frame number), the fraction
// of the way from the second-to-last frame due so far to the last, for
// interpolation, and the play state.
func (j *JitterBuffer) Advance(t time.Time) (from, to int, alpha float64, state PlayState) {
	from = j.played
	if !j.started {
		return from, from, 0, Paused
	}
	dt := float64(t.Sub(j.last)) / float64(time.Millisecond)
	j.last = t
	if dt < 0 {
		dt = 0
	}
	// Where the playhead should be: frame n becomes due (the playhead passes
	// n-1) when it would arrive at the earliest delay seen plus the target
	// depth.
	ideal := (float64(t.Sub(j.origin))/float64(time.Millisecond)-j.minDelay-j.targetMs-max(0, j.paused-j.paused0))/j.period + float64(j.firstFrame) - 1 + dueEpsilon
	if j.maxHold > 0 { // never further behind the newest frame than the bound
		ideal = max(ideal, float64(j.have-1)-j.maxHold)
	}
	// Proportional control: the playhead closes a gap to the ideal over a
	// few frames, at a bounded speed-up or stretch; no dead band, which
	// would leave up to its width of delay behind.
	step := dt / j.period            // frames the ideal moved since the last tick
	lag := ideal - step - j.playhead // frames behind the ideal, at the last tick
	speed := max(SlowestPlay, min(fastMax, 1+lag*speedGain))
	st := Normal
	switch {
	case speed > 1+visibleSpeed:
		st = Fast
	case speed < 1-visibleSpeed:
		st = Slow
	}
	// Brake as the playhead nears the last frame that has arrived: a frame
	// that is a little late costs a short stretch of slow play, not a
	// pause.
	limit := float64(j.have - 1) // the last frame that has arrived
	// Only within the target's slack: with no target, frames are due as
	// they arrive and there is nothing to brake with.
	if brake := min(brakeFrames, j.Target()); brake > 0 {
		if room := limit - j.playhead; room < brake && speed > SlowestPlay {
			speed, st = max(SlowestPlay, speed*room/brake), Slow
		}
	}
	next := j.playhead + step*speed
	if next > limit {
		next = limit
		st = Paused
	}
	if st == Paused && next <= j.playhead {
		j.stallTime += time.Duration(dt * float64(time.Millisecond))
		if !j.inStall {
			j.inStall = true
			j.stalls++
		}
	} else {
		j.inStall = false
	}
	switch st {
	case Fast:
		j.fastTime += time.Duration(dt * float64(time.Millisecond))
	case Slow:
		j.slowTime += time.Duration(dt * float64(time.Millisecond))
	}
	j.playhead = max(j.playhead, next)
	// Run every frame up to the playhead's ceiling: the picture lies between
	// the last two frames run, so playing never waits for a frame beyond
	// the newest.
	due := int(math.Ceil(j.playhead)) + 1
	if due > j.played {
		j.played = due
	}
	alpha = 1 - (math.Ceil(j.playhead) - j.playhead)
	return from, j.played, alpha, st
}

// PlayoutStats summarizes the playout so far.
type PlayoutStats struct {
	Stalls   int           // times play paused for a missing frame
	Stalled  time.Duration // time spent paused
	Fast     time.Duration // time spent in fast play
	Slow     time.Duration // time spent in slow play
	TargetMs float64       // current target depth
	// DelayVariationMs is the current mean delay variation
	// (JitterBuffer.DelayVariation).
	DelayVariationMs float64
	DepthFrms        float64 // frames buffered ahead of the playhead
}

// Stats returns the playout counters.
func (j *JitterBuffer) Stats() PlayoutStats {
	return PlayoutStats{
		Stalls: j.stalls, Stalled: j.stallTime, Fast: j.fastTime, Slow: j.slowTime,
		TargetMs: j.targetMs, DelayVariationMs: j.mapdv2, DepthFrms: j.Depth(),
	}
}

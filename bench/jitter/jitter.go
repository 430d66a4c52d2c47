package jitter

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/bench/internal/nettrace"
	"github.com/tongbu/tongbu/lockstep"
)

func init() {
	harness.Register("jitter",
		"the client's jitter buffer beside three baselines and the hindsight oracle on seeded delay traces",
		benchJitter)
}

const (
	jitterHz       = 15
	jitterRenderHz = 60
	oracleWindow   = 10 * time.Second

	// ticksPerFrame is the render ticks a frame period lasts.
	ticksPerFrame = jitterRenderHz / jitterHz
	// tickMs is a render tick's length in ms.
	tickMs = 1000.0 / jitterRenderHz
	// framesPerWindow is the frames an oracle window holds.
	framesPerWindow = int(oracleWindow / (time.Second / jitterHz))

	// excessP95Target is the bound on the p95 of the delay a buffer
	// adds above the oracle, in ms.
	excessP95Target = 33.4
)

// at returns the exact time of tick n of a clock running hz times a
// second: n/hz seconds, computed without accumulating a rounded period.
func at(start time.Time, n int64, hz int64) time.Time {
	return start.Add(time.Duration(n * int64(time.Second) / hz))
}

// linkRun is what the room and client did over a trace.
type linkRun struct {
	arrivals    []time.Time // first arrival of each frame, exact
	mapdv2      float64     // ms, over the downlink packets delivered
	packets     int         // downlink packets sent
	lost        int         // of those, lost
	retransmits uint64
	redundancy  float64 // mean frames repeated per packet, sampled every frame
	// stream is, for each frame, when the first copy of it in the room's
	// regular packets (the newest frame and its redundant predecessors,
	// not retransmissions) arrived; zero if every such copy was lost.
	stream []time.Time
}

// runLink plays frames 0 .. frames-1 of a one-player room at jitterHz
// through the real lockstep Room and Client over the two links, in
// virtual time: the room's redundancy adapts to the loss the client
// reports and it retransmits what the client's acknowledgements say is
// missing, as in a match. The client sends its acknowledgements once a
// frame period. It returns when the client holds every frame.
func runLink(down, up *nettrace.Link, start time.Time, frames int) (linkRun, error) {
	type delivery struct {
		at     time.Time
		seq    int
		toRoom bool
		msg    []byte
	}
	var q []delivery // kept sorted by (at, seq)
	seq := 0
	push := func(d delivery) {
		seq++
		d.seq = seq
		i := sort.Search(len(q), func(i int) bool {
			return q[i].at.After(d.at) || q[i].at.Equal(d.at) && q[i].seq > d.seq
		})
		q = append(q, delivery{})
		copy(q[i+1:], q[i:])
		q[i] = d
	}
	var res linkRun
	var room *lockstep.Room
	var mean float64
	now := start
	out := senderFunc(func(msg []byte, reliable bool) {
		delay, lost := down.Fate(now)
		if !reliable {
			res.packets++
			if newest := room.NextFrame() - 1; !lost && newest >= 0 {
				ps := room.PlayerStats(0)
				for n := max(ps.Have, newest-ps.Redundancy, 0); n <= newest && n < len(res.stream); n++ {
					if a := now.Add(delay); res.stream[n].IsZero() || a.Before(res.stream[n]) {
						res.stream[n] = a
					}
				}
			}
			if lost {
				res.lost++
				return
			}
			// MAPDV2 (the running mean delay and the mean absolute
			// deviation from it, gain 1/16) of the packets delivered.
			ms := float64(delay) / 1e6
			if res.packets == 1 {
				mean = ms
			}
			mean += (ms - mean) / 16
			res.mapdv2 += (math.Abs(ms-mean) - res.mapdv2) / 16
		} else {
			lost = false // the reliable channel retransmits; its delay is the link's
		}
		push(delivery{at: now.Add(delay), toRoom: false, msg: slices.Clone(msg)})
	})
	res.stream = make([]time.Time, frames)
	cfg := lockstep.Config{Players: 1, Hz: jitterHz}
	room, err := lockstep.NewRoom(cfg, start, out)
	if err != nil {
		return res, err
	}
	client, err := lockstep.NewClient(cfg, 0)
	if err != nil {
		return res, err
	}
	res.arrivals = make([]time.Time, frames)
	got := 0
	// The client reports half a period after each cut.
	report := int64(0)
	reportAt := func(k int64) time.Time { return at(start, 2*k+1, 2*jitterHz) }
	var redSum float64
	for got < frames {
		next, what := room.NextCut(), 0
		if t := reportAt(report); t.Before(next) {
			next, what = t, 1
		}
		if len(q) > 0 && !q[0].at.After(next) {
			d := q[0]
			q = q[1:]
			now = d.at
			if d.toRoom {
				room.Deliver(0, d.msg, now)
				continue
			}
			if err := client.Deliver(now, d.msg); err != nil {
				return res, err
			}
			for _, n := range client.Received() {
				if n < frames && res.arrivals[n].IsZero() {
					res.arrivals[n] = now
					got++
				}
			}
			continue
		}
		now = next
		if what == 0 {
			if room.NextFrame() >= frames+30*jitterHz {
				return res, fmt.Errorf("frames still missing %d frames after the last", 30*jitterHz)
			}
			room.Tick(now)
			redSum += float64(room.PlayerStats(0).Redundancy)
			continue
		}
		report++
		pkt := client.Packet(now)
		if delay, lost := up.Fate(now); !lost {
			push(delivery{at: now.Add(delay), toRoom: true, msg: slices.Clone(pkt)})
		}
		client.Advance(now) // the game's render tick: the client's own playout runs as in a match
	}
	res.retransmits = room.Stats().Retransmits
	res.redundancy = redSum / float64(max(room.NextFrame(), 1))
	return res, nil
}

// senderFunc is a lockstep.Sender for a single player.
type senderFunc func(msg []byte, reliable bool)

func (f senderFunc) SendUnreliable(_ int, msg []byte) error { f(msg, false); return nil }
func (f senderFunc) SendReliable(_ int, msg []byte) error   { f(msg, true); return nil }

// frameTicks returns the render tick at which each frame is seen: the
// first at or after its first arrival, as a game that reads its socket once
// a render tick sees it.
func frameTicks(run linkRun, start time.Time) []int64 {
	out := make([]int64, len(run.arrivals))
	for n, t := range run.arrivals {
		out[n] = ticksAt(start, t)
	}
	return out
}

// playout is a buffer under test: frame arrivals in, render ticks out.
type playout interface {
	Arrive(n int, t time.Time)
	Advance(t time.Time) (from, to int, alpha float64, state lockstep.PlayState)
}

// scheduled is the baselines' playout: frame n is due when it would arrive
// at the earliest delay seen plus the policy's target delay; a missing
// frame pauses play. No fast or slow play.
type scheduled struct {
	period   float64 // ms
	target   func(d float64) float64
	started  bool
	origin   time.Time
	first    int
	minDelay float64
	targetMs float64
	have     int
	arrived  map[int]bool
	playhead float64
	played   int
	stalled  bool
	stalls   int
}

func newScheduled(target func(d float64) float64) *scheduled {
	return &scheduled{period: 1000.0 / jitterHz, target: target, arrived: map[int]bool{}, playhead: -1}
}

func (s *scheduled) Arrive(n int, t time.Time) {
	if !s.started {
		s.started, s.origin, s.first = true, t, n
	}
	d := float64(t.Sub(s.origin))/1e6 - float64(n-s.first)*s.period
	if len(s.arrived) == 0 && s.have == 0 || d < s.minDelay {
		s.minDelay = min(s.minDelay, d)
	}
	s.targetMs = s.target(d - s.minDelay)
	s.arrived[n] = true
	for s.arrived[s.have] {
		delete(s.arrived, s.have)
		s.have++
	}
}

func (s *scheduled) Advance(t time.Time) (int, int, float64, lockstep.PlayState) {
	from := s.played
	if !s.started {
		return from, from, 0, lockstep.Paused
	}
	ideal := (float64(t.Sub(s.origin))/1e6-s.minDelay-s.targetMs)/s.period + float64(s.first) - 1 + 1e-6 // due at, not after, its time
	st := lockstep.Normal
	next := math.Max(s.playhead, ideal)
	if limit := float64(s.have - 1); next > limit {
		next, st = limit, lockstep.Paused
	}
	if st == lockstep.Paused && next <= s.playhead {
		if !s.stalled {
			s.stalls++
		}
		s.stalled = true
	} else {
		s.stalled = false
	}
	s.playhead = next
	if due := int(math.Ceil(s.playhead)) + 1; due > s.played {
		s.played = due
	}
	return from, s.played, 0, st
}

// oraclePlayout runs frame n at due(n), or when it arrives if that is
// later (a stall); never before the frame before it.
type oraclePlayout struct {
	frames  int
	due     func(n int) time.Time
	arrived map[int]bool
	played  int
}

func (o *oraclePlayout) Arrive(n int, _ time.Time) { o.arrived[n] = true }

func (o *oraclePlayout) Advance(t time.Time) (int, int, float64, lockstep.PlayState) {
	from, st := o.played, lockstep.Normal
	for o.played < o.frames && !o.due(o.played).After(t) {
		if !o.arrived[o.played] {
			st = lockstep.Paused
			break
		}
		delete(o.arrived, o.played)
		o.played++
	}
	return from, o.played, 0, st
}

// policyResult measures one playout over a trace.
type policyResult struct {
	name                 string
	excessMean, excess95 float64 // ms above the oracle
	stalls               int
	fastSlow             time.Duration
	within150            float64 // share of frames played within 150 ms of their cut
}

func benchJitter(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("jitter", flag.ContinueOnError)
	trace := fs.String("trace", "4g", "network: clean, 4g or wifi")
	minutes := fs.Float64("minutes", 30, "trace length")
	seed := fs.Uint64("seed", 1, "random seed")
	spike := fs.String("spike", "hold", "4g: a spike holds the link for 300 ms (hold), or delays one frame period's packets by 300 ms while later ones overtake them (packet)")
	frontier := fs.Bool("frontier", false, "print the stalls and excess of every fixed delay up to 1 s")
	maxDelay := fs.Duration("max-delay", lockstep.DefaultMaxDelay, "the engine's bound on what its buffer holds (lockstep.Config.MaxDelay; -1ns for none)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *spike != "hold" && *spike != "packet" {
		return fmt.Errorf("-spike %q: want hold or packet", *spike)
	}
	if *minutes <= 0 {
		return errors.New("want -minutes > 0")
	}
	d := time.Duration(*minutes * float64(time.Minute))
	period := time.Second / jitterHz
	start := time.Unix(1_000_000, 0)
	down, err := nettrace.New(*trace, start, *seed, time.Second/jitterHz)
	if err != nil {
		return err
	}
	up, err := nettrace.New(*trace, start, *seed+1_000_003, time.Second/jitterHz) // the same network, its own draws
	if err != nil {
		return err
	}
	down.OnePacket, up.OnePacket = *spike == "packet", *spike == "packet"
	run, err := runLink(down, up, start, int(d/period))
	if err != nil {
		return err
	}
	seen := frameTicks(run, start)
	arr := make([]time.Time, len(seen))
	for n, k := range seen {
		arr[n] = at(start, k, jitterRenderHz)
	}

	delay, minD, oracle := oracleOf(seen)
	fixed2 := func(float64) float64 { return 2 * 1000.0 / jitterHz }
	rfc := rfc3550(3)
	quant := ewQuantile(0.95, 0.01)
	policies := []struct {
		name string
		p    playout
		jb   *lockstep.JitterBuffer
	}{
		{name: fmt.Sprintf("tongbu (MAPDV2 + third-highest event + margin, fast/slow play, holding at most %v)", *maxDelay)},
		{name: "fixed 2-frame buffer", p: newScheduled(fixed2)},
		{name: "RFC 3550 jitter x3", p: newScheduled(rfc)},
		{name: "0.95 quantile, exponential forgetting", p: newScheduled(quant)},
		// The oracle played out and measured like the others: it shows what
		// the measurement itself adds (nothing, and no stalls).
		{name: "oracle (hindsight, per window)", p: &oraclePlayout{frames: len(arr), due: func(n int) time.Time {
			return at(start, int64(n)*ticksPerFrame+minD+oracle[n], jitterRenderHz)
		}, arrived: map[int]bool{}}},
	}
	policies[0].jb = lockstep.NewJitterBuffer(jitterHz)
	policies[0].jb.SetMaxDelay(*maxDelay)
	policies[0].p = policies[0].jb

	order := make([]int, len(arr))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return arr[order[i]].Before(arr[order[j]]) })
	var results []policyResult
	var onsets []int // the frames the engine's stalls waited for
	for _, pol := range policies {
		within150 := 0 // frames played within 150 ms of their cut
		var excess []float64
		k, played := 0, 0
		stalls, stalled := 0, false
		for tick := int64(0); played < len(arr); tick++ {
			now := at(start, tick, jitterRenderHz)
			for ; k < len(order) && !arr[order[k]].After(now); k++ {
				pol.p.Arrive(order[k], arr[order[k]])
			}
			_, to, _, st := pol.p.Advance(now)
			if st == lockstep.Paused && !stalled && played > 0 && played < len(arr) && to == played {
				stalls++
				if pol.jb != nil {
					onsets = append(onsets, played)
				}
			}
			stalled = st == lockstep.Paused && to == played
			for ; played < to && played < len(arr); played++ {
				if float64(tick-int64(played)*ticksPerFrame)*tickMs <= 150 {
					within150++
				}
				delay := tick - int64(played)*ticksPerFrame - minD
				excess = append(excess, float64(delay-oracle[played])*tickMs)
			}
			if now.Sub(start) > d+time.Minute {
				break
			}
		}
		r := policyResult{name: pol.name, stalls: stalls, within150: float64(within150) / float64(max(1, len(arr)))}
		r.excessMean, r.excess95 = meanP95(excess)
		if pol.jb != nil {
			st := pol.jb.Stats()
			r.fastSlow = st.Fast + st.Slow
		}
		results = append(results, r)
	}
	per10 := func(n int) float64 { return float64(n) * 10 / *minutes }
	fmt.Fprintf(out, "jitter: trace %s, %g minutes, %d Hz frames through the lockstep room and client\n", *trace, *minutes, jitterHz)
	fmt.Fprintf(out, "downlink: MAPDV2 %.1f ms, %.2f%% of %d packets lost, %.1f frames repeated per packet on average, %d frames retransmitted\n",
		run.mapdv2, 100*float64(run.lost)/float64(max(run.packets, 1)), run.packets, run.redundancy, run.retransmits)
	fmt.Fprintf(out, "oracle: the smallest fixed delay with no stall in each %v window\n\n", oracleWindow)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "playout\texcess mean ms\texcess p95 ms\tstalls/10 min\tfast or slow\twithin 150 ms\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%v\t%.4f\t\n", r.name, r.excessMean, r.excess95, per10(r.stalls), r.fastSlow.Round(time.Second), r.within150)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tr := &jitterTrace{run: run, start: start, seen: seen, delay: delay, oracle: oracle}
	causes := stallCauses(tr, onsets)
	fmt.Fprintf(out, "\nthe engine's %d stalls, by what made the frame it waited for late:\n", len(onsets))
	for c, k := range causes {
		fmt.Fprintf(out, "  %5d  %s\n", k, causeNames[c])
	}
	fixed := fixedDelays(tr)
	if *frontier {
		fmt.Fprintln(out, "fixed delays (above the earliest arrivals):")
		for _, f := range fixed {
			fmt.Fprintf(out, "  %4.0f ms: %6.1f stalls/10 min, excess mean %6.1f ms, p95 %6.1f ms\n", float64(f.delay)*tickMs, per10(f.stalls), f.mean, f.p95)
		}
	}
	if f, ok := bestFixed(fixed, excessP95Target); ok {
		fmt.Fprintf(out, "the fixed delay with the fewest stalls within the p95 target (%.0f ms): %.0f ms, %.1f stalls per 10 min, excess mean %.1f ms, p95 %.1f ms\n",
			excessP95Target, float64(f.delay)*tickMs, per10(f.stalls), f.mean, f.p95)
	} else {
		fmt.Fprintf(out, "no fixed delay up to 1 s keeps the p95 within the target (%.0f ms)\n", excessP95Target)
	}
	if *trace == "4g" && *spike == "hold" {
		var spikes []int
		for o := nettrace.SpikeOnset; o < d; o += nettrace.SpikeEvery {
			spikes = append(spikes, int(o/period))
		}
		spikeBound(out, tr, spikes, excessP95Target, lockstep.SlowestPlay)
	}
	t, fx, qu, or := results[0], results[1], results[3], results[4]
	// What beats the engine on both counts, fewer stalls and less delay:
	// every whole millisecond of fixed delay from 0 to 1,000 (played on
	// render ticks, a delay of m ms plays as the next tick's), and the
	// three baselines.
	beaten := 0
	var by []string
	for m := 0; m <= 1000; m++ {
		f := fixed[min(len(fixed)-1, int(math.Ceil(float64(m)/tickMs-1e-9)))]
		if f.stalls < t.stalls && f.mean < t.excessMean {
			beaten++
			if len(by) == 0 || !strings.HasPrefix(by[len(by)-1], fmt.Sprintf("fixed %.0f", float64(f.delay)*tickMs)) {
				by = append(by, fmt.Sprintf("fixed %.0f ms", float64(f.delay)*tickMs))
			}
		}
	}
	for _, b := range results[1:4] {
		if b.stalls < t.stalls && b.excessMean < t.excessMean {
			beaten++
			by = append(by, b.name)
		}
	}
	share150 := t.within150
	fmt.Fprintf(out, "fixed delays (whole ms, 0 to 1000) and baselines with both fewer stalls and less delay than the engine: %d %v\n", beaten, by)
	label := *trace
	if *trace == "4g" && *spike == "packet" {
		label = "4g-packet-spikes"
	}
	fmt.Fprintln(out, harness.Result("jitter",
		"trace", label,
		"excess_mean_ms", t.excessMean,
		"excess_p95_ms", t.excess95,
		"stalls_per_10min", per10(t.stalls),
		"oracle_stalls_per_10min", per10(or.stalls),
		"quantile_excess_mean_ms", qu.excessMean,
		"quantile_stalls_per_10min", per10(qu.stalls),
		"fixed2_stalls_per_10min", per10(fx.stalls),
		"rfc3550_excess_mean_ms", results[2].excessMean,
		"rfc3550_stalls_per_10min", per10(results[2].stalls),
		"beaten_by", beaten,
		"within150", fmt.Sprintf("%.4f", share150),
	))
	return nil
}

// oracleOf returns, for frames seen at render ticks seen, each frame's
// delay above the earliest arrival schedule (the render ticks after its
// cut, less the least of them, minD) and the oracle's delay for it: per
// oracle window, the smallest fixed delay (above that schedule) with no
// stall, the window's largest delay. Counted in render ticks, on which
// frames are cut and seen, so that nothing is rounded.
func oracleOf(seen []int64) (delay []int64, minD int64, oracle []int64) {
	delay = make([]int64, len(seen))
	minD = int64(math.MaxInt64)
	for n, k := range seen {
		delay[n] = k - int64(n)*ticksPerFrame // ticks after the frame's cut, for now
		minD = min(minD, delay[n])
	}
	for n := range delay {
		delay[n] -= minD
	}
	oracle = make([]int64, len(seen))
	for w := 0; w < len(seen); w += framesPerWindow {
		hi := int64(0)
		for n := w; n < min(w+framesPerWindow, len(seen)); n++ {
			hi = max(hi, delay[n])
		}
		for n := w; n < min(w+framesPerWindow, len(seen)); n++ {
			oracle[n] = hi
		}
	}
	return delay, minD, oracle
}

// rfc3550 returns a target of k times the RFC 3550 interarrival jitter
// estimate J, fed with each frame's delay.
func rfc3550(k float64) func(d float64) float64 {
	var last, j float64
	started := false
	return func(d float64) float64 {
		if started {
			j += (math.Abs(d-last) - j) / 16
		}
		last, started = d, true
		return k * j
	}
}

// ewQuantile tracks the q quantile of delay by stochastic approximation
// with exponential forgetting (step a of the current estimate's scale).
func ewQuantile(q, a float64) func(d float64) float64 {
	est, scale := 0.0, 10.0
	return func(d float64) float64 {
		scale += (math.Abs(d-est) - scale) * a
		if d > est {
			est += a * q * 10 * scale
		} else {
			est -= a * (1 - q) * 10 * scale
		}
		est = math.Max(est, 0)
		return est
	}
}

// meanP95 returns the mean of the excess delays and their 95th
// percentile; it sorts xs.
func meanP95(xs []float64) (mean, p95 float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	sort.Float64s(xs)
	for _, x := range xs {
		mean += x
	}
	return mean / float64(len(xs)), xs[int(0.95*float64(len(xs)-1))]
}

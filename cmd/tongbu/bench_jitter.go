package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

func init() {
	scenarios["jitter"] = scenario{
		"the client's jitter buffer beside three baselines and the hindsight oracle on seeded delay traces",
		benchJitter,
	}
}

const (
	jitterHz        = 15
	jitterRenderHz  = 60
	jitterRedundant = 3 // frames repeated in each packet, as the room does by default
	oracleWindow    = 10 * time.Second
)

// packetTrace is one downlink packet's fate: its one-way delay, or lost.
type packetTrace struct {
	delay time.Duration
	lost  bool
}

// makeTrace generates the seeded packet trace of a named network.
func makeTrace(name string, packets int, seed uint64) ([]packetTrace, error) {
	rng := rand.New(rand.NewPCG(seed, 11))
	tr := make([]packetTrace, packets)
	period := time.Second / jitterHz
	switch name {
	case "clean": // a wired link: under 2 ms of jitter, no loss
		for i := range tr {
			tr[i].delay = 20*time.Millisecond + time.Duration(rng.Float64()*2e6)
		}
	case "4g": // 30 ms one way, about 15 ms MAPDV2, 1% loss, two +300 ms spikes a minute
		spikeEvery := int(30 * time.Second / period)
		for i := range tr {
			tr[i].delay = 30*time.Millisecond + time.Duration(math.Abs(rng.NormFloat64())*25e6)
			tr[i].lost = rng.Float64() < 0.01
			if i%spikeEvery == spikeEvery/2 { // a radio retransmission holds one packet back
				tr[i].delay += 300 * time.Millisecond
			}
		}
	case "wifi": // heavy-tailed jitter (about 40 ms MAPDV2), 5% loss in bursts
		bad := false
		for i := range tr {
			const shape = 2.2
			u := 1 - rng.Float64()
			tr[i].delay = 20*time.Millisecond + time.Duration(40e6*(math.Pow(u, -1/shape)-1)*(shape-1))
			if bad {
				bad = rng.Float64() > 0.4 // bursts of 2.5 packets
			} else {
				bad = rng.Float64() < 0.021 // 5% of packets in bad state
			}
			tr[i].lost = bad
		}
	default:
		return nil, fmt.Errorf("unknown trace %q (clean, 4g, wifi)", name)
	}
	return tr, nil
}

// at returns the exact time of tick n of a clock running hz times a
// second: n/hz seconds, computed without accumulating a rounded period.
func at(start time.Time, n int64, hz int64) time.Time {
	return start.Add(time.Duration(n * int64(time.Second) / hz))
}

// frameArrivals turns packet fates into frame arrivals: packet k carries
// frames k-R .. k, so frame n arrives with the first of packets n .. n+R
// that is not lost; if all are, a retransmission arrives a round trip
// after the last. Arrivals are seen at the next render tick.
func frameArrivals(tr []packetTrace, start time.Time) []time.Time {
	out := make([]time.Time, len(tr)-jitterRedundant-1)
	for n := range out {
		var best time.Time
		for k := n; k <= n+jitterRedundant; k++ {
			if t := at(start, int64(k), jitterHz).Add(tr[k].delay); !tr[k].lost && (best.IsZero() || t.Before(best)) {
				best = t
			}
		}
		if best.IsZero() {
			k := n + jitterRedundant + 1
			best = at(start, int64(k), jitterHz).Add(3 * tr[k].delay)
		}
		// Seen at the next render tick.
		tick := (int64(best.Sub(start))*jitterRenderHz + int64(time.Second) - 1) / int64(time.Second)
		out[n] = at(start, tick, jitterRenderHz)
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

// policyResult measures one playout over a trace.
type policyResult struct {
	name                 string
	excessMean, excess95 float64 // ms above the oracle
	stalls               int
	fastSlow             time.Duration
}

func benchJitter(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("jitter", flag.ContinueOnError)
	trace := fs.String("trace", "4g", "network: clean, 4g or wifi")
	minutes := fs.Float64("minutes", 30, "trace length")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *minutes <= 0 {
		return errors.New("want -minutes > 0")
	}
	d := time.Duration(*minutes * float64(time.Minute))
	period := time.Second / jitterHz
	tr, err := makeTrace(*trace, int(d/period)+jitterRedundant+2, *seed)
	if err != nil {
		return err
	}
	start := time.Unix(1_000_000, 0)
	arr := frameArrivals(tr, start)

	// The oracle: per 10 s window, the smallest fixed delay (above the
	// earliest arrival schedule) with no stall: the window's largest delay.
	sched := make([]float64, len(arr)) // ms after the frame's nominal time
	minD := math.Inf(1)
	for n, t := range arr {
		sched[n] = float64(t.Sub(at(start, int64(n), jitterHz))) / 1e6
		minD = math.Min(minD, sched[n])
	}
	perWindow := int(oracleWindow / period)
	oracle := make([]float64, len(arr))
	for w := 0; w < len(arr); w += perWindow {
		hi := 0.0
		for n := w; n < min(w+perWindow, len(arr)); n++ {
			hi = math.Max(hi, sched[n]-minD)
		}
		for n := w; n < min(w+perWindow, len(arr)); n++ {
			oracle[n] = hi
		}
	}
	// Packet-level MAPDV2, as the trace's jitter figure.
	var mean, mapdv float64
	for i, p := range tr {
		dd := float64(p.delay) / 1e6
		if i == 0 {
			mean = dd
		}
		mean += (dd - mean) / 16
		mapdv += (math.Abs(dd-mean) - mapdv) / 16
	}

	fixed2 := func(float64) float64 { return 2 * 1000.0 / jitterHz }
	rfc := rfc3550(3)
	quant := ewQuantile(0.95, 0.01)
	policies := []struct {
		name string
		p    playout
		jb   *lockstep.JitterBuffer
	}{
		{name: "tongbu (MAPDV2 + window max, fast/slow play)"},
		{name: "fixed 2-frame buffer", p: newScheduled(fixed2)},
		{name: "RFC 3550 jitter x3", p: newScheduled(rfc)},
		{name: "0.95 quantile, exponential forgetting", p: newScheduled(quant)},
	}
	policies[0].jb = lockstep.NewJitterBuffer(jitterHz)
	policies[0].p = policies[0].jb

	order := make([]int, len(arr))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return arr[order[i]].Before(arr[order[j]]) })
	var results []policyResult
	for _, pol := range policies {
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
			}
			stalled = st == lockstep.Paused && to == played
			for ; played < to && played < len(arr); played++ {
				delay := float64(now.Sub(at(start, int64(played), jitterHz)))/1e6 - minD
				excess = append(excess, delay-oracle[played])
			}
			if now.Sub(start) > d+time.Minute {
				break
			}
		}
		r := policyResult{name: pol.name, stalls: stalls}
		sort.Float64s(excess)
		for _, e := range excess {
			r.excessMean += e
		}
		r.excessMean /= float64(max(len(excess), 1))
		r.excess95 = excess[int(0.95*float64(len(excess)-1))]
		if pol.jb != nil {
			st := pol.jb.Stats()
			r.fastSlow = st.Fast + st.Slow
		}
		results = append(results, r)
	}
	per10 := func(n int) float64 { return float64(n) * 10 / *minutes }
	fmt.Fprintf(out, "jitter: trace %s, %g minutes, %d Hz frames, packets carry the newest frame and %d before it\n", *trace, *minutes, jitterHz, jitterRedundant)
	fmt.Fprintf(out, "packet MAPDV2 %.1f ms; oracle: the smallest fixed delay with no stall in each %v window\n\n", mapdv, oracleWindow)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "playout\texcess mean ms\texcess p95 ms\tstalls/10 min\tfast or slow\t")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%v\t\n", r.name, r.excessMean, r.excess95, per10(r.stalls), r.fastSlow.Round(time.Second))
	}
	fmt.Fprintf(tw, "oracle\t0.0\t0.0\t0.0\t\t\n")
	if err := tw.Flush(); err != nil {
		return err
	}
	t, fx, qu := results[0], results[1], results[3]
	fmt.Fprintln(out, resultLine("jitter",
		"trace", *trace,
		"excess_mean_ms", t.excessMean,
		"excess_p95_ms", t.excess95,
		"stalls_per_10min", per10(t.stalls),
		"oracle_stalls_per_10min", 0.0,
		"quantile_excess_mean_ms", qu.excessMean,
		"quantile_stalls_per_10min", per10(qu.stalls),
		"fixed2_stalls_per_10min", per10(fx.stalls),
		"rfc3550_excess_mean_ms", results[2].excessMean,
		"rfc3550_stalls_per_10min", per10(results[2].stalls),
	))
	return nil
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

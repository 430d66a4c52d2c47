package world

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
)

// reportIn is what run measured, for the report.
type reportIn struct {
	tick, tickWall, baseTick []time.Duration
	worldAlloc               uint64
	upCPU                    time.Duration // of the ticks, handling uplinks
	st0, st                  interest.Stats
	cross                    int64
	wall                     time.Duration
}

// quantile returns the q-quantile of v by nearest rank, or 0 when v is
// empty.
func quantile[T int64 | time.Duration | int](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// mean returns the mean of v, or 0 when v is empty.
func mean[T int64 | time.Duration | int](v []T) float64 {
	if len(v) == 0 {
		return 0
	}
	var t float64
	for _, x := range v {
		t += float64(x)
	}
	return t / float64(len(v))
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// clientRates is each player's bytes a second over the measured window:
// sent by the interest server (ours), by the baseline, and up; and the
// sums of the two servers' over the city and the field players.
type clientRates struct {
	ours, base, up                             []int64
	cityBytes, fieldBytes, cityBase, fieldBase float64
	nCity                                      int
}

// clientRates returns the players' bytes a second over the measured
// window.
func (s *worldSim) clientRates() clientRates {
	secs := s.o.seconds
	n := len(s.players)
	r := clientRates{ours: make([]int64, n), base: make([]int64, n), up: make([]int64, n)}
	for i, p := range s.players {
		r.ours[i] = int64(float64(p.bytes) / secs)
		r.base[i] = int64(float64(p.baseBytes) / secs)
		r.up[i] = int64(float64(p.upBytes) / secs)
		if p.city >= 0 {
			r.nCity++
			r.cityBytes += float64(r.ours[i])
			r.cityBase += float64(r.base[i])
		} else {
			r.fieldBytes += float64(r.ours[i])
			r.fieldBase += float64(r.base[i])
		}
	}
	return r
}

// discoveryTimes is how the discovery episodes ended, for each side: the
// times to know a region, the regions left before they were known, and
// the episode sides still open.
type discoveryTimes struct {
	oursEp, baseEp     []time.Duration
	oursGone, baseGone int
	open               int
}

// discoveryTimes tallies the episodes of the sampled players.
func (s *worldSim) discoveryTimes() discoveryTimes {
	var t discoveryTimes
	// An episode ended when the mover knew the region (at frames), or
	// when it left the region first (gone); else it is still open.
	tally := func(at int, gone bool, eps *[]time.Duration, goneN *int) {
		switch {
		case at >= 0:
			*eps = append(*eps, time.Duration(at)*s.period)
		case gone:
			*goneN++
		default:
			t.open++
		}
	}
	for _, e := range s.episodes {
		tally(e.ours, e.gone, &t.oursEp, &t.oursGone)
		tally(e.base, e.gone, &t.baseEp, &t.baseGone)
	}
	return t
}

// report prints the figures of the measured window, the interest server
// beside the baseline, and the RESULT line.
func (s *worldSim) report(out io.Writer, in reportIn) error {
	secs := s.o.seconds
	n := len(s.players)
	r := s.clientRates()
	ours, base, up := r.ours, r.base, r.up
	cityBytes, fieldBytes, cityBase, fieldBase, nCity := r.cityBytes, r.fieldBytes, r.cityBase, r.fieldBase, r.nCity
	t := s.discoveryTimes()
	oursEp, baseEp, oursGone, baseGone, open := t.oursEp, t.baseEp, t.oursGone, t.baseGone, t.open
	d := func(a, b int64) float64 { return float64(b-a) / secs / float64(n) }
	st0, st := in.st0, in.st
	diverged := s.base.diverged(s.w)

	fmt.Fprintf(out, "(simulated in %v; server measured by %s)\n\n", in.wall.Round(time.Millisecond), harness.ThreadClock)
	fmt.Fprintf(out, "environment over the measured %.0f s: player region crossings %.2f/s each (seed: 0.5), NPC %.3f/s each (seed: 0.1)\n",
		secs, float64(in.cross)/secs/float64(n), float64(st.Crossings-st0.Crossings-in.cross)/secs/float64(max(1, len(s.npcs))))
	fmt.Fprintf(out, "discovery followed for %d sampled players (every %d-th): %d regions taken in with someone there (%d empty, not counted)\n\n",
		(n+s.o.sample-1)/s.o.sample, s.o.sample, len(s.episodes), s.epEmpt)

	fmt.Fprintf(out, "%-34s %14s %14s\n", "", "interest", "JX1 baseline")
	fmt.Fprintf(out, "%-34s %14.2f %14.2f\n", "server ms per tick, mean", mean(in.tick)/1e6, mean(in.baseTick)/1e6)
	fmt.Fprintf(out, "%-34s %14.2f %14.2f\n", "server ms per tick, p50", ms(quantile(in.tick, .5)), ms(quantile(in.baseTick, .5)))
	fmt.Fprintf(out, "%-34s %14.2f %14.2f\n", "server ms per tick, p99", ms(quantile(in.tick, .99)), ms(quantile(in.baseTick, .99)))
	fmt.Fprintf(out, "%-34s %14.2f %14.2f\n", "server ms per tick, max", ms(quantile(in.tick, 1)), ms(quantile(in.baseTick, 1)))
	fmt.Fprintf(out, "%-34s %14.0f %14.0f\n", "bytes per client per second, mean", mean(ours), mean(base))
	fmt.Fprintf(out, "%-34s %14d %14d\n", "bytes per client per second, p99", quantile(ours, .99), quantile(base, .99))
	fmt.Fprintf(out, "%-34s %14.0f %14.0f\n", "  city players, mean", cityBytes/float64(max(1, nCity)), cityBase/float64(max(1, nCity)))
	fmt.Fprintf(out, "%-34s %14.0f %14.0f\n", "  field players, mean", fieldBytes/float64(max(1, n-nCity)), fieldBase/float64(max(1, n-nCity)))
	fmt.Fprintf(out, "%-34s %14.0f %14.0f\n", "discovery ms, p50", ms(quantile(oursEp, .5)), ms(quantile(baseEp, .5)))
	fmt.Fprintf(out, "%-34s %14.0f %14.0f\n", "discovery ms, p99", ms(quantile(oursEp, .99)), ms(quantile(baseEp, .99)))
	fmt.Fprintf(out, "%-34s %14d %14d\n", "  regions left before known", oursGone, baseGone)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "interest server: %.2f ms of the mean tick handle uplinks; wall ms per tick p50 %.2f p99 %.2f (2 shared cores); %.0f bytes allocated per tick\n",
		ms(in.upCPU)/float64(max(1, len(in.tick))), ms(quantile(in.tickWall, .5)), ms(quantile(in.tickWall, .99)), float64(in.worldAlloc)/float64(max(1, len(in.tick))))
	fmt.Fprintf(out, "interest per client per second: %.1f packets down, %.1f packets and %.0f B up (acks, commands, requests)\n",
		d(st0.PacketsOut, st.PacketsOut), d(st0.PacketsIn, st.PacketsIn), mean(up))
	fmt.Fprintf(out, "  of the downlink: display data %.0f B/s; entities sent by announcement %.1f/s, forced sync %.1f/s, discovery %.1f/s, state sync %.1f/s, repair %.1f/s\n",
		d(st0.ReliableOut, st.ReliableOut), d(st0.Enters, st.Enters), d(st0.ForcedSyncs, st.ForcedSyncs),
		d(st0.Discoveries, st.Discoveries), d(st0.StateSyncs, st.StateSyncs), d(st0.Repairs, st.Repairs))
	fmt.Fprintf(out, "  without display data (which the baseline does not carry): %.0f B/s mean\n", mean(ours)-d(st0.ReliableOut, st.ReliableOut))
	if len(s.cfg.Groups) > 0 {
		fmt.Fprintf(out, "  of the display data, field group records %.0f B/s (%d groups; %.0f changes sent a second)\n",
			d(st0.GroupBits, st.GroupBits)/8, len(s.cfg.Groups), float64(st.GroupChanges-st0.GroupChanges)/secs)
	}
	fmt.Fprintf(out, "  corrections %d, budget deferrals %d, uplink drops %v\n", st.Corrections-st0.Corrections, st.Deferred-st0.Deferred, drops(st0, st))
	fmt.Fprintf(out, "baseline: the same commands byte-aligned (%s) plus %d-byte NPC_NORMAL_SYNC every 2 frames per region,\n",
		jxLayouts, jxSyncSize)
	fmt.Fprintf(out, "  no packet headers counted (the interest figures include theirs); positions checked against the world: %d differ\n", diverged)
	if open > 0 {
		fmt.Fprintf(out, "%d episode sides still open at the end (not counted)\n", open)
	}
	fmt.Fprintln(out)
	fmt.Fprintln(out, harness.Result("world",
		"players", n, "npcs", len(s.npcs),
		"tick_p99_ms", ms(quantile(in.tick, .99)),
		"client_bps_mean", int64(mean(ours)+0.5),
		"client_bps_p99", quantile(ours, .99),
		"discover_p99_ms", int64(ms(quantile(oursEp, .99))+0.5),
		"baseline_client_bps_mean", int64(mean(base)+0.5),
		"baseline_discover_p99_ms", int64(ms(quantile(baseEp, .99))+0.5),
		// Like for like with the baseline, which carries no display data.
		"sync_bps_mean", int64(mean(ours)-d(st0.ReliableOut, st.ReliableOut)+0.5),
		"groups", len(s.cfg.Groups),
		"group_changes_per_s", int64(float64(st.GroupChanges-st0.GroupChanges)/secs+0.5),
	))
	return nil
}

// drops returns the uplinks the world dropped between its stats a and b,
// by reason, for the reasons with any.
func drops(a, b interest.Stats) map[string]int64 {
	m := map[string]int64{}
	for i := range b.Dropped {
		if n := b.Dropped[i] - a.Dropped[i]; n > 0 {
			m[interest.DropName(i)] = n
		}
	}
	return m
}

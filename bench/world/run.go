package world

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
)

// run plays warm-up and measurement and prints the figures.
func (s *worldSim) run(out io.Writer) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hz := s.cfg.Hz
	warm := int(s.o.warmup * float64(hz))
	total := warm + int(s.o.seconds*float64(hz))
	lastEpisode := total - 4*hz // episodes start early enough to be followed to the end
	var m measured
	if s.o.ticks != "" {
		m.frames = make([]frameRec, 0, total-warm) // for -ticks
	}
	var st0 interest.Stats
	var cross0 int64
	rc := newRuntimeCounters()
	wall0 := time.Now()
	for f := 1; f <= total; f++ {
		s.frame = f
		if f == warm+1 {
			s.measuring = true
			s.advise(out, "after warm-up")
			st0, cross0 = s.w.Stats(), s.playerCross
		}
		now := s.start.Add(time.Duration(f) * s.period)
		t := s.serverFrame(f, now, rc)
		base := s.baselineFrame(f)
		if s.measuring {
			s.record(&m, f, t, base, rc)
		}
		s.clientsFrame(f, now)
		s.follow(f <= lastEpisode)
	}
	wall := time.Since(wall0)
	st := s.w.Stats()
	if s.o.ticks != "" {
		if err := writeTicks(s.o.ticks, st0, m.frames); err != nil {
			return err
		}
	}
	return s.report(out, reportIn{tick: m.tick, tickWall: m.tickWall, baseTick: m.baseTick, worldAlloc: m.worldAlloc, upCPU: m.upCPU,
		st0: st0, st: st, cross: s.playerCross - cross0, wall: wall})
}

// serverTimes is what serverFrame measured of one frame of the interest
// server: CPU time handling the uplinks and in the whole of its work,
// wall time of the same, and bytes allocated.
type serverTimes struct {
	up, tick time.Duration // CPU time
	wall     time.Duration
	alloc    uint64
}

// serverFrame runs the interest server's part of frame f and measures it.
//
// The server: uplinks, then the frame. The model's game logic in
// between (which NPC walks, who hits whom) calls the world's API
// but is not timed.
func (s *worldSim) serverFrame(f int, now time.Time, rc *runtimeCounters) serverTimes {
	a0, w0, c0 := rc.allocated(), time.Now(), harness.ThreadCPU()
	batch := s.batch[:0]
	s.up.sent(f-max(s.o.delay, 1), func(i int32, b []byte) {
		batch = append(batch, interest.Uplink{Player: s.players[i].id, Msg: b})
	})
	s.w.DeliverAll(batch)
	s.batch = batch
	c1, w1 := harness.ThreadCPU(), time.Now()
	s.npcLogic()
	if s.groups != nil {
		s.groupLogic(f)
	}
	c2, w2 := harness.ThreadCPU(), time.Now()
	s.w.Tick(now)
	c3, w3, a1 := harness.ThreadCPU(), time.Now(), rc.allocated()
	return serverTimes{up: c1 - c0, tick: c1 - c0 + c3 - c2, wall: w1.Sub(w0) + w3.Sub(w2), alloc: a1 - a0}
}

// baselineFrame runs the baseline's part of frame f and returns its CPU
// time: the same commands, JX1's state sync.
func (s *worldSim) baselineFrame(f int) time.Duration {
	s.pending = s.base.commandsDue(s.pending, f)
	b0 := harness.ThreadCPU()
	s.base.tick(f)
	b1 := harness.ThreadCPU()
	return b1 - b0
}

// clientsFrame runs the clients' part of frame f: each takes what its
// downlink brings, acts by the model, and sends its packet up.
func (s *worldSim) clientsFrame(f int, now time.Time) {
	s.down.sent(f-s.o.delay, func(i int32, b []byte) { _ = s.players[i].c.Deliver(now, b) })
	for _, p := range s.players {
		p.c.Advance(now)
		s.drive(p)
		if pkt := p.c.Packet(now); pkt != nil {
			if s.measuring {
				p.upBytes += int64(len(pkt))
			}
			s.up.push(f, p.index, pkt)
		}
	}
}

// measured gathers the measured frames' figures for the report and, with
// -ticks, a record of each frame.
type measured struct {
	tick, tickWall, baseTick []time.Duration
	upCPU                    time.Duration // of the ticks, handling uplinks
	worldAlloc               uint64
	frames                   []frameRec
}

// record adds measured frame f to m: the interest server's times t, the
// baseline's tick, and the bytes each server sent each player.
func (s *worldSim) record(m *measured, f int, t serverTimes, base time.Duration, rc *runtimeCounters) {
	s.down.sent(f, func(i int32, b []byte) { s.players[i].bytes += int64(len(b)) })
	m.tick = append(m.tick, t.tick)
	m.upCPU += t.up
	if s.o.ticks != "" {
		m.frames = append(m.frames, frameRec{frame: f, up: t.up, tick: t.tick, base: base, st: s.w.Stats(), gc: rc.collections()})
	}
	m.tickWall = append(m.tickWall, t.wall)
	m.baseTick = append(m.baseTick, base)
	m.worldAlloc += t.alloc
	for i, p := range s.players {
		p.baseBytes += int64(s.base.sent[i])
	}
}

// runtimeCounters reads the Go runtime's counters that run records: the
// bytes allocated on the heap and the garbage collections begun.
type runtimeCounters struct {
	alloc, gcs []metrics.Sample
}

// newRuntimeCounters returns counters ready to read.
func newRuntimeCounters() *runtimeCounters {
	return &runtimeCounters{
		alloc: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}},
		gcs:   []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}},
	}
}

// allocated returns the bytes allocated on the heap since the process
// started.
func (r *runtimeCounters) allocated() uint64 { metrics.Read(r.alloc); return r.alloc[0].Value.Uint64() }

// collections returns the garbage collections begun since the process
// started.
func (r *runtimeCounters) collections() uint64 { metrics.Read(r.gcs); return r.gcs[0].Value.Uint64() }

// advise asks for huge pages for the heap's new mappings (-hugepages)
// and says what it got; without -hugepages it does nothing (benchWorld
// says so once).
func (s *worldSim) advise(out io.Writer, when string) {
	if !s.o.hugePages {
		return
	}
	rep, err := s.huge.Advise()
	if err != nil {
		fmt.Fprintf(out, "heap: huge pages %s: %v\n", when, err)
		return
	}
	var huge string
	switch {
	case rep.Huge >= 0:
		huge = fmt.Sprintf("%.0f MB of the process on huge pages", float64(rep.Huge)/(1<<20))
	case rep.Advised == 0:
		huge = "how much of the process is on huge pages not read (nothing advised)"
	default:
		huge = "the kernel does not say how much of the process is on huge pages"
	}
	fmt.Fprintf(out, "heap: huge pages %s: THP mode %q, %.0f MB of the heap advised, %s\n",
		when, rep.Mode, float64(rep.Advised)/(1<<20), huge)
}

// frameRec is one measured frame, for -ticks: the interest server's
// uplink and whole tick CPU times, the baseline's, and the world's
// counters after the frame.
type frameRec struct {
	frame          int
	up, tick, base time.Duration
	st             interest.Stats
	gc             uint64 // garbage collections begun by the end of the frame
}

// writeTicks writes one line per measured frame: its times in
// milliseconds and what the world did in it (from the counters' change
// since the frame before; st0 is before the first), and the garbage
// collections begun since the process started.
func writeTicks(name string, st0 interest.Stats, frames []frameRec) error {
	var b strings.Builder
	b.WriteString("frame up_ms tick_ms baseline_ms packets_in bytes_in packets_out bytes_out reliable_out crossings forced discoveries gc_total\n")
	prev := st0
	for _, r := range frames {
		st := r.st
		fmt.Fprintf(&b, "%d %.3f %.3f %.3f %d %d %d %d %d %d %d %d %d\n", r.frame, ms(r.up), ms(r.tick), ms(r.base),
			st.PacketsIn-prev.PacketsIn, st.BytesIn-prev.BytesIn, st.PacketsOut-prev.PacketsOut, st.BytesOut-prev.BytesOut,
			st.ReliableOut-prev.ReliableOut, st.Crossings-prev.Crossings, st.ForcedSyncs-prev.ForcedSyncs, st.Discoveries-prev.Discoveries, r.gc)
		prev = st
	}
	return os.WriteFile(name, []byte(b.String()), 0o644)
}

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
	var tick, tickWall, baseTick []time.Duration
	var frames []frameRec // for -ticks
	if s.o.ticks != "" {
		frames = make([]frameRec, 0, total-warm)
	}
	var upCPU time.Duration
	var worldAlloc uint64
	var st0 interest.Stats
	var cross0 int64
	alloc := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	readAlloc := func() uint64 { metrics.Read(alloc); return alloc[0].Value.Uint64() }
	gcs := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	readGCs := func() uint64 { metrics.Read(gcs); return gcs[0].Value.Uint64() }
	wall0 := time.Now()
	for f := 1; f <= total; f++ {
		s.frame = f
		if f == warm+1 {
			s.measuring = true
			s.advise(out, "after warm-up")
			st0, cross0 = s.w.Stats(), s.playerCross
		}
		now := s.start.Add(time.Duration(f) * s.period)

		// The server: uplinks, then the frame. The model's game logic in
		// between (which NPC walks, who hits whom) calls the world's API
		// but is not timed.
		a0, w0, c0 := readAlloc(), time.Now(), harness.ThreadCPU()
		batch := s.batch[:0]
		s.up.sent(f-max(s.o.delay, 1), func(i int32, b []byte) {
			batch = append(batch, interest.Uplink{Player: s.players[i].id, Msg: b})
		})
		s.w.DeliverAll(batch)
		s.batch = batch
		c1, w1 := harness.ThreadCPU(), time.Now()
		s.npcLogic()
		c2, w2 := harness.ThreadCPU(), time.Now()
		s.w.Tick(now)
		c3, w3, a1 := harness.ThreadCPU(), time.Now(), readAlloc()

		// The baseline: the same commands, JX1's state sync.
		keep := s.pending[:0]
		for _, c := range s.pending {
			if c.due <= f {
				s.base.command(c)
			} else {
				keep = append(keep, c)
			}
		}
		s.pending = keep
		b0 := harness.ThreadCPU()
		s.base.tick(f)
		b1 := harness.ThreadCPU()

		if s.measuring {
			s.down.sent(f, func(i int32, b []byte) { s.players[i].bytes += int64(len(b)) })
			t := c1 - c0 + c3 - c2
			tick = append(tick, t)
			upCPU += c1 - c0
			if s.o.ticks != "" {
				frames = append(frames, frameRec{frame: f, up: c1 - c0, tick: t, base: b1 - b0, st: s.w.Stats(), gc: readGCs()})
			}
			tickWall = append(tickWall, w1.Sub(w0)+w3.Sub(w2))
			baseTick = append(baseTick, b1-b0)
			worldAlloc += a1 - a0
			for i, p := range s.players {
				p.baseBytes += int64(s.base.sent[i])
			}
		}

		// The clients.
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
		s.follow(f <= lastEpisode)
	}
	wall := time.Since(wall0)
	st := s.w.Stats()
	if s.o.ticks != "" {
		if err := writeTicks(s.o.ticks, st0, frames); err != nil {
			return err
		}
	}
	return s.report(out, reportIn{tick: tick, tickWall: tickWall, baseTick: baseTick, worldAlloc: worldAlloc, upCPU: upCPU,
		st0: st0, st: st, cross: s.playerCross - cross0, wall: wall})
}

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

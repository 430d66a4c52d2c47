//go:build !js

package replica

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/replica"
	"github.com/tongbu/tongbu/replica/replicatest"
)

func init() {
	harness.Register("replica",
		"seed-004 replication: 10,000 guilds, 1% changing per second, 8 subscribers, one restarted every 10 s; deltas and a ring vs a full snapshot every period",
		benchReplica)
}

// replicaParams are the scenario's knobs.
type replicaParams struct {
	guilds      int
	subscribers int
	seconds     float64 // simulated time with changes
	rate        float64 // fraction of guilds changing per second
	restart     time.Duration
	period      time.Duration // commit period (and the baseline's snapshot period)
	ring        int
	loss        float64
	seed        uint64
}

// replicaStep is the simulation's time step; the bus is drained after each,
// so a message takes no simulated time to arrive.
const replicaStep = 50 * time.Millisecond

func benchReplica(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("replica", flag.ContinueOnError)
	p := replicaParams{}
	fs.IntVar(&p.guilds, "guilds", 10_000, "guilds in the world")
	fs.IntVar(&p.subscribers, "subscribers", 8, "game servers following the world")
	fs.Float64Var(&p.seconds, "seconds", 120, "simulated seconds of changes")
	fs.Float64Var(&p.rate, "rate", 0.01, "fraction of the guilds changing per second")
	fs.DurationVar(&p.restart, "restart", 10*time.Second, "restart one subscriber this often")
	fs.DurationVar(&p.period, "period", time.Second, "commit period, and the baseline's snapshot period")
	fs.IntVar(&p.ring, "ring", 64, "deltas kept in the ring")
	fs.Float64Var(&p.loss, "loss", 0.01, "bus loss (and as much reordering and duplication)")
	fs.Uint64Var(&p.seed, "seed", 1, "seed of the changes and the bus")
	quick := fs.Bool("quick", false, "2,000 guilds for 40 simulated seconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick {
		p.guilds, p.seconds = 2000, 40
	}
	if p.guilds <= 0 || p.subscribers <= 0 || p.seconds <= 0 || p.rate < 0 || p.ring <= 0 || p.period < replicaStep || p.restart <= 0 || p.loss < 0 || p.loss >= 0.5 {
		return errors.New("want positive -guilds, -subscribers, -seconds, -ring, -restart, -period >= 50ms, 0 <= -loss < 0.5")
	}
	dir, where, err := replicaDir()
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	fmt.Fprintf(out, "replica: %d guilds, %.1f%% changing per second, %d subscribers, one restarted every %v, %.0f s simulated, commit every %v, ring %d, bus loss/reorder/duplicate %.1f%%, files in %s\n",
		p.guilds, 100*p.rate, p.subscribers, p.restart, p.seconds, p.period, p.ring, 100*p.loss, where)
	wall := time.Now()
	eng, err := runReplicaEngine(p, dir)
	if err != nil {
		return err
	}
	engWall := time.Since(wall)
	wall = time.Now()
	base, err := runReplicaBaseline(p)
	if err != nil {
		return err
	}
	baseWall := time.Since(wall)

	fmt.Fprintf(out, "%-44s %14s %12s %16s %9s %8s\n", "", "bytes/s", "full resyncs", "converge p99 ms", "diverged", "wall")
	fmt.Fprintf(out, "%-44s %14d %12d %16d %9d %8v\n", "engine: deltas + ring of "+fmt.Sprint(p.ring), int64(eng.bytesPerS), eng.fullResyncs, eng.p99.Milliseconds(), eng.diverged, engWall.Round(time.Millisecond))
	fmt.Fprintf(out, "%-44s %14d %12d %16d %9d %8v\n", "baseline: full snapshot every period, no ring", int64(base.bytesPerS), base.fullResyncs, base.p99.Milliseconds(), base.diverged, baseWall.Round(time.Millisecond))
	if eng.bytesPerS > 0 {
		fmt.Fprintf(out, "baseline/engine bytes: %.1fx\n", base.bytesPerS/eng.bytesPerS)
	}
	fmt.Fprintf(out, "engine: %d restarts from the subscriber's file; the restarted instances loaded %d full snapshots and applied %d deltas; initial snapshots (not counted as resyncs): %d; converge = from a guild's change to every subscriber holding it\n",
		eng.restarts, eng.restartFulls, eng.restartDeltas, eng.initialFulls)
	fmt.Fprintln(out, harness.Result("replica", "subscribers", p.subscribers, "bytes_per_s", int64(eng.bytesPerS),
		"full_resyncs", eng.fullResyncs, "converge_p99_ms", eng.p99.Milliseconds(), "diverged", eng.diverged))
	return nil
}

// replicaDir returns a directory for the files: in memory (/dev/shm) when
// the system has one, as the seed keeps its copies in shared memory.
func replicaDir() (dir, where string, err error) {
	if d, err := os.MkdirTemp("/dev/shm", "tongbu-replica-"); err == nil {
		return d, "/dev/shm", nil
	}
	d, err := os.MkdirTemp("", "tongbu-replica-")
	return d, "a temporary directory", err
}

type replicaOutcome struct {
	bytesPerS     float64
	fullResyncs   int
	initialFulls  int
	p99           time.Duration
	diverged      int
	restarts      int
	restartFulls  int
	restartDeltas int
}

// changer makes the scenario's seeded changes to a set of guilds.
type changer struct {
	rng    *rand.Rand
	guilds []replicatest.Guild
	carry  float64
}

func newChanger(p replicaParams) *changer {
	c := &changer{rng: rand.New(rand.NewPCG(p.seed, 4)), guilds: make([]replicatest.Guild, p.guilds)}
	for i := range c.guilds {
		c.guilds[i] = replicatest.Guild{Name: fmt.Sprintf("guild-%d", i), Level: uint8(1 + i%100), Members: uint16(10 + i%400), Funds: uint32(i * 37), Leader: uint64(1_000_000 + i), Notice: "recruiting"}
	}
	return c
}

// step changes rate*guilds*dt guilds and returns their indices.
func (c *changer) step(rate float64, dt time.Duration) []int {
	c.carry += rate * float64(len(c.guilds)) * dt.Seconds()
	var changed []int
	for ; c.carry >= 1; c.carry-- {
		i := c.rng.IntN(len(c.guilds))
		g := &c.guilds[i]
		switch c.rng.IntN(3) {
		case 0:
			g.Members = uint16(min(500, max(1, int(g.Members)+c.rng.IntN(9)-4)))
		case 1:
			g.Funds += uint32(c.rng.IntN(1000))
		default:
			g.Level = uint8(min(100, int(g.Level)+1))
		}
		changed = append(changed, i)
	}
	return changed
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[(len(d)*99)/100]
}

type engineSub struct {
	cfg       replica.SubscriberConfig
	sub       *replica.Subscriber
	guilds    *replica.Mirror[replicatest.Guild, *replicatest.Guild]
	seen      int64 // highest version whose latency is recorded
	restarted bool  // this instance replaced a crashed one
}

func runReplicaEngine(p replicaParams, dir string) (replicaOutcome, error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	bus := replica.NewLocalBusWithConfig(replica.LocalBusConfig{Seed: p.seed, Loss: p.loss, Reorder: p.loss, Duplicate: p.loss})
	defer bus.Close()
	now := time.Unix(1_700_000_000, 0)
	pub, err := replica.NewPublisher(bus, replica.PublisherConfig{Name: "world", Path: filepath.Join(dir, "world"), Ring: p.ring, CommitInterval: p.period, Logger: quiet})
	if err != nil {
		return replicaOutcome{}, err
	}
	src, err := replica.NewSource[replicatest.Guild](pub, "guilds")
	if err != nil {
		return replicaOutcome{}, err
	}
	ch := newChanger(p)
	for i, g := range ch.guilds {
		if err := src.Set(uint64(i), g); err != nil {
			return replicaOutcome{}, err
		}
	}
	if err := pub.Start(now); err != nil {
		return replicaOutcome{}, err
	}
	defer pub.Close()
	subs := make([]*engineSub, p.subscribers)
	start := func(i int, restarted bool) error {
		s := subs[i]
		sub, err := replica.NewSubscriber(bus, s.cfg)
		if err != nil {
			return err
		}
		m, err := replica.NewMirror[replicatest.Guild](sub, "guilds")
		if err != nil {
			return err
		}
		if err := sub.Start(now); err != nil {
			return err
		}
		s.sub, s.guilds, s.restarted = sub, m, restarted
		return nil
	}
	for i := range subs {
		subs[i] = &engineSub{cfg: replica.SubscriberConfig{Publisher: "world", ID: fmt.Sprintf("game-%d", i), Path: filepath.Join(dir, fmt.Sprintf("game-%d", i)),
			ReportTimeout: 500 * time.Millisecond, MaxReportInterval: 4 * time.Second, SaveInterval: 2 * time.Second, Logger: quiet}}
		if err := start(i, false); err != nil {
			return replicaOutcome{}, err
		}
	}

	var out replicaOutcome
	var (
		pendingSince time.Time               // oldest change not yet in a version
		changedAt    = map[int64]time.Time{} // version -> oldest change in it
		lat          []time.Duration
		lastVer      = int64(src.Version())
		bytesFrom    uint64
		measureFrom  time.Time
		settled      bool
		nextRestart  = p.restart
		restartIdx   int
		elapsed      time.Duration
		changeFor    = time.Duration(p.seconds * float64(time.Second))
		settleFor    = 30 * time.Second
		fullsBefore  uint64
		ended        bool
		bytesAt      = func() uint64 { return bus.Stats().Bytes }
	)
	for elapsed = 0; elapsed < changeFor+settleFor; elapsed += replicaStep {
		now = now.Add(replicaStep)
		if elapsed < changeFor {
			for _, i := range ch.step(p.rate, replicaStep) {
				if err := src.Set(uint64(i), ch.guilds[i]); err != nil {
					return out, err
				}
				if pendingSince.IsZero() {
					pendingSince = now
				}
			}
		} else if !ended {
			ended = true
			out.bytesPerS = float64(bytesAt()-bytesFrom) / now.Sub(measureFrom).Seconds()
		}
		if elapsed < changeFor && elapsed >= nextRestart {
			nextRestart += p.restart
			s := subs[restartIdx%len(subs)]
			restartIdx++
			st := s.sub.Stats()
			if s.restarted {
				out.restartFulls += int(st.FullLoads)
				out.restartDeltas += int(st.Deltas)
			}
			fullsBefore += st.FullLoads
			s.sub.Close() // a crash: no save, the in-memory copy is gone
			if err := start(slices.Index(subs, s), true); err != nil {
				return out, err
			}
			out.restarts++
		}
		if err := pub.Tick(now); err != nil {
			return out, err
		}
		if v := int64(src.Version()); v != lastVer {
			for x := lastVer + 1; x <= v; x++ {
				changedAt[x] = pendingSince
			}
			lastVer, pendingSince = v, time.Time{}
		}
		for _, s := range subs {
			if err := s.sub.Tick(now); err != nil {
				return out, err
			}
		}
		bus.Drain()
		allCaughtUp := true
		for _, s := range subs {
			v := s.guilds.Version()
			for x := s.seen + 1; x <= v; x++ {
				if at, ok := changedAt[x]; ok && settled {
					lat = append(lat, now.Sub(at))
				}
			}
			s.seen = max(s.seen, v)
			allCaughtUp = allCaughtUp && v == lastVer
		}
		if !settled && allCaughtUp {
			// The initial snapshots are in: measure from here.
			settled, bytesFrom, measureFrom = true, bytesAt(), now
			for _, s := range subs {
				out.initialFulls += int(s.sub.Stats().FullLoads)
			}
		}
	}
	for _, s := range subs {
		st := s.sub.Stats()
		if s.restarted {
			out.restartFulls += int(st.FullLoads)
			out.restartDeltas += int(st.Deltas)
		}
		fullsBefore += st.FullLoads
		if s.guilds.Version() != lastVer || s.guilds.Len() != src.Len() || !sameGuilds(src, s.guilds) {
			out.diverged++
		}
		s.sub.Close()
	}
	out.fullResyncs = int(fullsBefore) - out.initialFulls
	out.p99 = p99(lat)
	return out, nil
}

func sameGuilds(src *replica.Source[replicatest.Guild, *replicatest.Guild], m *replica.Mirror[replicatest.Guild, *replicatest.Guild]) bool {
	ok := true
	src.Range(func(id uint64, v replicatest.Guild) bool {
		got, found := m.Get(id)
		ok = found && got == v
		return ok
	})
	return ok
}

// runReplicaBaseline sends every subscriber a full snapshot of every guild
// each period (no deltas, no ring, no versions to report), split into bus
// messages and compressed as the engine's snapshots are, over the same
// lossy bus. A restarted subscriber simply waits for the next snapshot.
func runReplicaBaseline(p replicaParams) (replicaOutcome, error) {
	bus := replica.NewLocalBusWithConfig(replica.LocalBusConfig{Seed: p.seed, Loss: p.loss, Reorder: p.loss, Duplicate: p.loss})
	defer bus.Close()
	ch := newChanger(p)
	type baseSub struct {
		mu     sync.Mutex
		reasm  *codec.Reassembler
		guilds []replicatest.Guild
		period int // the period of the snapshot it holds
		loads  int
	}
	now := time.Unix(1_700_000_000, 0)
	var clock sync.Mutex // now, as the subscribers' goroutines see it
	subs := make([]*baseSub, p.subscribers)
	for i := range subs {
		s := &baseSub{reasm: codec.NewReassembler(codec.ReassemblerConfig{MaxBytes: 64 << 20, MaxParts: codec.MaxPartsLimit}), period: -1}
		subs[i] = s
		cancel, err := bus.Subscribe("baseline.snapshot", func(msg []byte) {
			f, _, err := codec.ReadFrame(msg)
			if err != nil {
				return
			}
			clock.Lock()
			t := now
			clock.Unlock()
			s.mu.Lock()
			defer s.mu.Unlock()
			whole, err := s.reasm.Add(t, f)
			if err != nil || whole == nil {
				return
			}
			raw, err := codec.Decompress(nil, whole, 64<<20)
			if err != nil {
				return
			}
			r := codec.NewReader(raw)
			period := int(r.ReadUvarint())
			n := int(r.ReadUvarint())
			if r.Err() != nil || n > len(raw) || period <= s.period {
				return
			}
			guilds := make([]replicatest.Guild, n)
			for j := range guilds {
				if err := guilds[j].DecodeFull(r); err != nil {
					return
				}
			}
			s.guilds, s.period = guilds, period
			s.loads++
		})
		if err != nil {
			return replicaOutcome{}, err
		}
		defer cancel()
	}
	split := codec.Splitter{Limit: replica.DefaultMaxMessage, MaxParts: codec.MaxPartsLimit}
	var (
		out          replicaOutcome
		lat          []time.Duration
		pendingSince time.Time
		changedAt    = map[int]time.Time{}
		period       = 0
		lastSend     = now
		changeFor    = time.Duration(p.seconds * float64(time.Second))
		settleFor    = 30 * time.Second
		bytesFrom    uint64
		measureFrom  = now
		nextRestart  = p.restart
		restartIdx   int
		w            codec.Writer
		seen         = make([]int, len(subs))
	)
	for elapsed := time.Duration(0); elapsed < changeFor+settleFor; elapsed += replicaStep {
		clock.Lock()
		now = now.Add(replicaStep)
		clock.Unlock()
		if elapsed < changeFor {
			if len(ch.step(p.rate, replicaStep)) > 0 && pendingSince.IsZero() {
				pendingSince = now
			}
		} else if out.bytesPerS == 0 {
			out.bytesPerS = float64(bus.Stats().Bytes-bytesFrom) / now.Sub(measureFrom).Seconds()
		}
		if elapsed < changeFor && elapsed >= nextRestart {
			nextRestart += p.restart
			s := subs[restartIdx%len(subs)]
			restartIdx++
			s.mu.Lock()
			s.guilds, s.period = nil, -1
			s.mu.Unlock()
		}
		if now.Sub(lastSend) >= p.period {
			lastSend = now
			period++
			changedAt[period] = pendingSince
			pendingSince = time.Time{}
			w.Reset(w.Bytes())
			w.WriteUvarint(uint64(period))
			w.WriteUvarint(uint64(len(ch.guilds)))
			for i := range ch.guilds {
				ch.guilds[i].EncodeFull(&w)
			}
			packed := codec.Compress(nil, w.Bytes())
			if err := split.Split(1, packed, func(packet []byte) error { return bus.Publish("baseline.snapshot", packet) }); err != nil {
				return out, err
			}
		}
		bus.Drain()
		for i, s := range subs {
			s.mu.Lock()
			for x := seen[i] + 1; x <= s.period; x++ {
				if at := changedAt[x]; !at.IsZero() && x > 1 {
					lat = append(lat, now.Sub(at))
				}
			}
			seen[i] = max(seen[i], s.period)
			s.mu.Unlock()
		}
	}
	for _, s := range subs {
		s.mu.Lock()
		if !slices.Equal(s.guilds, ch.guilds) {
			out.diverged++
		}
		out.fullResyncs += s.loads
		s.mu.Unlock()
	}
	out.p99 = p99(lat)
	return out, nil
}

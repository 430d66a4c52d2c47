package world

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/hugepage"
)

func init() {
	harness.Register("world",
		"interest mode in seed 000's environment (6400 players, 28800 NPCs, 16 Hz) beside JX1's state sync",
		benchWorld)
}

// worldModel is the scenario's environment and behaviour model (seed 000,
// section 3.2), printed in its header. Every random draw comes from one
// PCG seeded by -seed.
//
// Map: the default 64 x 64 regions of 1024 units (16 m; 64 units = 1 m).
// Four cities of 12 x 12 regions, one in each quarter of the map, are city
// regions (Config.City); the rest is field.
//
// NPCs (28,800): placed uniformly over the whole map, each with a home,
// spawned from templates as an MMO's are: 64 looks (8 names, 8 looks
// each, a camp each), each 8x8-region zone using 4 of them. Players each
// have a look and a name of their own.
// Every 5-20 s an NPC not in a fight walks to a random point within 1.5
// regions of its home at 12-24 units a frame (3-6 m/s). An NPC a player
// fights stands, strikes back every 2 s (a skill broadcast, 3-8 life off
// the player) and dies at 0 life; it rises 20 s later with full life.
//
// Players (6,400): 40% in the cities, spread evenly over the four (4.4 a
// region: the seed's 4-6), 60% in the field in parties of 5 around a
// party spot. Each runs a small state machine through its own Client, so
// every command is a real uplink the world validates:
//   - city: idle 1-4 s; then 10% of the time an emote (a jump or a 2-byte
//     custom command) and idle again, else a walk to a random point within
//     4 regions, inside its city, at 24 units a frame (6 m/s) or, half the
//     time, at the top speed of 64 (16 m/s). No fighting in cities (seed
//     5.1.2).
//   - field: idle 0.5-2.5 s; then 30% of the time a fight: run to the
//     nearest standing, living NPC no one fights within its 3x3 range,
//     target it (SetTarget), cast a skill on it every 1.5 s (20-35 life
//     off) until it dies, then rest 8 s if below 40 life; otherwise a trip
//     to a random point within 3 regions of its party spot at 64 units a
//     frame (24 one time in five), the spot itself moving up to 3 regions
//     one trip in five.
//
// The movement rates come out near the seed's (section 5.3): a player
// crosses a region border about 0.45 times a second (seed: 0.5), an NPC
// about 0.1 (seed: 0.1); the scenario prints the measured rates.
var worldModel = []string{
	"map: 64x64 regions of 16 m (1024 units); four 12x12-region cities (Config.City), the rest field",
	"NPCs: uniform over the map, from 64 templates (each 8x8-region zone uses 4); players each look unique",
	"  NPCs every 5-20 s walk within 1.5 regions of home at 3-6 m/s; fight back every 2 s; die at 0 life, rise after 20 s",
	"players: 40% in cities (4.4 a region), 60% in the field in parties of 5; each drives its own interest.Client",
	"  city: idle 1-4 s; 10%: jump or 2-byte emote; else walk within 4 regions (in town) at 6 m/s, half at 16 m/s; no fighting",
	"  field: idle 0.5-2.5 s; 30%: run to the nearest free NPC in range, target it, skill every 1.5 s (20-35 life) until it dies",
	"         (rest 8 s if below 40 life); else run within 3 regions of the party spot at 16 m/s (1/5 at 6 m/s); the spot moves",
	"         up to 3 regions 1 trip in 5",
}

// worldWebRTC runs the scenario over real WebRTC (rtc.go; not in js
// builds).
var worldWebRTC func(o worldOpts, out io.Writer) error

// npcZone is the side, in regions, of a zone of NPC templates.
const npcZone = 8

// citySide is a city's side in regions: 2,560 city players over four
// cities of 12 x 12 regions is the seed's 4-6 players a region.
const citySide = 12

// Player states of the model.
const (
	stIdle = iota
	stWalk
	stApproach
	stFight
	stRest
)

type worldOpts struct {
	players, npcs   int
	warmup, seconds float64
	delay           int // one-way delay in frames
	sample          int // every sample-th player is followed for discovery
	forced          time.Duration
	seed            uint64
	ticks           string     // file for each measured frame's times
	hugePages       bool       // advise the heap to use transparent huge pages
	profile         string     // -transport webrtc: the server's CPU profile of the measured window
	bots            bots.Shape // -transport webrtc: how the bots' process runs
}

// link carries one direction's packets for every player with a fixed
// delay in frames: each frame's packets are copied, in order, into one
// arena, which the receiving side reads when they are due.
type link struct {
	batches []batch // by frame modulo len
}

type batch struct {
	frame int
	data  []byte
	pkts  []linkPkt
}

type linkPkt struct {
	to       int32 // index in worldSim.players
	off, end int32
}

func newLink(delay int) *link { return &link{batches: make([]batch, delay+2)} }

// push queues msg for player i, sent at frame f.
func (l *link) push(f int, i int32, msg []byte) {
	b := &l.batches[f%len(l.batches)]
	if b.frame != f {
		b.frame, b.data, b.pkts = f, b.data[:0], b.pkts[:0]
	}
	off := int32(len(b.data))
	b.data = append(b.data, msg...)
	b.pkts = append(b.pkts, linkPkt{i, off, int32(len(b.data))})
}

// sent calls fn for every packet sent at frame f, in order.
func (l *link) sent(f int, fn func(i int32, msg []byte)) {
	if f < 0 {
		return
	}
	b := &l.batches[f%len(l.batches)]
	if b.frame != f {
		return
	}
	for _, p := range b.pkts {
		fn(p.to, b.data[p.off:p.end:p.end])
	}
}

type wplayer struct {
	id      interest.ID
	c       *interest.Client
	city    int // -1: field
	spot    interest.Vec
	state   int
	until   int
	target  interest.ID
	nextHit int
	life    int
	sampled bool
	reg     interest.Region
	index   int32 // in worldSim.players

	bytes, upBytes, baseBytes int64

	knows map[interest.ID]*baseKnown // baseline knowledge (sampled players)
	open  []*episode
}

type baseKnown struct {
	from int // frame from which the client knows it
	doom int
}

type wnpc struct {
	id      interest.ID
	home    interest.Vec
	next    int
	fighter interest.ID // the player fighting it
	nextHit int
	life    int
	rise    int // frame it rises again, when dead
}

// episode is a region a sampled player's range took in: the entities there
// then, and when each side first knew all of those still there.
type episode struct {
	reg        interest.Region
	start      int
	ids        []interest.ID
	ours, base int // frames to know them all; -1 while not yet
	gone       bool
}

type worldSim struct {
	o      worldOpts
	cfg    interest.Config
	w      *interest.World
	base   *jx1
	rng    *rand.Rand
	start  time.Time
	frame  int
	period time.Duration
	cities [4][2]interest.Region // min and max region of each city

	players  []*wplayer
	npcs     []*wnpc
	byPlayer []*wplayer // by entity ID
	byNPC    []*wnpc
	// The players' IDs run on from firstPlayer in the order of players, so
	// that the Sender finds a player's index without loading the player.
	firstPlayer interest.ID

	down, up    *link
	batch       []interest.Uplink // a frame's uplinks, for World.DeliverAll
	measuring   bool
	pending     []jxCmd // player commands on their way up, for the baseline
	playerCross int64
	episodes    []*episode
	epEmpt      int
	huge        hugepage.Advisor
}

// SendUnreliable and SendReliable are the world's Sender: the packet is
// put on the player's downlink (and counted against the player after the
// tick, which the transport's work does not include).
func (s *worldSim) SendUnreliable(id interest.ID, msg []byte) error {
	s.down.push(s.frame, int32(id-s.firstPlayer), msg)
	return nil
}

func (s *worldSim) SendReliable(id interest.ID, msg []byte) error { return s.SendUnreliable(id, msg) }

func benchWorld(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("world", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a shorter run of the same scenario (CI)")
	o := worldOpts{}
	fs.IntVar(&o.players, "players", 6400, "players")
	fs.IntVar(&o.npcs, "npcs", 28800, "NPCs")
	fs.Float64Var(&o.seconds, "seconds", 60, "simulated seconds measured")
	fs.Float64Var(&o.warmup, "warmup", 10, "simulated seconds run before measuring (every client learns its range)")
	fs.IntVar(&o.delay, "delay", 1, "one-way delay in frames (62.5 ms each at 16 Hz)")
	fs.IntVar(&o.sample, "sample", 4, "follow every n-th player for discovery times")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	fs.DurationVar(&o.forced, "forced", 625*time.Millisecond, "the world's Config.ForcedSync (the engine's default is 2s)")
	profile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file (webrtc: of the server over the measured window, and the bots' to this file.bots)")
	o.bots.Flags(fs)
	memProfile := fs.String("memprofile", "", "write a heap profile at the end of the run to this file")
	fs.StringVar(&o.ticks, "ticks", "", "write a line for each measured frame to this file: its server times (uplinks, whole tick, baseline) and what the world did in it")
	via := fs.String("transport", "mem", "mem: the in-memory scenario above; webrtc: the players are bots in a second process over real WebRTC on loopback (-players, -npcs, -seconds, -warmup, -seed, -forced apply)")
	fs.BoolVar(&o.hugePages, "hugepages", true, "ask Linux for transparent huge pages for the heap (both servers' and the clients'), after setup and again after warm-up, as tongbu serve does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *quick { // shorter, unless asked otherwise
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["warmup"] {
			o.warmup = 4
		}
		if !set["seconds"] {
			o.seconds = 8
		}
	}
	if o.players < 1 || o.npcs < 0 || o.players+o.npcs >= interest.DefaultMaxEntities || o.seconds < 1 || o.warmup < 0 || o.delay < 0 || o.sample < 1 {
		return errors.New("want 1 <= -players, 0 <= -npcs, players+npcs < 65536, -seconds >= 1, -warmup >= 0, -delay >= 0, -sample >= 1")
	}
	switch *via {
	case "mem":
	case "webrtc":
		if worldWebRTC == nil {
			return errors.New("-transport webrtc: not in this build (js)")
		}
		o.profile = *profile // the measured window's, with -transport webrtc
		return worldWebRTC(o, out)
	default:
		return fmt.Errorf("-transport %q: want mem or webrtc", *via)
	}
	s, err := newWorldSim(o)
	if err != nil {
		return err
	}
	if *profile != "" {
		stop, err := harness.StartCPUProfile(*profile)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Fprintf(out, "world: %d players, %d NPCs, %d Hz, %.0f s warm-up then %.0f s measured (virtual time), %d frame(s) one way, seed %d\n",
		o.players, o.npcs, s.cfg.Hz, o.warmup, o.seconds, o.delay, o.seed)
	fmt.Fprintf(out, "interest config: defaults but ForcedSync %v (engine default %v) and City as below\n", s.cfg.ForcedSync, interest.DefaultForcedSync)
	for _, l := range worldModel {
		fmt.Fprintln(out, "  "+l)
	}
	if !o.hugePages {
		fmt.Fprintln(out, "heap: huge pages not asked for (-hugepages=false): the system's setting decides")
	}
	s.advise(out, "after setup")
	if err := s.run(out); err != nil {
		return err
	}
	if *memProfile != "" {
		err := harness.WriteHeapProfile(*memProfile)
		runtime.KeepAlive(s) // the world and its clients are what the profile is for
		return err
	}
	return nil
}

func newWorldSim(o worldOpts) (*worldSim, error) {
	s := &worldSim{o: o, rng: rand.New(rand.NewPCG(o.seed, 0x6000)), start: time.Unix(1e9, 0)}
	for i := range s.cities {
		cx, cy := 6+40*(i%2), 6+40*(i/2)
		s.cities[i] = [2]interest.Region{{X: cx, Y: cy}, {X: cx + citySide - 1, Y: cy + citySide - 1}}
	}
	s.cfg = interest.Config{City: func(r interest.Region) bool { return s.cityOf(r) >= 0 }, ForcedSync: o.forced}
	w, err := interest.NewWorld(s.cfg, s.start, s)
	if err != nil {
		return nil, err
	}
	s.w, s.cfg = w, w.Config()
	s.period = s.cfg.Period()
	s.down, s.up = newLink(o.delay), newLink(max(o.delay, 1))
	s.base = newJX1(s.cfg)
	n := o.players + o.npcs + 1
	s.byPlayer, s.byNPC = make([]*wplayer, n), make([]*wnpc, n)
	s.base.sampled = make([]bool, n)
	s.base.heard = s.heard

	// NPC templates: each of the 8 names in 8 looks, a camp each; every
	// 8x8-region zone of the map spawns from 4 of them.
	names := []string{"野狼", "山贼", "巡逻卫兵", "药铺掌柜", "毒蛇", "恶霸", "流寇头目", "黑熊"}
	var templates []interest.Display
	for _, name := range names {
		for range 8 {
			templates = append(templates, interest.Display{Appearance: s.rng.Uint32(), Name: name, Camp: uint8(s.rng.IntN(4))})
		}
	}
	zoneW := (s.cfg.Width + npcZone - 1) / npcZone
	zones := make([][4]int, zoneW*((s.cfg.Height+npcZone-1)/npcZone))
	for i := range zones {
		for j := range zones[i] {
			zones[i][j] = s.rng.IntN(len(templates))
		}
	}
	for range o.npcs {
		pos := s.randIn(interest.Region{}, interest.Region{X: s.cfg.Width - 1, Y: s.cfg.Height - 1})
		lg := interest.Logic{Pos: pos, Life: 100, Mana: 100}
		r := s.w.RegionOf(pos)
		d := templates[zones[r.Y/npcZone*zoneW+r.X/npcZone][s.rng.IntN(4)]]
		id, err := w.Spawn(interest.NPC, lg, d)
		if err != nil {
			return nil, err
		}
		s.base.spawn(id, false, lg, d.Camp)
		npc := &wnpc{id: id, home: pos, next: s.rng.IntN(16 * s.cfg.Hz), life: 100}
		s.npcs = append(s.npcs, npc)
		s.byNPC[id] = npc
	}
	city := o.players * 2 / 5
	var spot interest.Vec
	for i := range o.players {
		p := &wplayer{city: -1, life: 100, sampled: i%o.sample == 0}
		var pos interest.Vec
		if i < city {
			p.city = i % len(s.cities)
			pos = s.randIn(s.cities[p.city][0], s.cities[p.city][1])
		} else {
			if (i-city)%5 == 0 {
				spot = s.fieldPos()
			}
			p.spot = spot
			pos = s.clamp(s.around(spot, s.cfg.RegionSize))
		}
		lg := interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100}
		d := interest.Display{Appearance: s.rng.Uint32(), Name: fmt.Sprintf("侠客%04d", i), Camp: uint8(s.rng.IntN(4))}
		id, err := w.Spawn(interest.Player, lg, d)
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.firstPlayer = id
		} else if id != s.firstPlayer+interest.ID(i) {
			return nil, fmt.Errorf("bench world: player %d got ID %d, not %d: the IDs after the NPCs' are not in order", i, id, s.firstPlayer+interest.ID(i))
		}
		s.base.spawn(id, true, lg, d.Camp)
		if err := w.Join(id); err != nil {
			return nil, err
		}
		if p.c, err = interest.NewClient(s.cfg, id); err != nil {
			return nil, err
		}
		p.id, p.reg, p.until, p.index = id, w.RegionOf(pos), s.rng.IntN(4*s.cfg.Hz), int32(len(s.players))
		if p.sampled {
			p.knows = map[interest.ID]*baseKnown{}
			s.base.sampled[id] = true
		}
		s.players = append(s.players, p)
		s.byPlayer[id] = p
	}
	return s, nil
}

func (s *worldSim) cityOf(r interest.Region) int {
	for i, c := range s.cities {
		if r.X >= c[0].X && r.X <= c[1].X && r.Y >= c[0].Y && r.Y <= c[1].Y {
			return i
		}
	}
	return -1
}

// randIn returns a random position inside the regions lo..hi.
func (s *worldSim) randIn(lo, hi interest.Region) interest.Vec {
	rs := s.cfg.RegionSize
	return interest.Vec{
		X: int32(lo.X*rs + s.rng.IntN((hi.X-lo.X+1)*rs)),
		Y: int32(lo.Y*rs + s.rng.IntN((hi.Y-lo.Y+1)*rs)),
	}
}

func (s *worldSim) fieldPos() interest.Vec {
	for {
		p := s.randIn(interest.Region{}, interest.Region{X: s.cfg.Width - 1, Y: s.cfg.Height - 1})
		if s.cityOf(s.w.RegionOf(p)) < 0 {
			return p
		}
	}
}

// around returns a random point within d units of p on each axis.
func (s *worldSim) around(p interest.Vec, d int) interest.Vec {
	return interest.Vec{X: p.X + int32(s.rng.IntN(2*d+1)-d), Y: p.Y + int32(s.rng.IntN(2*d+1)-d)}
}

func (s *worldSim) clamp(p interest.Vec) interest.Vec {
	hi := s.cfg.Bounds()
	p.X = min(max(p.X, 0), hi.X)
	p.Y = min(max(p.Y, 0), hi.Y)
	return p
}

// clampTo keeps p within d units of q on each axis (a move's reach).
func clampTo(p, q interest.Vec, d int32) interest.Vec {
	p.X = min(max(p.X, q.X-d), q.X+d)
	p.Y = min(max(p.Y, q.Y-d), q.Y+d)
	return p
}

func (s *worldSim) secs(lo, hi float64) int {
	return int((lo + s.rng.Float64()*(hi-lo)) * float64(s.cfg.Hz))
}

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

// issue records a player's command for the baseline, which applies it when
// the world does: when the uplink carrying it arrives.
func (s *worldSim) issue(c jxCmd) {
	c.due = s.frame + max(s.o.delay, 1)
	s.pending = append(s.pending, c)
}

// drive plays one player's state machine through its client.
func (s *worldSim) drive(p *wplayer) {
	me, ok := p.c.Self()
	if !ok {
		return
	}
	f := s.frame
	switch p.state {
	case stIdle, stRest:
		if f < p.until {
			return
		}
		if p.state == stRest {
			p.life = 100
			s.setLife(p.id, p.life, false)
		}
		if p.city >= 0 {
			s.cityDecide(p, me)
		} else {
			s.fieldDecide(p, me)
		}
	case stWalk:
		if !me.Moving() {
			s.idle(p)
		}
	case stApproach:
		npc := s.byNPC[p.target]
		if npc.life <= 0 || (npc.fighter != 0 && npc.fighter != p.id) {
			p.target = 0
			s.idle(p)
			return
		}
		if me.Moving() {
			return
		}
		npc.fighter, npc.nextHit = p.id, f+s.cfg.Hz
		p.state, p.nextHit = stFight, f
		_ = s.w.SetTarget(p.id, npc.id)
		s.setLife(p.id, p.life, true)
	case stFight:
		npc := s.byNPC[p.target]
		if f >= p.nextHit {
			if p.c.Skill(uint16(100+s.rng.IntN(8)), npc.id) == nil {
				s.issue(jxCmd{tag: cmdSkill, id: p.id, frame: p.c.Frame(), skill: 100, target: npc.id})
				npc.life = max(0, npc.life-20-s.rng.IntN(16))
				s.setLife(npc.id, npc.life, npc.life > 0)
			}
			p.nextHit = f + s.cfg.Hz*3/2
		}
		if npc.life > 0 {
			return
		}
		npc.fighter, npc.rise = 0, f+20*s.cfg.Hz
		s.setState(npc.id, 1)
		p.target = 0
		_ = s.w.SetTarget(p.id, 0)
		s.setLife(p.id, p.life, false)
		if p.life < 40 {
			p.state, p.until = stRest, f+8*s.cfg.Hz
			return
		}
		s.idle(p)
	}
}

func (s *worldSim) idle(p *wplayer) {
	p.state = stIdle
	if p.city >= 0 {
		p.until = s.frame + s.secs(1, 4)
	} else {
		p.until = s.frame + s.secs(0.5, 2.5)
	}
}

func (s *worldSim) move(p *wplayer, me interest.Logic, dest interest.Vec, speed int32) {
	dest = clampTo(s.clamp(dest), me.Pos, int32(s.cfg.MaxMove))
	if p.c.Move(dest, speed) != nil {
		s.idle(p)
		return
	}
	s.issue(jxCmd{tag: cmdMove, id: p.id, frame: p.c.Frame(), src: me.Pos, dest: dest, speed: speed})
	p.state = stWalk
}

func (s *worldSim) cityDecide(p *wplayer, me interest.Logic) {
	if r := s.rng.Float64(); r < 0.1 {
		if r < 0.05 {
			if p.c.Jump() == nil {
				s.issue(jxCmd{tag: cmdJump, id: p.id, frame: p.c.Frame()})
			}
		} else {
			data := []byte{byte(s.rng.IntN(32)), 0}
			if p.c.Custom(1, data) == nil {
				s.issue(jxCmd{tag: cmdCustom, id: p.id, frame: p.c.Frame(), ctag: 1, data: data})
			}
		}
		s.idle(p)
		return
	}
	c := s.cities[p.city]
	rs := int32(s.cfg.RegionSize)
	dest := s.around(me.Pos, 4*s.cfg.RegionSize)
	dest.X = min(max(dest.X, int32(c[0].X)*rs), int32(c[1].X+1)*rs-1)
	dest.Y = min(max(dest.Y, int32(c[0].Y)*rs), int32(c[1].Y+1)*rs-1)
	speed := int32(24)
	if s.rng.IntN(2) == 0 {
		speed = int32(s.cfg.MaxSpeed)
	}
	s.move(p, me, dest, speed)
}

func (s *worldSim) fieldDecide(p *wplayer, me interest.Logic) {
	if s.rng.Float64() < 0.3 {
		if npc := s.nearestFree(me.Pos); npc != nil {
			p.target = npc.id
			lg, _ := s.w.Logic(npc.id)
			s.move(p, me, s.around(lg.Pos, 48), int32(s.cfg.MaxSpeed))
			if p.state == stWalk {
				p.state = stApproach
			} else {
				p.target = 0
			}
			return
		}
	}
	if s.rng.IntN(5) == 0 {
		for range 8 {
			q := s.clamp(s.around(p.spot, 3*s.cfg.RegionSize))
			if s.cityOf(s.w.RegionOf(q)) < 0 {
				p.spot = q
				break
			}
		}
	}
	speed := int32(s.cfg.MaxSpeed)
	if s.rng.IntN(5) == 0 {
		speed = 24
	}
	s.move(p, me, s.around(p.spot, 3*s.cfg.RegionSize), speed)
}

// nearestFree returns the nearest standing, living NPC no one fights, in
// the 3x3 range of pos.
func (s *worldSim) nearestFree(pos interest.Vec) *wnpc {
	var best *wnpc
	var bestD int64
	s.w.Each(s.w.RegionOf(pos), func(id interest.ID, kind interest.Kind, lg *interest.Logic) {
		if kind != interest.NPC || lg.Moving() {
			return
		}
		n := s.byNPC[id]
		if n.life <= 0 || n.fighter != 0 {
			return
		}
		if d := pos.DistSq(lg.Pos); best == nil || d < bestD {
			best, bestD = n, d
		}
	})
	return best
}

// npcLogic is the NPCs' part of the model: wander, strike back, rise.
func (s *worldSim) npcLogic() {
	f := s.frame
	for _, n := range s.npcs {
		switch {
		case n.life <= 0:
			if f >= n.rise {
				n.life, n.next = 100, f+s.secs(5, 20)
				s.setLife(n.id, 100, false)
				s.setState(n.id, 0)
			}
		case n.fighter != 0:
			if f >= n.nextHit {
				p := s.byPlayer[n.fighter]
				if s.w.Skill(n.id, 200, p.id) == nil {
					s.base.command(jxCmd{tag: cmdSkill, id: n.id, frame: s.w.Frame(), skill: 200, target: p.id})
				}
				p.life = max(1, p.life-3-s.rng.IntN(6))
				s.setLife(p.id, p.life, true)
				n.nextHit = f + 2*s.cfg.Hz
			}
		case f >= n.next:
			lg, _ := s.w.Logic(n.id)
			dest := s.clamp(s.around(n.home, s.cfg.RegionSize*3/2))
			speed := int32(12 + s.rng.IntN(13))
			if s.w.Move(n.id, dest, speed) == nil {
				s.base.command(jxCmd{tag: cmdMove, id: n.id, frame: s.w.Frame(), src: lg.Pos, dest: dest, speed: speed})
			}
			n.next = f + s.secs(5, 20)
		}
	}
}

// setLife changes an entity's life and combat flag in the world (clients
// learn it by state sync) and in the baseline (it rides the next
// NPC_NORMAL_SYNC).
func (s *worldSim) setLife(id interest.ID, life int, combat bool) {
	_ = s.w.Update(id, func(lg *interest.Logic) { lg.Life, lg.Combat = uint8(life), combat })
	s.base.ents[id].life = uint8(life)
}

func (s *worldSim) setState(id interest.ID, state uint8) {
	_ = s.w.Update(id, func(lg *interest.Logic) { lg.State = state })
	s.base.ents[id].state = state
}

// heard is the baseline's report that a sampled player was sent an
// entity's state sync this frame: its client knows it once the packet
// arrives.
func (s *worldSim) heard(player, id interest.ID) {
	p := s.byPlayer[player]
	due := s.frame + s.o.delay
	if k := p.knows[id]; k != nil {
		k.doom = 0
		k.from = min(k.from, due)
		return
	}
	p.knows[id] = &baseKnown{from: due}
}

// follow tracks the sampled players' ranges: a region a range takes in
// opens an episode (if anyone is there), closed for each side when its
// client knows every entity that was there then and still is. It also
// applies the baseline client's removal rule (the interest client's: out
// of range for half a second).
func (s *worldSim) follow(open bool) {
	f := s.frame
	grace := s.cfg.Hz / 2
	for _, p := range s.players {
		lg, _ := s.w.Logic(p.id)
		reg := s.w.RegionOf(lg.Pos)
		moved := reg != p.reg
		if moved && s.measuring {
			s.playerCross++
		}
		if !p.sampled {
			p.reg = reg
			continue
		}
		if moved && s.measuring && open {
			s.openEpisodes(p, p.reg, reg)
		}
		p.reg = reg
		for id, k := range p.knows {
			if near(reg, s.base.region(id)) {
				k.doom = 0
			} else if k.doom++; k.doom > grace {
				delete(p.knows, id)
			}
		}
		keep := p.open[:0]
		for _, e := range p.open {
			if !near(reg, e.reg) {
				e.gone = true
				continue
			}
			ours, base := e.ours < 0, e.base < 0
			for _, id := range e.ids {
				if s.base.region(id) != e.reg {
					continue // it left: no longer required
				}
				if ours {
					if _, ok := p.c.Entity(id); !ok {
						ours = false
					}
				}
				if base {
					if k := p.knows[id]; k == nil || k.from > f {
						base = false
					}
				}
			}
			if ours {
				e.ours = f - e.start
			}
			if base {
				e.base = f - e.start
			}
			if e.ours < 0 || e.base < 0 {
				keep = append(keep, e)
			}
		}
		clear(p.open[len(keep):])
		p.open = keep
	}
}

func near(a, b interest.Region) bool {
	return a.X-b.X >= -1 && a.X-b.X <= 1 && a.Y-b.Y >= -1 && a.Y-b.Y <= 1
}

func (s *worldSim) openEpisodes(p *wplayer, from, to interest.Region) {
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			r := interest.Region{X: to.X + dx, Y: to.Y + dy}
			if r.X < 0 || r.Y < 0 || r.X >= s.cfg.Width || r.Y >= s.cfg.Height || near(from, r) {
				continue
			}
			ids := s.base.regions[s.base.index(r)].ents
			e := &episode{reg: r, start: s.frame, ours: -1, base: -1}
			for _, id := range ids {
				if id != p.id {
					e.ids = append(e.ids, id)
				}
			}
			if len(e.ids) == 0 {
				s.epEmpt++
				continue
			}
			s.episodes = append(s.episodes, e)
			p.open = append(p.open, e)
		}
	}
}

type reportIn struct {
	tick, tickWall, baseTick []time.Duration
	worldAlloc               uint64
	upCPU                    time.Duration // of the ticks, handling uplinks
	st0, st                  interest.Stats
	cross                    int64
	wall                     time.Duration
}

func quantile[T int64 | time.Duration | int](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}

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

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func (s *worldSim) report(out io.Writer, in reportIn) error {
	secs := s.o.seconds
	n := len(s.players)
	ours, base, up := make([]int64, n), make([]int64, n), make([]int64, n)
	cityBytes, fieldBytes, cityBase, fieldBase := 0.0, 0.0, 0.0, 0.0
	nCity := 0
	for i, p := range s.players {
		ours[i] = int64(float64(p.bytes) / secs)
		base[i] = int64(float64(p.baseBytes) / secs)
		up[i] = int64(float64(p.upBytes) / secs)
		if p.city >= 0 {
			nCity++
			cityBytes += float64(ours[i])
			cityBase += float64(base[i])
		} else {
			fieldBytes += float64(ours[i])
			fieldBase += float64(base[i])
		}
	}
	var oursEp, baseEp []time.Duration
	oursGone, baseGone, open := 0, 0, 0
	// An episode ended when the mover knew the region (at frames), or
	// when it left the region first (gone); else it is still open.
	tally := func(at int, gone bool, eps *[]time.Duration, goneN *int) {
		switch {
		case at >= 0:
			*eps = append(*eps, time.Duration(at)*s.period)
		case gone:
			*goneN++
		default:
			open++
		}
	}
	for _, e := range s.episodes {
		tally(e.ours, e.gone, &oursEp, &oursGone)
		tally(e.base, e.gone, &baseEp, &baseGone)
	}
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
	))
	return nil
}

func drops(a, b interest.Stats) map[string]int64 {
	m := map[string]int64{}
	for i := range b.Dropped {
		if n := b.Dropped[i] - a.Dropped[i]; n > 0 {
			m[interest.DropName(i)] = n
		}
	}
	return m
}

package world

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
)

// init registers the mass-battle scenario with the tongbu-bench command.
func init() {
	harness.Register("battle",
		"seed 000's mass battle: 300 players fighting in each other's range (16 Hz) beside JX1's state sync",
		benchBattle)
}

// battleModel is the battle scenario's environment, printed in its
// header.
//
// Map and NPCs as the world scenario's (64 x 64 regions of 16 m, NPCs
// uniform at the seed's density, 7 a region, each wandering every 5-20 s
// within 1.5 regions of home), the world's configuration as shipped (its
// byte budget, peak shaving and state-sync tiers).
//
// The fight: -players players in a block of 2 x 2 regions at the map's
// centre (32 m a side), so that every one is in every other's 3x3 range,
// in two camps. Each, on its own phase, moves every second to a point up
// to 6 m away inside the block (at 6 m/s), and every 2 s casts a skill
// on an enemy near it (one cast in four on the nearest NPC); a hit takes
// 2-6 life and a player below 20 drinks back to full, so every fighter is
// in combat (the policy's fast tier).
//
// The runners: -runners players each start 3-4 regions outside the
// block, run into it at 16 m/s, stay 3 s, run back out and wait 1-3 s,
// again and again. Each region of the block that a runner's range takes
// in is an episode: it ends when the runner's client knows every entity
// that was in the region then and has stayed there since (new_entity_sync).
var battleModel = []string{
	"map and NPCs as the world scenario's (64x64 regions of 16 m; NPCs uniform, 7 a region, wandering); the world's config as shipped",
	"fight: the players in a 2x2-region block at the centre (all in each other's 3x3 range), two camps",
	"  each moves every second (6 m/s, up to 6 m, inside the block) and every 2 s casts a skill on an enemy near it",
	"  (1 cast in 4 on the nearest NPC); hits take 2-6 life, a player below 20 drinks back to full: all in combat",
	"runners: start 3-4 regions outside the block, run in at 16 m/s, stay 3 s, run out, wait 1-3 s, again;",
	"  a block region a runner's range takes in ends when its client knows every entity there (new_entity_sync)",
}

// battleOpts are the battle scenario's flags.
type battleOpts struct {
	players, runners, npcs int
	warmup, seconds        float64
	delay                  int // one-way delay in frames (in memory)
	seed                   uint64
	oneWay                 time.Duration // -transport webrtc: the relay's delay each way
	profile                string        // -transport webrtc: the server's CPU profile of the measured window
	bots                   bots.Shape    // -transport webrtc: how the bots' process runs
}

// battleWebRTC runs the scenario over real WebRTC after the in-memory run
// (battle_rtc.go; not in js builds).
var battleWebRTC func(o battleOpts, mem battleFigures, out io.Writer) error

// benchBattle runs the scenario with its flags: in memory, every client
// in this process over an in-memory link; with -transport webrtc, that
// first (for the baseline, in the same invocation) and then the players
// as bots in a second process over real WebRTC through a delaying relay.
func benchBattle(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("battle", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a shorter run of the same scenario (CI)")
	o := battleOpts{}
	fs.IntVar(&o.players, "players", 300, "players in the fight")
	fs.IntVar(&o.runners, "runners", 16, "players running into the fight and out again")
	fs.IntVar(&o.npcs, "npcs", 28800, "NPCs over the map (28,800: the seed's 7 a region)")
	fs.Float64Var(&o.seconds, "seconds", 30, "seconds measured")
	fs.Float64Var(&o.warmup, "warmup", 6, "seconds run before measuring")
	fs.IntVar(&o.delay, "delay", 1, "in memory: one-way delay in frames (62.5 ms each at 16 Hz)")
	fs.Uint64Var(&o.seed, "seed", 1, "random seed")
	via := fs.String("transport", "mem", "mem: in memory; webrtc: the in-memory run, then the players as bots in a second process over real WebRTC (-one-way each way)")
	fs.DurationVar(&o.oneWay, "one-way", 25*time.Millisecond, "webrtc: the relay's delay each way (25 ms: a 50 ms round trip)")
	fs.StringVar(&o.profile, "cpuprofile", "", "webrtc: write the server's CPU profile of the measured window to this file (the bots' to it.bots)")
	o.bots.Flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *via != "mem" && *via != "webrtc" {
		return fmt.Errorf("-transport %q: want mem or webrtc", *via)
	}
	if *via == "webrtc" && battleWebRTC == nil {
		return errors.New("-transport webrtc: not in this build (js)")
	}
	if *quick {
		shorten(fs, &o.warmup, &o.seconds, 3, 6)
	}
	if o.players < 2 || o.runners < 0 || o.npcs < 0 || o.players+o.runners+o.npcs >= interest.DefaultMaxEntities ||
		o.seconds < 1 || o.warmup < 0 || o.delay < 0 {
		return errors.New("want 2 <= -players, 0 <= -runners, 0 <= -npcs, all < 65536, -seconds >= 1, -warmup, -delay >= 0")
	}
	s, err := newBattleSim(o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "battle: %d players fighting, %d runners, %d NPCs, %d Hz, %.0f s warm-up then %.0f s measured (virtual time), %d frame(s) one way, seed %d\n",
		o.players, o.runners, o.npcs, s.cfg.Hz, o.warmup, o.seconds, o.delay, o.seed)
	for _, l := range battleModel {
		fmt.Fprintln(out, "  "+l)
	}
	mem, err := s.run(out)
	if err != nil || *via == "mem" {
		return err
	}
	return battleWebRTC(o, mem, out)
}

// Runner states.
const (
	runOut   = iota // waiting outside
	runIn           // running into the block
	runStay         // in the block
	runLeave        // running back out
)

// bplayer is a player of the battle: a fighter or a runner.
type bplayer struct {
	id     interest.ID
	c      *interest.Client
	index  int32
	runner bool
	camp   uint8
	life   int
	// Fighters: the frames of the next move and cast.
	nextMove, nextCast int
	// Runners: state, until when, where it waits outside, where it runs to.
	state      int
	until      int
	home, goal interest.Vec
	reg        interest.Region
	knows      map[interest.ID]*baseKnown // runners: what the baseline's client knows
	open       []*episode

	bytes, upBytes, baseBytes int64
}

// sentCmd is a fighter's command on its way to the others in its range:
// who has it, and when it was given.
type sentCmd struct {
	actor *bplayer
	move  bool
	dest  interest.Vec
	frame int
	got   []bool // by player index: that client has it (or is not waited for)
	knew  []bool // by player index: that client knew the fighter when it gave the command
	left  int    // clients still waited for
	// leftKnew is those of them that knew the fighter: a client that did
	// not (a runner just in) can take a move only once it learns the
	// fighter, which new_entity_sync measures.
	leftKnew int
	closed   bool
}

// battleSim is the in-memory battle: the world, the baseline fed the
// same commands, every player's client, the links between them, and
// what the run measures.
type battleSim struct {
	o      battleOpts
	cfg    interest.Config
	w      *interest.World
	base   *jx1
	rng    *rand.Rand
	start  time.Time
	frame  int
	period time.Duration
	lo, hi interest.Vec // the block's corners

	players  []*bplayer
	byID     []*bplayer
	npcs     []*wnpc
	first    interest.ID
	down, up *link
	batch    []interest.Uplink
	pending  []jxCmd // commands on their way up, for the baseline

	measuring   bool
	sent        []*sentCmd
	latency     []time.Duration // of the commands given while measuring, to every client in range
	latKnew     []time.Duration // the same, to the clients that knew the fighter
	undeliv     int             // commands some client never had within cmdTimeout
	undelivKnew int             // commands some client that knew the fighter never had
	episodes    []*episode
}

// SendUnreliable and SendReliable are the world's Sender: the packet goes
// on the player's downlink.
func (s *battleSim) SendUnreliable(id interest.ID, msg []byte) error {
	s.down.push(s.frame, int32(id-s.first), msg)
	return nil
}

func (s *battleSim) SendReliable(id interest.ID, msg []byte) error { return s.SendUnreliable(id, msg) }

// newBattleSim makes the world and its baseline and fills both: the NPCs,
// then the fighters, then the runners.
func newBattleSim(o battleOpts) (*battleSim, error) {
	s := &battleSim{o: o, rng: rand.New(rand.NewPCG(o.seed, 0xba77)), start: time.Unix(1e9, 0)}
	w, err := interest.NewWorld(interest.Config{}, s.start, s)
	if err != nil {
		return nil, err
	}
	s.w, s.cfg = w, w.Config()
	s.period = s.cfg.Period()
	s.lo, s.hi = bots.BattleBlock(s.cfg)
	s.down, s.up = newLink(o.delay), newLink(max(o.delay, 1))
	s.base = newJX1(s.cfg)
	n := o.players + o.runners + o.npcs + 1
	s.byID = make([]*bplayer, n)
	s.base.sampled = make([]bool, n)
	s.base.heard = s.heard
	for range o.npcs {
		pos := s.randIn(interest.Vec{}, s.cfg.Bounds())
		lg := interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100}
		id, err := w.Spawn(interest.NPC, lg, interest.Display{Appearance: uint32(s.rng.IntN(64)), Name: "野狼"})
		if err != nil {
			return nil, err
		}
		s.base.spawn(id, false, lg, 0)
		s.npcs = append(s.npcs, &wnpc{id: id, home: pos, next: s.rng.IntN(16 * s.cfg.Hz), life: 100})
	}
	for i := range o.players + o.runners {
		p := &bplayer{index: int32(i), runner: i >= o.players, camp: uint8(i % 2), life: 100}
		pos := s.randIn(s.lo, s.hi)
		if p.runner {
			p.home = s.outside()
			pos, p.until = p.home, s.rng.IntN(3*s.cfg.Hz)
			p.knows = map[interest.ID]*baseKnown{}
		} else {
			p.nextMove, p.nextCast = s.rng.IntN(s.cfg.Hz), s.rng.IntN(2*s.cfg.Hz)
		}
		lg := interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100}
		id, err := w.Spawn(interest.Player, lg, interest.Display{Appearance: s.rng.Uint32(), Name: fmt.Sprintf("侠客%04d", i), Camp: p.camp})
		if err != nil {
			return nil, err
		}
		if i == 0 {
			s.first = id
		} else if id != s.first+interest.ID(i) {
			return nil, fmt.Errorf("bench battle: player %d got ID %d, not %d", i, id, s.first+interest.ID(i))
		}
		s.base.spawn(id, true, lg, p.camp)
		s.base.sampled[id] = p.runner
		if err := w.Join(id); err != nil {
			return nil, err
		}
		if p.c, err = interest.NewClient(s.cfg, id); err != nil {
			return nil, err
		}
		p.id, p.reg = id, w.RegionOf(pos)
		s.players = append(s.players, p)
		s.byID[id] = p
	}
	return s, nil
}

// randIn returns a random position in the rectangle lo..hi.
func (s *battleSim) randIn(lo, hi interest.Vec) interest.Vec {
	return interest.Vec{X: lo.X + s.rng.Int32N(hi.X-lo.X+1), Y: lo.Y + s.rng.Int32N(hi.Y-lo.Y+1)}
}

// outside returns a point 3-4 regions outside the block, on any side.
func (s *battleSim) outside() interest.Vec { return bots.BattleOutside(s.rng, s.cfg, s.lo, s.hi) }

// inBlock reports whether region r is one of the fight's.
func (s *battleSim) inBlock(r interest.Region) bool {
	lo, hi := s.w.RegionOf(s.lo), s.w.RegionOf(s.hi)
	return r.X >= lo.X && r.X <= hi.X && r.Y >= lo.Y && r.Y <= hi.Y
}

// run plays warm-up and measurement and prints the figures.
func (s *battleSim) run(out io.Writer) (battleFigures, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	hz := s.cfg.Hz
	warm := int(s.o.warmup * float64(hz))
	total := warm + int(s.o.seconds*float64(hz))
	var tick, baseTick []time.Duration
	var st0 interest.Stats
	wall0 := time.Now()
	for f := 1; f <= total; f++ {
		s.frame = f
		if f == warm+1 {
			s.measuring, st0 = true, s.w.Stats()
		}
		now := s.start.Add(time.Duration(f) * s.period)
		t := s.serverFrame(now)
		b := s.baselineFrame(f)
		if s.measuring {
			tick, baseTick = append(tick, t), append(baseTick, b)
			s.down.sent(f, func(i int32, m []byte) { s.players[i].bytes += int64(len(m)) })
			for i, p := range s.players {
				p.baseBytes += int64(s.base.sent[i])
			}
		}
		s.clientsFrame(f, now)
		s.follow(f <= total-2*hz)
	}
	return s.report(out, tick, baseTick, st0, time.Since(wall0))
}

// serverFrame runs the world's part of a frame and returns its CPU time:
// the uplinks and the tick (the NPCs' wandering in between, the game's
// logic, not counted).
func (s *battleSim) serverFrame(now time.Time) time.Duration {
	c0 := harness.ThreadCPU()
	batch := s.batch[:0]
	s.up.sent(s.frame-max(s.o.delay, 1), func(i int32, b []byte) {
		batch = append(batch, interest.Uplink{Player: s.players[i].id, Msg: b})
	})
	s.w.DeliverAll(batch)
	s.batch = batch
	c1 := harness.ThreadCPU()
	s.npcLogic()
	c2 := harness.ThreadCPU()
	s.w.Tick(now)
	return c1 - c0 + harness.ThreadCPU() - c2
}

// baselineFrame runs the baseline's part of frame f and returns its CPU
// time.
func (s *battleSim) baselineFrame(f int) time.Duration {
	s.pending = s.base.commandsDue(s.pending, f)
	b0 := harness.ThreadCPU()
	s.base.tick(f)
	return harness.ThreadCPU() - b0
}

// npcLogic walks the NPCs whose time has come, in the world and the
// baseline.
func (s *battleSim) npcLogic() {
	for _, n := range s.npcs {
		if s.frame < n.next {
			continue
		}
		lg, _ := s.w.Logic(n.id)
		reach := int32(s.cfg.RegionSize) * 3 / 2
		dest := s.clampTo(s.randIn(interest.Vec{X: n.home.X - reach, Y: n.home.Y - reach}, interest.Vec{X: n.home.X + reach, Y: n.home.Y + reach}),
			interest.Vec{}, s.cfg.Bounds())
		speed := int32(12 + s.rng.IntN(13))
		if s.w.Move(n.id, dest, speed) == nil {
			s.base.command(jxCmd{tag: cmdMove, id: n.id, frame: s.w.Frame(), src: lg.Pos, dest: dest, speed: speed})
		}
		n.next = s.frame + (5+s.rng.IntN(16))*s.cfg.Hz
	}
}

// clientsFrame runs the clients' part of frame f: each takes what its
// downlink brings, acts, and sends its packet up; then the commands on
// their way are checked against what every client now has.
func (s *battleSim) clientsFrame(f int, now time.Time) {
	s.down.sent(f-s.o.delay, func(i int32, b []byte) { _ = s.players[i].c.Deliver(now, b) })
	for _, p := range s.players {
		p.c.Advance(now)
		for _, e := range p.c.Events() {
			if e.Tag == interest.EventSkill {
				s.heardCast(p, e.ID)
			}
		}
		if p.runner {
			s.run1(p)
		} else {
			s.fight(p)
		}
		if pkt := p.c.Packet(now); pkt != nil {
			if s.measuring {
				p.upBytes += int64(len(pkt))
			}
			s.up.push(f, p.index, pkt)
		}
	}
	s.checkSent()
}

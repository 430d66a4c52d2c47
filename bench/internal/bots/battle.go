//go:build !js

package bots

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// The mass battle's bots (bench battle -transport webrtc): the fighters
// and the runners of the in-memory scenario, each an engine.Client of its
// own, reaching the server through a relay that delays every datagram
// each way (Impairer; a 50 ms round trip by default). What the in-memory scenario reads off the world, these
// read off their own clients, all in this one process: a command's time
// to every other fighter, and a runner's time to know a block region's
// fighters.

// battleCmd is a fighter's command followed to the other fighters.
type battleCmd struct {
	actor interest.ID
	move  bool
	dest  interest.Vec // a move's
	skill uint16       // a cast's: the actor's cast count, so each is told apart
	at    time.Time
	// Guarded by the log's mutex.
	waiting int           // fighters that have not yet had it or been let off
	knew    int           // fighters that had it (each knew the actor when it first looked)
	latest  time.Duration // the latest of theirs to have it
}

// battleFollow is how long a fighter waits for a command before it
// gives up on it: the command is then undelivered.
const battleFollow = 5 * time.Second

// battleLog is what the bots share: the commands followed, the fighters'
// entities and regions (for the runners' episodes), and the figures.
type battleLog struct {
	fighters int
	ids      []atomic.Uint32 // by fighter index: its entity, 0 until joined
	regs     []atomic.Int64  // by fighter index: its region (X<<32 | Y), -1 unknown

	mu        sync.Mutex
	measuring bool
	cmds      []*battleCmd
	lat       []time.Duration // a command's time to every fighter that knew its actor
	episodes  []time.Duration // a runner's time to know a block region's fighters
	gone      int             // episodes whose region left the runner's range first
}

// region is fighter i's published region.
func (l *battleLog) region(i int) (interest.Region, bool) {
	v := l.regs[i].Load()
	if v < 0 {
		return interest.Region{}, false
	}
	return interest.Region{X: int(v >> 32), Y: int(uint32(v))}, true
}

// give starts following c (while measuring), waited for by every other
// fighter.
func (l *battleLog) give(c *battleCmd) {
	l.mu.Lock()
	if l.measuring {
		c.waiting = l.fighters - 1
		l.cmds = append(l.cmds, c)
	}
	l.mu.Unlock()
}

// resolve records fighter's outcome for c: had it after lat (had), or let
// off (it did not know the actor).
func (l *battleLog) resolve(c *battleCmd, had bool, lat time.Duration) {
	l.mu.Lock()
	if had {
		c.knew++
		c.latest = max(c.latest, lat)
	}
	if c.waiting--; c.waiting == 0 && c.knew > 0 {
		l.lat = append(l.lat, c.latest)
	}
	l.mu.Unlock()
}

// battleBot is one player of the battle.
type battleBot struct {
	log    *battleLog
	c      *engine.Client
	rng    *rand.Rand
	index  int
	runner bool
	camp   uint8
	lost   atomic.Bool
	lo, hi interest.Vec

	// Fighters: when the next move and cast are due, casts so far, the
	// commands followed so far (a cursor in the log) and those waited for.
	nextMove, nextCast time.Time
	casts              uint16
	cursor             int
	waits              []*battleCmd
	// Runners: state, until when, where they wait and run to, their
	// region and the episodes open.
	state      int
	until      time.Time
	home, goal interest.Vec
	reg        interest.Region
	open       []*battleEpisode

	recv0, sent0 uint64 // bytes at the window's start
	down, up     float64
}

// battleEpisode is a block region a runner's range took in: it ends when
// the runner's client knows every fighter that was there then and has
// stayed.
type battleEpisode struct {
	reg   interest.Region
	start time.Time
	who   []int // fighter indexes
}

// Runner states.
const (
	runOut   = iota // waiting outside
	runIn           // running into the block
	runStay         // in the block
	runLeave        // running back out
)

// runBattleBots is the child process of bench battle -transport webrtc.
// It reads the tickets ("T <world>
// <ticket>" lines, then "GO": the first -fighters are fighters, the rest
// runners), dials them and plays every bot, polling its client at -poll
// Hz as a browser's frames would. It prints READY when all have joined,
// measures from "MEASURE" to "STOP", and then prints
//
//	DONE lost=<bots> cores=<cpu> down=<B/s> down99=<B/s> up=<B/s> rdown=<B/s> cmd50=<ms> cmd99=<ms> cmds=<n> undelivered=<n> ep50=<ms> ep99=<ms> eps=<n> gone=<n>
//
// the fighters' bytes a second (payload, mean and p99), the runners', a
// command's time to every other fighter that knew its actor, and a
// runner's time to know a block region's fighters.
func runBattleBots(args []string, in io.Reader, out io.Writer) error {
	r := newRunner("battle bots")
	seed := r.fs.Uint64("seed", 1, "random seed")
	fighters := r.fs.Int("fighters", 300, "the first tickets' bots that fight; the rest run")
	poll := r.fs.Int("poll", BattlePollHz, "times a second each bot's client is polled (a browser's frames: 60)")
	_, tickets, err := r.parse(args, in)
	if err != nil {
		return err
	}
	if *fighters < 2 || *fighters > len(tickets) {
		return fmt.Errorf("-fighters %d of %d tickets", *fighters, len(tickets))
	}
	log := &battleLog{fighters: *fighters, ids: make([]atomic.Uint32, *fighters), regs: make([]atomic.Int64, *fighters)}
	for i := range log.regs {
		log.regs[i].Store(-1)
	}
	var bots flock[*battleBot]
	bots.start(r.loops, *poll)
	defer bots.end()
	if err := r.dial(tickets, func(i int, c *engine.Client) {
		b := &battleBot{log: log, c: c, rng: rand.New(rand.NewPCG(*seed, uint64(i))), index: i, runner: i >= *fighters, camp: uint8(i % 2)}
		b.lo, b.hi = BattleBlock(c.InterestConfig())
		now := time.Now()
		b.nextMove = now.Add(time.Duration(b.rng.Int64N(int64(time.Second))))
		b.nextCast = now.Add(time.Duration(b.rng.Int64N(int64(2 * time.Second))))
		b.until = now.Add(time.Duration(b.rng.Int64N(int64(3 * time.Second))))
		if !b.runner {
			log.ids[i].Store(uint32(c.Interest().ID()))
		}
		bots.add(b)
	}); err != nil {
		return err
	}
	all := bots.all()
	var wall time.Duration
	cores, err := r.window(out, func(sc *bufio.Scanner) error {
		for sc.Scan() && sc.Text() != "MEASURE" {
		}
		for _, b := range all {
			st := b.c.Stats()
			b.recv0, b.sent0 = st.RecvBytes, st.SentBytes
		}
		log.mu.Lock()
		log.measuring = true
		log.mu.Unlock()
		t0 := time.Now()
		for sc.Scan() && sc.Text() != "STOP" {
		}
		wall = time.Since(t0)
		log.mu.Lock()
		log.measuring = false
		log.mu.Unlock()
		for _, b := range all {
			st := b.c.Stats()
			b.down = float64(st.RecvBytes-b.recv0) / wall.Seconds()
			b.up = float64(st.SentBytes-b.sent0) / wall.Seconds()
		}
		return nil
	})
	if err != nil {
		return err
	}
	var down, up, rdown []float64
	lost := 0
	for _, b := range all {
		if b.lost.Load() {
			lost++
		}
		if b.runner {
			rdown = append(rdown, b.down)
		} else {
			down, up = append(down, b.down), append(up, b.up)
		}
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	undelivered := 0
	for _, c := range log.cmds {
		if c.waiting > 0 && time.Since(c.at) > battleFollow {
			undelivered++ // a fighter that knew its actor gave up waiting for it
		}
	}
	fmt.Fprintf(out, "DONE lost=%d cores=%.3f down=%.0f down99=%.0f up=%.0f rdown=%.0f cmd50=%.1f cmd99=%.1f cmds=%d undelivered=%d ep50=%.1f ep99=%.1f eps=%d gone=%d\n",
		lost, cores, meanOf(down), quantileOf(down, .99), meanOf(up), meanOf(rdown),
		msOf(quantileOf(log.lat, .5)), msOf(quantileOf(log.lat, .99)), len(log.lat), undelivered,
		msOf(quantileOf(log.episodes, .5)), msOf(quantileOf(log.episodes, .99)), len(log.episodes), log.gone)
	return nil
}

func (b *battleBot) close() { b.c.Close() }

// play polls the bot's client, follows the commands it waits for and, as
// their time comes, fights or runs.
func (b *battleBot) play(_ int, now time.Time) {
	is, evs, me, ok := pollWorld(b.c, &b.lost, now)
	if !ok {
		return
	}
	reg := regionOf(is.Config(), me.Pos)
	if b.runner {
		b.follow(now, is, reg)
		b.run(now, is, me)
		return
	}
	b.log.regs[b.index].Store(int64(reg.X)<<32 | int64(uint32(reg.Y)))
	b.hear(now, is, evs)
	b.fight(now, is, me)
}

// regionOf is the region position p is in, by the world's rule.
func regionOf(cfg interest.Config, p interest.Vec) interest.Region {
	return interest.Region{X: int(p.X) / cfg.RegionSize, Y: int(p.Y) / cfg.RegionSize}
}

// hear takes the commands given since the fighter last looked (those of
// actors it does not know it is let off) and credits those its client now
// has: a move once the actor's destination is the command's, a cast once
// its event is heard.
func (b *battleBot) hear(now time.Time, is *interest.Client, evs []interest.Event) {
	l := b.log
	l.mu.Lock()
	fresh := l.cmds[min(b.cursor, len(l.cmds)):]
	b.cursor = len(l.cmds)
	l.mu.Unlock()
	self := is.ID()
	for _, c := range fresh {
		switch {
		case c.actor == self:
			l.resolve(c, false, 0)
		default:
			if _, ok := is.Entity(c.actor); !ok {
				l.resolve(c, false, 0)
				continue
			}
			b.waits = append(b.waits, c)
		}
	}
	keep := b.waits[:0]
	for _, c := range b.waits {
		had := false
		if c.move {
			v, ok := is.Entity(c.actor)
			had = ok && v.Logic.Dest == c.dest
		} else {
			had = slices.ContainsFunc(evs, func(e interest.Event) bool {
				return e.Tag == interest.EventSkill && e.ID == c.actor && e.Skill == c.skill
			})
		}
		switch {
		case had:
			l.resolve(c, true, now.Sub(c.at))
		case now.Sub(c.at) < battleFollow:
			keep = append(keep, c)
		}
		// else: never had; counted undelivered
	}
	clear(b.waits[len(keep):])
	b.waits = keep
}

// fight plays a fighter: a move every second to a point up to 6 m away in
// the block (6 m/s), a cast every 2 s on an enemy near it (one in four on
// the nearest NPC it knows).
func (b *battleBot) fight(now time.Time, is *interest.Client, me interest.Logic) {
	if !now.Before(b.nextMove) {
		b.nextMove = b.nextMove.Add(time.Second)
		const reach = 384 // 6 m
		dest := clampVec(randIn(b.rng, interest.Vec{X: me.Pos.X - reach, Y: me.Pos.Y - reach}, interest.Vec{X: me.Pos.X + reach, Y: me.Pos.Y + reach}), b.lo, b.hi)
		if dest != me.Pos && is.Move(dest, 24) == nil {
			b.log.give(&battleCmd{actor: is.ID(), move: true, dest: dest, at: now})
			b.c.Flush(now)
		}
	}
	if !now.Before(b.nextCast) {
		b.nextCast = b.nextCast.Add(2 * time.Second)
		if target := b.target(is, me.Pos); target != 0 {
			b.casts++
			if is.Skill(b.casts, target) == nil {
				b.log.give(&battleCmd{actor: is.ID(), skill: b.casts, at: now})
				b.c.Flush(now)
			}
		}
	}
}

// target picks a fighter's target among the entities its client knows:
// one cast in four the nearest NPC, else the nearest of eight enemies
// drawn at random.
func (b *battleBot) target(is *interest.Client, pos interest.Vec) interest.ID {
	n := Nearest{From: pos}
	if b.rng.IntN(4) == 0 {
		is.Each(func(id interest.ID, v interest.View) {
			if v.Kind == interest.NPC {
				n.Consider(id, v.Logic.Pos)
			}
		})
		if n.ID != 0 {
			return n.ID
		}
	}
	l := b.log
	for range 8 {
		i := b.rng.IntN(l.fighters/2)*2 + int(1-b.camp)
		if i >= l.fighters {
			continue
		}
		id := interest.ID(l.ids[i].Load())
		if v, ok := is.Entity(id); ok {
			n.Consider(id, v.Logic.Pos)
		}
	}
	return n.ID
}

// run plays a runner: out, in at the top speed, stay 3 s, out again, wait
// 1-3 s.
func (b *battleBot) run(now time.Time, is *interest.Client, me interest.Logic) {
	switch b.state {
	case runOut:
		if !now.Before(b.until) {
			b.state, b.goal = runIn, randIn(b.rng, b.lo, b.hi)
			b.runTo(now, is, me.Pos, b.goal)
		}
	case runIn:
		if me.Moving() {
			return
		}
		if me.Pos == b.goal {
			b.state, b.until = runStay, now.Add(3*time.Second)
			return
		}
		b.runTo(now, is, me.Pos, b.goal)
	case runStay:
		if !now.Before(b.until) {
			b.state, b.home = runLeave, BattleOutside(b.rng, is.Config(), b.lo, b.hi)
			b.runTo(now, is, me.Pos, b.home)
		}
	case runLeave:
		if me.Moving() {
			return
		}
		if me.Pos == b.home {
			b.state, b.until = runOut, now.Add(time.Second+time.Duration(b.rng.Int64N(int64(2*time.Second))))
			return
		}
		b.runTo(now, is, me.Pos, b.home)
	}
}

// runTo sends the runner from pos towards dest at the top speed, no
// further than a move reaches.
func (b *battleBot) runTo(now time.Time, is *interest.Client, pos, dest interest.Vec) {
	cfg := is.Config()
	reach := int32(cfg.MaxMove)
	dest = clampVec(clampVec(dest, interest.Vec{X: pos.X - reach, Y: pos.Y - reach}, interest.Vec{X: pos.X + reach, Y: pos.Y + reach}),
		interest.Vec{}, cfg.Bounds())
	if is.Move(dest, int32(cfg.MaxSpeed)) == nil {
		b.c.Flush(now)
	}
}

// follow tracks a runner's range: a block region it takes in opens an
// episode with the fighters there (while measuring), which ends when the
// runner's client knows every one of them still there, or when the range
// lets the region go first.
func (b *battleBot) follow(now time.Time, is *interest.Client, reg interest.Region) {
	l := b.log
	if reg != b.reg {
		l.mu.Lock()
		measuring := l.measuring
		l.mu.Unlock()
		if measuring {
			b.openEpisodes(now, b.reg, reg)
		}
		b.reg = reg
	}
	keep := b.open[:0]
	for _, e := range b.open {
		if !nearRegion(reg, e.reg) {
			l.mu.Lock()
			l.gone++
			l.mu.Unlock()
			continue
		}
		known := true
		stay := e.who[:0]
		for _, i := range e.who {
			if r, ok := l.region(i); !ok || r != e.reg {
				continue // left the region: no longer required
			}
			stay = append(stay, i)
			if _, ok := is.Entity(interest.ID(l.ids[i].Load())); !ok {
				known = false
			}
		}
		e.who = stay
		if known {
			l.mu.Lock()
			l.episodes = append(l.episodes, now.Sub(e.start))
			l.mu.Unlock()
			continue
		}
		keep = append(keep, e)
	}
	clear(b.open[len(keep):])
	b.open = keep
}

// openEpisodes opens an episode for each block region the runner's range
// took in on moving from region from to region to, with the fighters
// there.
func (b *battleBot) openEpisodes(now time.Time, from, to interest.Region) {
	l := b.log
	lo, hi := b.blockRegions()
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			r := interest.Region{X: to.X + dx, Y: to.Y + dy}
			if r.X < lo.X || r.X > hi.X || r.Y < lo.Y || r.Y > hi.Y || nearRegion(from, r) {
				continue
			}
			e := &battleEpisode{reg: r, start: now}
			for i := range l.fighters {
				if fr, ok := l.region(i); ok && fr == r && l.ids[i].Load() != 0 {
					e.who = append(e.who, i)
				}
			}
			if len(e.who) > 0 {
				b.open = append(b.open, e)
			}
		}
	}
}

// blockRegions returns the block's lowest and highest regions.
func (b *battleBot) blockRegions() (lo, hi interest.Region) {
	cfg := b.c.InterestConfig()
	return regionOf(cfg, b.lo), regionOf(cfg, b.hi)
}

// nearRegion reports whether regions a and b are in each other's 3x3
// range.
func nearRegion(a, b interest.Region) bool {
	return a.X-b.X >= -1 && a.X-b.X <= 1 && a.Y-b.Y >= -1 && a.Y-b.Y <= 1
}

// meanOf, quantileOf and msOf are the figures' arithmetic.
func meanOf[T float64 | time.Duration](v []T) float64 {
	var s float64
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(max(len(v), 1))
}

func quantileOf[T float64 | time.Duration](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[min(int(q*float64(len(s))), len(s)-1)]
}

func msOf(d time.Duration) float64 { return float64(d) / 1e6 }

// Package feel is the benchmark of interest mode's feel on the client
// and its fairness on the server: how far from the truth a client draws
// the other players, how often its drawing jumps, how often a correction
// undoes the player's own input, and how often the world agrees that a
// skill the player aimed at a target in range on its screen was in range.
// The library's rendering (interest.Client.Render), reconciliation and
// lag compensation run beside the baselines in the same seeded
// simulation: the client drawing as before (the frame it extrapolates to,
// smoothed between frames as the MMO example did), replay off, and the
// world judging actions by the positions at arrival.
package feel

import (
	"container/heap"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/bench/internal/nettrace"
	"github.com/tongbu/tongbu/interest"
)

func init() {
	harness.Register("feel",
		"interest mode's feel: remote players drawn from the render buffer, own moves reconciled, lag-compensated skills, beside the extrapolate-and-snap client on seeded traces",
		benchFeel)
}

const (
	renderHz  = 60
	arenaHalf = 1200 // units: the players walk within a square of twice this around the map's centre
	reach     = 700  // units: a skill's range
	walk      = 16   // units a frame
	run       = 32
	snapUnits = 2 // a draw moving this much more than the entity did in one render tick is a jump
	warmup    = 3 // seconds not measured: the clients join and learn their delay
)

type options struct {
	trace   string
	seconds float64
	players int
	seed    uint64
	cheater bool
	delay   time.Duration
}

func benchFeel(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("feel", flag.ContinueOnError)
	fs.SetOutput(out)
	var o options
	fs.StringVar(&o.trace, "trace", "4g", "network each way: clean, 4g, wifi, rtt100 (100 ms RTT, 2% loss) or rtt150")
	fs.Float64Var(&o.seconds, "seconds", 60, "simulated time")
	fs.IntVar(&o.players, "players", 16, "players, all in each other's range")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the traces and the players' input")
	fs.BoolVar(&o.cheater, "cheater", true, "player 1 draws the others 3 s late and acts on that view (beyond the rewind bound)")
	fs.DurationVar(&o.delay, "delay", 0, "a fixed render delay instead of the learned one")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.players < 3 || o.seconds < 5 {
		return errors.New("feel: at least 3 players and 5 seconds")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lib, err := simulate(o, true)
	if err != nil {
		return err
	}
	base, err := simulate(o, false)
	if err != nil {
		return err
	}
	minutes := o.seconds / 60
	fmt.Fprintf(out, "feel: trace %s, %g s, %d players walking (%d units a frame) and running (%d) with turns every 0.5-3 s, knocked sideways every 1-4 s, 16 Hz world, %d Hz render\n",
		o.trace, o.seconds, o.players, walk, run, renderHz)
	fmt.Fprintf(out, "render delay learned: p50 %.0f ms, p99 %.0f ms; corrections %d (library run), %d (replay off)\n",
		lib.delayP50, lib.delayP99, lib.corrections, base.corrections)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "drawing others\terror mean u\terror p99 u\tjumps/min/entity\tns/render\tallocs/render\t")
	fmt.Fprintf(out, "library error quantiles: p90 %.1f p95 %.1f p98 %.1f p99 %.1f p99.9 %.1f\n", lib.err.p(0.9), lib.err.p(0.95), lib.err.p(0.98), lib.err.p(0.99), lib.err.p(0.999))
	fmt.Fprintf(tw, "library (Render)\t%.2f\t%.2f\t%.3f\t%.0f\t%.2f\t\n", lib.err.mean(), lib.err.p(0.99), lib.perEntityMin(lib.snaps, minutes), lib.renderNs, lib.renderAllocs)
	fmt.Fprintf(tw, "baseline (extrapolate, snap, smooth)\t%.2f\t%.2f\t%.3f\t%.0f\t%.2f\t\n", lib.baseErr.mean(), lib.baseErr.p(0.99), lib.perEntityMin(lib.baseSnaps, minutes), lib.baseNs, lib.baseAllocs)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(out, "own input undone (voided by a correction, never taken by the world): %.3f a minute a player with replay, %.3f without (%d and %d corrections)\n",
		lib.undoPerMin(minutes, o.players), base.undoPerMin(minutes, o.players), lib.corrections, base.corrections)
	fmt.Fprintf(out, "skills aimed at a target in range on screen: %d; the world agrees %.4f with lag compensation, %.4f by the positions at arrival; rewind p50 %.0f ms, p99 %.0f ms\n",
		lib.aimed, lib.agree(), lib.agreeBase(), lib.rewind.p(0.5), lib.rewind.p(0.99))
	fmt.Fprintf(out, "cheater acting on a view 3 s old: %d skills, %.4f refused (the view taken as %v old at most)\n",
		lib.pastAimed, lib.pastRefusedShare(), interest.DefaultMaxRewind)
	fmt.Fprintf(out, "server: %.1f ns a world entity-frame, %.3f allocations a frame (history kept: %d path changes an entity)\n",
		lib.serverNs, lib.serverAllocs, 16)
	fmt.Fprintln(out, harness.Result("feel",
		"trace", o.trace,
		"seconds", o.seconds,
		"players", o.players,
		"render_error_mean_u", lib.err.mean(),
		"render_error_p99_u", lib.err.p(0.99),
		"baseline_render_error_mean_u", lib.baseErr.mean(),
		"baseline_render_error_p99_u", lib.baseErr.p(0.99),
		"snaps_per_min", lib.perEntityMin(lib.snaps, minutes),
		"baseline_snaps_per_min", lib.perEntityMin(lib.baseSnaps, minutes),
		"own_undo_per_min", lib.undoPerMin(minutes, o.players),
		"baseline_own_undo_per_min", base.undoPerMin(minutes, o.players),
		"hit_agreement", fmt.Sprintf("%.4f", lib.agree()),
		"baseline_hit_agreement", fmt.Sprintf("%.4f", lib.agreeBase()),
		"past_bound_refused", fmt.Sprintf("%.4f", lib.pastRefusedShare()),
		"render_delay_p50_ms", lib.delayP50,
		"rewind_p99_ms", lib.rewind.p(0.99),
		"render_ns", lib.renderNs,
		"baseline_render_ns", lib.baseNs,
		"render_allocs", lib.renderAllocs,
		"server_ns_per_entity_frame", lib.serverNs,
		"server_allocs_per_frame", lib.serverAllocs,
	))
	return nil
}

// series is a list of samples.
type series []float64

func (s series) mean() float64 {
	if len(s) == 0 {
		return 0
	}
	var t float64
	for _, v := range s {
		t += v
	}
	return t / float64(len(s))
}

// p returns the q quantile; it sorts s.
func (s series) p(q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

// result is what one simulation measured.
type result struct {
	err, baseErr         series
	snaps, baseSnaps     int
	entities             int // remote entities drawn, for per-entity rates
	undo, corrections    int
	aimed, hits, hitBase int
	pastAimed, pastHit   int
	rewind               series // ms
	delays               series
	delayP50, delayP99   float64
	renderNs, baseNs     float64
	renderAllocs         float64
	baseAllocs           float64
	serverNs             float64
	serverAllocs         float64
}

// perEntityMin returns n jumps a minute an entity drawn.
func (r *result) perEntityMin(n int, min float64) float64 {
	return float64(n) / min / float64(max(r.entities, 1))
}

func (r *result) undoPerMin(min float64, players int) float64 {
	return float64(r.undo) / min / float64(players)
}

func (r *result) agree() float64     { return float64(r.hits) / float64(max(r.aimed, 1)) }
func (r *result) agreeBase() float64 { return float64(r.hitBase) / float64(max(r.aimed, 1)) }
func (r *result) pastRefusedShare() float64 {
	// A skill the world dropped (a target out of the player's range) is
	// refused as much as one the game judged out of reach.
	return 1 - float64(r.pastHit)/float64(max(r.pastAimed, 1))
}

// packet is a message in flight.
type packet struct {
	at     time.Time
	seq    int // send order, to break ties
	player interest.ID
	up     bool
	data   []byte
}

type flight []*packet

func (f flight) Len() int { return len(f) }
func (f flight) Less(i, j int) bool {
	if !f[i].at.Equal(f[j].at) {
		return f[i].at.Before(f[j].at)
	}
	return f[i].seq < f[j].seq
}
func (f flight) Swap(i, j int) { f[i], f[j] = f[j], f[i] }
func (f *flight) Push(x any)   { *f = append(*f, x.(*packet)) }
func (f *flight) Pop() any {
	old := *f
	p := old[len(old)-1]
	*f = old[:len(old)-1]
	return p
}

// player is one simulated player: its client, its links, its input.
type player struct {
	id        interest.ID
	c         *interest.Client
	down, up  *nettrace.Link
	nextInput time.Time
	nextKnock time.Time
	nextAim   time.Time
	cheater   bool
	// what it drew last, by entity, for jumps
	last     map[interest.ID]drawnAt
	baseLast map[interest.ID]drawnAt
	frame    int // the client's frame at the last render, and when it changed
	frameAt  time.Time
	// the last input: its destination, whether the world has yet taken it
	inDest      interest.Vec
	inPending   bool
	inAt        time.Time
	corrections int64
	drawn       []interest.Drawn
}

type drawnAt struct {
	r    float64
	x, y float64
}

// sample is one draw of a remote entity, judged once the world's
// history of its frame is final.
type sample struct {
	id       interest.ID
	r        float64
	x, y     float64
	prev     drawnAt
	havePrev bool
	base     bool
}

type sender struct {
	sim *sim
}

func (s sender) SendUnreliable(p interest.ID, msg []byte) error {
	return s.sim.send(p, false, msg, true)
}
func (s sender) SendReliable(p interest.ID, msg []byte) error {
	return s.sim.send(p, false, msg, false)
}

type sim struct {
	o       options
	now     time.Time
	w       *interest.World
	players []*player
	byID    map[interest.ID]*player
	fl      flight
	free    []*packet
	seq     int
	rng     *rand.Rand
	pending []sample
	res     result
}

func (s *sim) send(p interest.ID, up bool, msg []byte, lossy bool) error {
	pl := s.byID[p]
	link := pl.down
	if up {
		link = pl.up
	}
	delay, lost := link.Fate(s.now)
	if lost && lossy {
		return nil
	}
	if lost { // reliable: resent a round trip later
		delay += 2 * delay
	}
	s.seq++
	var pk *packet
	if n := len(s.free); n > 0 { // reused: the simulation allocates nothing a packet once warm
		pk, s.free = s.free[n-1], s.free[:n-1]
	} else {
		pk = &packet{data: make([]byte, 0, interest.MaxPacket)} // room for any: a reused packet never grows
	}
	pk.at, pk.seq, pk.player, pk.up, pk.data = s.now.Add(delay), s.seq, p, up, append(pk.data[:0], msg...)
	heap.Push(&s.fl, pk)
	return nil
}

func simulate(o options, replay bool) (result, error) {
	start := time.Unix(1_000_000, 0)
	cfg := interest.Config{}.WithDefaults()
	s := &sim{o: o, now: start, byID: map[interest.ID]*player{}, rng: rand.New(rand.NewPCG(o.seed, 99))}
	w, err := interest.NewWorld(cfg, start, sender{s})
	if err != nil {
		return result{}, err
	}
	s.w = w
	end := start.Add(time.Duration(o.seconds * float64(time.Second)))
	centre := interest.Vec{X: int32(cfg.Width * cfg.RegionSize / 2), Y: int32(cfg.Height * cfg.RegionSize / 2)}
	for i := range o.players {
		pos := interest.Vec{X: centre.X + int32(s.rng.IntN(2*arenaHalf)-arenaHalf), Y: centre.Y + int32(s.rng.IntN(2*arenaHalf)-arenaHalf)}
		id, err := w.Spawn(interest.Player, interest.Logic{Pos: pos, Dest: pos, Life: 100}, interest.Display{Name: fmt.Sprint("p", i)})
		if err != nil {
			return result{}, err
		}
		if err := w.Join(id); err != nil {
			return result{}, err
		}
		c, err := interest.NewClient(cfg, id)
		if err != nil {
			return result{}, err
		}
		c.SetReplay(replay)
		down, err := nettrace.New(o.trace, start, o.seed*1000+uint64(i)*2, cfg.Period())
		if err != nil {
			return result{}, err
		}
		up, _ := nettrace.New(o.trace, start, o.seed*1000+uint64(i)*2+1, cfg.Period())
		p := &player{id: id, c: c, down: down, up: up, last: map[interest.ID]drawnAt{}, baseLast: map[interest.ID]drawnAt{},
			cheater:   o.cheater && i == 1,
			nextInput: start.Add(time.Duration(500+s.rng.IntN(2500)) * time.Millisecond),
			nextKnock: start.Add(time.Duration(2000+s.rng.IntN(3000)) * time.Millisecond),
			nextAim:   start.Add(time.Duration(3000+s.rng.IntN(1000)) * time.Millisecond)}
		switch {
		case p.cheater:
			c.SetRender(interest.RenderOptions{Delay: 3 * time.Second})
		case o.delay > 0:
			c.SetRender(interest.RenderOptions{Delay: o.delay})
		}
		s.players = append(s.players, p)
		s.byID[id] = p
	}
	w.OnAction(s.judge)

	renderEvery := time.Second / renderHz
	nextRender := start
	var renderCPU, baseCPU, serverCPU time.Duration
	var renders, baseRenders, frames int
	var renderMallocs, baseMallocs, serverMallocs uint64
	var ms runtime.MemStats
	// Allocations are counted over the second half of the run, once every
	// slice and map has grown to its working size.
	half := start.Add(end.Sub(start) / 2)
	mallocs := func() uint64 {
		if s.now.Before(half) {
			return 0
		}
		runtime.ReadMemStats(&ms)
		return ms.Mallocs
	}
	var allocFrames, allocRenders int
	entityFrames := 0
	for s.now.Before(end) {
		// The next event: a packet, a world frame or a render tick.
		next := nextRender
		if wf := w.NextFrame(); wf.Before(next) {
			next = wf
		}
		if len(s.fl) > 0 && s.fl[0].at.Before(next) {
			next = s.fl[0].at
		}
		s.now = next
		for len(s.fl) > 0 && !s.fl[0].at.After(s.now) {
			pk := heap.Pop(&s.fl).(*packet)
			if pk.up {
				_ = w.Deliver(pk.player, pk.data)
			} else {
				_ = s.byID[pk.player].c.Deliver(s.now, pk.data)
			}
			s.free = append(s.free, pk)
		}
		s.taken()
		if !s.now.Before(w.NextFrame()) {
			s.knockBacks()
			m0, t0 := mallocs(), harness.ThreadCPU()
			w.Tick(s.now)
			serverCPU += harness.ThreadCPU() - t0
			serverMallocs += mallocs() - m0
			frames++
			if !s.now.Before(half) {
				allocFrames++
			}
			entityFrames += o.players
			s.taken()
			s.judgeSamples()
		}
		if !s.now.Before(nextRender) {
			nextRender = nextRender.Add(renderEvery)
			for _, p := range s.players {
				p.c.Advance(s.now)
				s.input(p)
				m0, t0 := mallocs(), harness.ThreadCPU()
				p.drawn = p.c.Render(s.now, p.drawn[:0])
				renderCPU += harness.ThreadCPU() - t0
				renderMallocs += mallocs() - m0
				renders++
				if !s.now.Before(half) {
					allocRenders++
				}
				m0, t0 = mallocs(), harness.ThreadCPU()
				s.baseline(p)
				baseCPU += harness.ThreadCPU() - t0
				baseMallocs += mallocs() - m0
				baseRenders++
				s.observe(p)
				s.aim(p)
				if pkt := p.c.Packet(s.now); pkt != nil {
					_ = s.send(p.id, true, pkt, true)
				}
			}
		}
	}
	for _, p := range s.players {
		if p.inPending && s.now.Sub(p.inAt) > time.Second {
			s.res.undo++
		}
	}
	s.res.renderNs = float64(renderCPU.Nanoseconds()) / float64(max(renders, 1))
	s.res.baseNs = float64(baseCPU.Nanoseconds()) / float64(max(baseRenders, 1))
	// The MemStats reads themselves allocate nothing; what they count is
	// the code's.
	s.res.renderAllocs = float64(renderMallocs) / float64(max(allocRenders, 1))
	s.res.baseAllocs = float64(baseMallocs) / float64(max(allocRenders, 1))
	s.res.serverNs = float64(serverCPU.Nanoseconds()) / float64(max(entityFrames, 1))
	s.res.serverAllocs = float64(serverMallocs) / float64(max(allocFrames, 1))
	s.res.entities = o.players - 1
	if o.cheater {
		s.res.entities--
	}
	s.res.entities *= o.players
	s.res.delayP50, s.res.delayP99 = s.res.delays.p(0.5), s.res.delays.p(0.99)
	return s.res, nil
}

// input moves a player when its time comes: a new direction every
// 0.5-3 s, walking or running.
func (s *sim) input(p *player) {
	if s.now.Before(p.nextInput) {
		return
	}
	p.nextInput = s.now.Add(time.Duration(500+s.rng.IntN(2500)) * time.Millisecond)
	me, ok := p.c.Self()
	if !ok {
		return
	}
	cfg := s.w.Config()
	cx, cy := int32(cfg.Width*cfg.RegionSize/2), int32(cfg.Height*cfg.RegionSize/2)
	a := s.rng.Float64() * 2 * math.Pi
	d := 300 + s.rng.Float64()*1200
	dest := interest.Vec{X: me.Pos.X + int32(d*math.Cos(a)), Y: me.Pos.Y + int32(d*math.Sin(a))}
	dest.X = max(cx-arenaHalf, min(cx+arenaHalf, dest.X))
	dest.Y = max(cy-arenaHalf, min(cy+arenaHalf, dest.Y))
	speed := int32(walk)
	if s.rng.IntN(2) == 0 {
		speed = run
	}
	if dest == me.Pos || p.c.Move(dest, speed) != nil {
		return
	}
	if p.inPending {
		s.res.undo++ // the input before never took effect
	}
	p.inDest, p.inPending, p.inAt = dest, true, s.now
}

// knockBacks pushes players sideways, across their path, when their time
// comes: the world moves them itself.
func (s *sim) knockBacks() {
	for _, p := range s.players {
		if s.now.Before(p.nextKnock) {
			continue
		}
		p.nextKnock = s.now.Add(time.Duration(1000+s.rng.IntN(3000)) * time.Millisecond)
		lg, ok := s.w.Logic(p.id)
		if !ok {
			continue
		}
		dx, dy := float64(lg.Dest.X-lg.Pos.X), float64(lg.Dest.Y-lg.Pos.Y)
		if l := math.Hypot(dx, dy); l > 0 {
			dx, dy = dx/l, dy/l
		} else {
			dx, dy = 1, 0
		}
		side := 96.0
		if s.rng.IntN(2) == 0 {
			side = -side
		}
		to := interest.Vec{X: lg.Pos.X + int32(-dy*side), Y: lg.Pos.Y + int32(dx*side)}
		_ = s.w.Move(p.id, to, 32)
	}
}

// baseline draws the others as the client did before Render: each
// entity's position at the client's frame, smoothed toward the next by
// the time since that frame began (the MMO example's drawing).
func (s *sim) baseline(p *player) {
	if f := p.c.Frame(); f != p.frame {
		p.frame, p.frameAt = f, s.now
	}
	period := s.w.Config().Period()
	a := min(max(float64(s.now.Sub(p.frameAt))/float64(period), 0), 1)
	shown := float64(p.frame) + a
	p.c.Each(func(id interest.ID, v interest.View) {
		if p.cheater || s.byID[id] == nil || s.byID[id].cheater || !s.w.InRange(p.id, id) {
			delete(p.baseLast, id)
			return
		}
		next := interest.Step(v.Logic.Pos, v.Logic.Dest, v.Logic.Speed)
		x := float64(v.Logic.Pos.X) + a*float64(next.X-v.Logic.Pos.X)
		y := float64(v.Logic.Pos.Y) + a*float64(next.Y-v.Logic.Pos.Y)
		prev, ok := p.baseLast[id]
		s.pending = append(s.pending, sample{id: id, r: shown, x: x, y: y, prev: prev, havePrev: ok, base: true})
		p.baseLast[id] = drawnAt{shown, x, y}
	})
}

// observe keeps the library's draws for judging, and watches the
// player's own drawing after corrections.
func (s *sim) observe(p *player) {
	r := p.c.RenderFrame()
	if !p.cheater {
		s.res.delays = append(s.res.delays, float64(p.c.RenderDelay().Milliseconds()))
	}
	for _, d := range p.drawn {
		if d.ID == p.id {
			s.watchSelf(p)
			continue
		}
		if p.cheater || s.byID[d.ID] == nil || s.byID[d.ID].cheater {
			continue
		}
		if !s.w.InRange(p.id, d.ID) {
			// Out of the player's range, the world tells its client
			// nothing more of the entity: what the client draws until its
			// removal rules drop it is the range's edge, not the drawing.
			delete(p.last, d.ID)
			continue
		}
		prev, ok := p.last[d.ID]
		s.pending = append(s.pending, sample{id: d.ID, r: r, x: d.X, y: d.Y, prev: prev, havePrev: ok})
		p.last[d.ID] = drawnAt{r, d.X, d.Y}
	}
}

// watchSelf counts the corrections the player's client adopts.
func (s *sim) watchSelf(p *player) {
	if n := p.c.Stats().Corrections; n != p.corrections {
		s.res.corrections += int(n - p.corrections)
		p.corrections = n
	}
}

// taken notes the inputs the world has taken: the player's path in the
// world heads where the player last asked. An input the world never takes
// was undone: a correction voided it and nothing replayed it.
func (s *sim) taken() {
	for _, p := range s.players {
		if !p.inPending {
			continue
		}
		if lg, ok := s.w.Logic(p.id); ok && lg.Dest == p.inDest {
			p.inPending = false
		}
	}
}

// aim uses a skill on the nearest other player in range on screen, once
// a second or so; the cheater aims at one that was in range 3 s ago and
// is out of range now.
func (s *sim) aim(p *player) {
	if s.now.Before(p.nextAim) {
		return
	}
	p.nextAim = s.now.Add(time.Duration(700+s.rng.IntN(600)) * time.Millisecond)
	me, ok := p.c.Self()
	if !ok {
		return
	}
	best, bestD := interest.ID(0), math.Inf(1)
	for _, d := range p.drawn {
		if d.ID == p.id || s.byID[d.ID] == nil {
			continue
		}
		if p.cheater && !s.outOfReachSince(p.id, d.ID) { // only a shot that needs a view older than the bound
			continue
		}
		if dist := math.Hypot(d.X-float64(me.Pos.X), d.Y-float64(me.Pos.Y)); dist < bestD {
			best, bestD = d.ID, dist
		}
	}
	if best == 0 || bestD > reach {
		return
	}
	if p.c.Skill(1, best) == nil {
		if p.cheater {
			s.res.pastAimed++
		} else {
			s.res.aimed++
		}
	}
}

// outOfReachSince reports whether target has been out of the player's
// reach, by the world's positions, at every frame of the rewind bound.
func (s *sim) outOfReachSince(player, target interest.ID) bool {
	me, _ := s.w.Logic(player)
	bound := int(interest.DefaultMaxRewind / s.w.Config().Period())
	for f := s.w.Frame() - bound - 1; f <= s.w.Frame(); f++ {
		at, ok := s.w.PositionAt(target, float64(f))
		if !ok || math.Sqrt(float64(at.DistSq(me.Pos))) <= reach+2*run {
			return false
		}
	}
	return true
}

// judge is the game's skill handler: in range by the positions the player
// saw (lag compensation), and by the positions at arrival (the baseline).
func (s *sim) judge(a interest.Action) {
	if a.Kind != interest.ActionSkill || a.Target == 0 {
		return
	}
	p := s.byID[a.Player]
	d, ok := s.w.Reach(a, a.Target)
	hit := ok && d <= reach
	if p.cheater {
		if hit {
			s.res.pastHit++
		}
		return
	}
	if hit {
		s.res.hits++
	}
	from, _ := s.w.Logic(a.Player)
	to, _ := s.w.Logic(a.Target)
	if math.Sqrt(float64(from.Pos.DistSq(to.Pos))) <= reach {
		s.res.hitBase++
	}
	s.res.rewind = append(s.res.rewind, (float64(s.w.Frame())-a.View)*1000/float64(s.w.Config().Hz))
}

// judgeSamples measures the draws whose frames the world's history holds
// for good: a second behind its frame.
func (s *sim) judgeSamples() {
	final := float64(s.w.Frame() - s.w.Config().Hz)
	keep := s.pending[:0]
	for _, x := range s.pending {
		if x.r >= final {
			keep = append(keep, x)
			continue
		}
		tx, ty, ok := s.truth(x.id, x.r)
		if !ok || x.r < float64(warmup*s.w.Config().Hz) {
			continue
		}
		e := math.Hypot(x.x-tx, x.y-ty)
		jump := false
		if x.havePrev && x.r-x.prev.r < 1 {
			px, py, ok := s.truth(x.id, x.prev.r)
			jump = ok && math.Hypot(x.x-x.prev.x, x.y-x.prev.y) > math.Hypot(tx-px, ty-py)+snapUnits
		}
		if x.base {
			s.res.baseErr = append(s.res.baseErr, e)
			if jump {
				s.res.baseSnaps++
			}
		} else {
			s.res.err = append(s.res.err, e)
			if jump {
				s.res.snaps++
			}
		}
	}
	s.pending = keep
}

// truth returns where the world holds entity id was at frame r.
func (s *sim) truth(id interest.ID, r float64) (float64, float64, bool) {
	f := math.Floor(r)
	a, ok1 := s.w.PositionAt(id, f)
	b, ok2 := s.w.PositionAt(id, f+1)
	k := r - f
	return float64(a.X) + k*float64(b.X-a.X), float64(a.Y) + k*float64(b.Y-a.Y), ok1 && ok2
}

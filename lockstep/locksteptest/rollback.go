package locksteptest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// RollbackOptions describe a simulated match of a game in the prediction
// mode (lockstep.Rollback), or with the plain client for comparison.
type RollbackOptions struct {
	Config   lockstep.Config // the room's; Simulation is set to NewGame when nil
	Rollback lockstep.RollbackConfig
	// Plain plays the match with the plain client (Client.Advance and its
	// jitter buffer) instead: inputs are sent when they change.
	Plain    bool
	Duration time.Duration
	Up, Down memnet.LinkConfig
	RenderHz int // the clients' render rate (default 60)
	Seed     uint64
	// NewGame makes a player's copy of the game.
	NewGame func() lockstep.RollbackGame
	// Input returns a player's controller state on a render tick, from its
	// game as drawn.
	Input func(slot int, g lockstep.RollbackGame, rng *rand.Rand) []byte
	// Clock measures Work (default: the monotonic clock); a benchmark
	// passes its thread's CPU clock.
	Clock func() time.Duration
	// Cut, when set, cuts player Cut.Slot's downlink from Cut.From for
	// Cut.For.
	Cut *Outage
	// Replay, when set, receives the match's replay file (lockstep/replay),
	// recorded from the start under Game.
	Replay io.Writer
	Game   string
	// Spectator adds a spectator (the plain client) from the start; its
	// hashes are compared with the players'.
	Spectator bool
	// Rejoin, when set, takes player Rejoin.Slot away at Rejoin.From (the
	// room is told it left) and brings it back with a fresh client and
	// game Rejoin.For later: it catches up, then predicts.
	Rejoin *Outage
}

// Outage is a span of time a player's downlink loses every packet.
type Outage struct {
	Slot     int
	From     time.Duration
	For      time.Duration
	lostDown int
}

// RollbackResult measures a simulated match.
type RollbackResult struct {
	Frames     int       // frames the room cut
	OwnInputMs []float64 // from a change of a player's input (at a random time since the previous render tick read it) to the first frame run with it
	Depths     []int     // each rollback's depth, in frames
	Stats      []lockstep.RollbackStats
	Stalls     int           // prediction stalls, or jitter-buffer pauses with Plain
	Stalled    time.Duration // time stalled, over all players
	Desyncs    int           // desync events of the room
	LateDrops  uint64        // inputs the room dropped as late
	Checked    int           // hash frames on which the room saw every player agree
	Compared   int           // confirmed hashes (OnConfirmedHash) compared with the room's majority
	Differed   int           // of those, hashes that differed
	Watched    int           // Spectator: hash frames the spectator ran that the room decided
	WatchDiff  int           // of those, frames where the spectator's state hashed otherwise
	Work       time.Duration // time spent in the players' Update and their game's requests, by Clock
	FramesRun  int           // frames the games ran, re-runs included
}

type player struct {
	c      *lockstep.Client
	rb     *lockstep.Rollback
	g      lockstep.RollbackGame
	rng    *rand.Rand
	phase  *rand.Rand // when within the last render period a change was made
	render time.Duration
	in     []byte // the input now
	press  time.Time
	wait   bool // a change not yet seen in a frame run
	target int  // Plain: the frame the change was sent for
	ran    int  // Plain: frames run
	away   bool
	back   bool           // rejoined
	hashes map[int]uint64 // the confirmed hashes the session passed to the room
}

// RunRollback plays the match.
func RunRollback(o RollbackOptions) (RollbackResult, error) {
	cfg := o.Config
	if cfg.Simulation == nil {
		cfg.Simulation = func() lockstep.Simulation { return o.NewGame() }
	}
	cfg = cfg.WithDefaults()
	if o.RenderHz == 0 {
		o.RenderHz = 60
	}
	if o.Clock == nil {
		base := time.Now()
		o.Clock = func() time.Duration { return time.Since(base) }
	}
	links := cfg.Players
	if o.Spectator {
		links++
	}
	s, err := newSim(links, o.Up, o.Down, o.Seed)
	if err != nil {
		return RollbackResult{}, err
	}
	start := time.Unix(1_000_000, 0)
	now := start
	room, err := lockstep.NewRoom(cfg, start, roomOut{s, &now})
	if err != nil {
		return RollbackResult{}, err
	}
	var rw *replay.Writer
	if o.Replay != nil {
		if rw, err = replay.NewWriter(o.Replay, replay.Header{Game: o.Game, Config: cfg, Start: start}); err != nil {
			return RollbackResult{}, err
		}
		if err := room.Record(rw); err != nil {
			return RollbackResult{}, err
		}
	}
	var res RollbackResult
	var watcher *player
	if o.Spectator {
		id, err := room.AddSpectator(0, start)
		if err != nil {
			return res, err
		}
		c, err := lockstep.NewSpectator(cfg)
		if err != nil {
			return res, err
		}
		watcher = &player{c: c, g: o.NewGame(), hashes: map[int]uint64{}}
		if id != cfg.Players {
			return res, fmt.Errorf("spectator id %d", id)
		}
	}
	ps := make([]*player, cfg.Players)
	for i := range ps {
		if ps[i], err = newPlayer(cfg, i, o); err != nil {
			return res, err
		}
	}
	render := time.Second / time.Duration(o.RenderHz)
	nextRender := make([]time.Time, links)
	phase := rand.New(rand.NewPCG(o.Seed, 7))
	for i := range nextRender {
		nextRender[i] = start.Add(time.Duration(phase.Int64N(int64(render))))
	}
	end := start.Add(o.Duration)
	deliver := func(slot int, msg []byte) {
		switch {
		case slot == cfg.Players:
			watcher.c.Deliver(now, msg)
		case !o.Cut.down(slot, now.Sub(start)) && !ps[slot].away:
			ps[slot].c.Deliver(now, msg)
		}
	}
	err = s.play(room, &now, nextRender, render, end, deliver, func(what int) error {
		if what == cfg.Players { // the spectator
			watcher.watch(now)
			s.send(now, s.up[what], evToRoom, what, watcher.c.Packet(now), transport.Unreliable)
			return nil
		}
		p := ps[what]
		if rj := o.Rejoin; rj != nil && rj.Slot == what && !p.back {
			at := now.Sub(start)
			switch {
			case !p.away && at >= rj.From:
				p.away = true
				if err := room.Leave(what); err != nil {
					return err
				}
			case p.away && at >= rj.From+rj.For:
				np, err := newPlayer(cfg, what, o)
				if err != nil {
					return err
				}
				np.back = true
				ps[what], p = np, np
				if err := room.Join(what, now); err != nil {
					return err
				}
			}
			if p.away {
				return nil
			}
		}
		if err := p.tick(now, what, o, &res); err != nil {
			return fmt.Errorf("player %d: %w", what, err)
		}
		s.send(now, s.up[what], evToRoom, what, p.c.Packet(now), transport.Unreliable)
		for _, m := range p.c.Outbox() {
			s.send(now, s.up[what], evToRoom, what, m, transport.Reliable)
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Frames = room.NextFrame()
	if rw != nil {
		if err := rw.Close(); err != nil {
			return res, err
		}
	}
	if watcher != nil {
		for n, h := range watcher.hashes {
			if m, ok := room.MajorityHash(n); ok {
				res.Watched++
				if m != h {
					res.WatchDiff++
				}
			}
		}
	}
	for _, e := range room.Events() {
		if e.Kind == lockstep.EventDesync {
			res.Desyncs++
		}
	}
	for n := 0; n < res.Frames; n += cfg.HashEvery {
		if _, ok := room.MajorityHash(n); ok {
			res.Checked++
		}
	}
	for i, p := range ps {
		for n, h := range p.hashes {
			if m, ok := room.MajorityHash(n); ok {
				res.Compared++
				if m != h {
					res.Differed++
				}
			}
		}
		res.LateDrops += room.PlayerStats(i).LateDrops
		if p.rb != nil {
			st := p.rb.Stats()
			res.Stats = append(res.Stats, st)
			res.Stalls += st.Stalls
			res.Stalled += st.Stalled
		} else {
			st := p.c.Playout()
			res.Stalls += st.Stalls
			res.Stalled += st.Stalled
		}
	}
	for _, p := range ps {
		if p.rb == nil {
			continue
		}
		if p.rb.Confirmed() < res.Frames-cfg.Hz {
			return res, fmt.Errorf("a player confirmed %d of %d frames", p.rb.Confirmed(), res.Frames)
		}
	}
	if res.Checked == 0 {
		return res, errors.New("no hash frame was compared: desync detection saw nothing")
	}
	return res, nil
}

func newPlayer(cfg lockstep.Config, slot int, o RollbackOptions) (*player, error) {
	c, err := lockstep.NewClient(cfg, slot)
	if err != nil {
		return nil, err
	}
	p := &player{c: c, g: o.NewGame(), rng: rand.New(rand.NewPCG(o.Seed, uint64(slot))),
		phase: rand.New(rand.NewPCG(o.Seed, uint64(slot)+100)), render: time.Second / time.Duration(o.RenderHz)}
	if !o.Plain {
		p.hashes = map[int]uint64{}
		rc := o.Rollback
		rc.OnConfirmedHash = func(frame int, hash uint64) { p.hashes[frame] = hash }
		if p.rb, err = lockstep.NewRollback(c, rc); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// down reports whether the outage loses a packet to slot at t.
func (c *Outage) down(slot int, t time.Duration) bool {
	if c == nil || slot != c.Slot || t < c.From || t >= c.From+c.For {
		return false
	}
	c.lostDown++
	return true
}

// tick is one render tick of a player.
func (p *player) tick(now time.Time, slot int, o RollbackOptions, res *RollbackResult) error {
	in := o.Input(slot, p.g, p.rng)
	changed := !bytes.Equal(in, p.in)
	if changed {
		p.in = append(p.in[:0], in...)
		// The player changed it some time since the last tick read it.
		p.press, p.wait = now.Add(-time.Duration(p.phase.Float64()*float64(p.render))), true
	}
	t0 := o.Clock()
	defer func() { res.Work += o.Clock() - t0 }()
	if p.rb == nil {
		return p.plainTick(now, slot, changed, res)
	}
	tk := p.rb.Update(now, p.in)
	if tk.Depth > 0 {
		res.Depths = append(res.Depths, tk.Depth)
	}
	for _, q := range tk.Requests {
		if q.Kind != lockstep.RequestAdvance {
			continue
		}
		res.FramesRun++
		if p.wait && ownIs(q.Frame, slot, p.in) {
			res.OwnInputMs = append(res.OwnInputMs, float64(now.Sub(p.press))/1e6)
			p.wait = false
		}
	}
	return p.rb.Run(p.g, tk.Requests)
}

// watch is a tick of the spectator: it runs the frames the jitter
// buffer plays and remembers its hashes.
func (p *player) watch(now time.Time) {
	st := p.c.Advance(now)
	for _, f := range st.Frames {
		p.g.Step(f)
		if every := p.c.Config().HashEvery; every > 0 && f.Number%every == 0 {
			p.hashes[f.Number] = p.g.Hash()
		}
	}
}

// plainTick is a tick of the plain client: the input goes out when it
// changes, frames run as the jitter buffer plays them.
func (p *player) plainTick(now time.Time, slot int, changed bool, res *RollbackResult) error {
	if changed {
		n, err := p.c.Input(now, p.in)
		if err != nil {
			p.wait = false
		}
		p.target = n
	}
	st := p.c.Advance(now)
	for _, f := range st.Frames {
		p.g.Step(f)
		res.FramesRun++
		if every := p.c.Config().HashEvery; every > 0 && f.Number%every == 0 {
			p.c.ReportHash(f.Number, p.g.Hash())
		}
		if p.wait && f.Number >= p.target && ownIs(f, slot, p.in) {
			res.OwnInputMs = append(res.OwnInputMs, float64(now.Sub(p.press))/1e6)
			p.wait = false
		}
	}
	return nil
}

// ownIs reports whether f runs with in as slot's newest input.
func ownIs(f lockstep.Frame, slot int, in []byte) bool {
	s := f.Slots[slot]
	return len(s.Inputs) > 0 && bytes.Equal(s.Inputs[len(s.Inputs)-1], in) && !s.MadeUp
}

// Percentile returns the p-th percentile (0 to 1) of xs, or 0.
func Percentile[T int | float64](xs []T, p float64) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

package interest

import (
	"math"
	"slices"
	"time"
)

// Drawn is an entity as the game should draw it for one render tick
// (Client.Render): where, facing which way, and whether it walks.
type Drawn struct {
	ID   ID
	Kind Kind
	// X and Y are the position to draw, in world units: between frames,
	// and blended toward the world's account after a correction.
	X, Y float64
	// Heading is the direction of travel in radians (0 along +X, π/2
	// along +Y); an entity that stops keeps the heading it had.
	Heading float64
	// Moving reports whether the entity walks at the frame drawn.
	Moving bool
}

// RenderOptions tune how Client.Render draws. The zero value of every
// field means its default.
type RenderOptions struct {
	// Delay fixes how far behind the world's newest frame other entities
	// are drawn. Zero (the default) learns it from how late the world's
	// news of moves arrives, as a jitter buffer does: long enough that a
	// turn is heard before it is drawn, no longer.
	Delay time.Duration
	// MaxDelay bounds the learned delay. Default 350 ms, which a link as
	// bad as a crowded Wi-Fi reaches.
	MaxDelay time.Duration
	// Extrapolate is how far past the newest frame the world could have
	// been heard from an entity is drawn along its path when the world
	// falls silent (a burst of loss): the world speaks at least every
	// half second at 16 Hz (8 frames), and this is past that. Default
	// 250 ms; past it, entities hold still until news comes.
	Extrapolate time.Duration
	// Blend is how fast, in units a second, a drawn position slides to
	// the world's account after a late broadcast or a correction moved
	// it: slow enough that the slide does not show as a jump. Default a
	// tenth of a region a second (102 units with the default regions).
	Blend float64
	// Teleport is the error in units past which the drawn position jumps
	// at once instead of sliding (a teleport, a respawn, a long
	// outage). Default twice the world's MaxSpeed (two frames at top
	// speed).
	Teleport float64
}

// Defaults of RenderOptions.
const (
	DefaultMaxRenderDelay = 350 * time.Millisecond
	DefaultExtrapolate    = 250 * time.Millisecond
)

// pathSeg is a path an entity took from a frame on: where it was at that
// frame, where it walked to, how fast.
type pathSeg struct {
	frame int
	pos   Vec
	dest  Vec
	speed int32
	// sent is, on a client, the frame of the packet that brought it: the
	// world's account as of that frame (track.news).
	sent int32
}

// pathSegs is how many path changes a pathLog keeps: at most one a frame
// counts (later ones in a frame replace it), so a second at 16 Hz.
const pathSegs = 16

// pathLog is an entity's recent paths, oldest first: where it was at any
// frame since the oldest. It is a ring, so that a new path, the common
// case, writes one entry and moves none: the world writes one for every
// change of path of every entity.
type pathLog struct {
	segs [pathSegs]pathSeg
	head int // the oldest's slot
	n    int
}

// nth returns the i-th path, oldest first.
func (l *pathLog) nth(i int) *pathSeg { return &l.segs[(l.head+i)%pathSegs] }

// add records that the entity took the path s from s.frame on. A path of
// the same frame is replaced; news of a later frame stays (it already
// accounts for this path, heard late).
func (l *pathLog) add(s pathSeg) {
	i := l.n
	for i > 0 && l.nth(i-1).frame > s.frame {
		i--
	}
	if i > 0 && l.nth(i-1).frame == s.frame {
		*l.nth(i - 1) = s
		return
	}
	if l.n == pathSegs { // drop the oldest
		if i == 0 {
			return // older than anything kept: of no use
		}
		l.head = (l.head + 1) % pathSegs
		l.n--
		i--
	}
	for j := l.n; j > i; j-- { // news heard late: make room
		*l.nth(j) = *l.nth(j - 1)
	}
	*l.nth(i) = s
	l.n++
}

// set records the path s from s.frame on, forgetting the paths from
// s.frame: the world's record when a move rewrites its past, and the
// client's prediction of the player's own entity.
func (l *pathLog) set(s pathSeg) {
	for l.n > 0 && l.nth(l.n-1).frame >= s.frame {
		l.n--
	}
	l.add(s)
}

// seg returns the index of the path that covers frame f: the newest that
// starts at or before it, or 0 when f is before them all.
func (l *pathLog) seg(f int) int {
	i := l.n - 1
	for i > 0 && l.nth(i).frame > f {
		i--
	}
	return i
}

// track is what a client heard of an entity's movement, for rendering:
// its paths and how it was last drawn.
type track struct {
	pathLog
	// The cursor: the entity stood at curPos at frame curF on path curI,
	// so that drawing frame after frame steps once, not from the path's
	// start; curI < 0 when no cursor is kept.
	curI   int
	curF   int
	curPos Vec
	// off is the blend: the drawn position minus the heard one, shrinking
	// at the Blend rate.
	offX, offY float64
	// heardX, heardY is the heard position at the last frame drawn
	// (drawn), to measure what news changes there.
	heardX, heardY float64
	drawn          bool
	heading        float64
	// seeded: the track began when the game started rendering, from what
	// the client then knew, not from news: it is drawn before its first
	// path's frame, back along it.
	seeded bool
}

// news records what a packet sent at frame s.sent said of the entity's
// path from s.frame on. Everything in a packet is the world's account as
// of the frame it was sent at, so news from a later packet wins: this
// replaces what older packets said of frames from s.frame on (a move
// stamped in the past rewrites the world's past, and what was heard of
// those frames before it came is void), and is dropped if a newer packet
// already told of a path at or before s.frame (its account includes this
// news). Packets that overtook each other on the way are sorted out so.
func (t *track) news(s pathSeg) {
	t.curI = -1
	for i := range t.n {
		if g := t.nth(i); g.frame <= s.frame && g.sent > s.sent {
			return
		}
	}
	keep := 0
	for i := range t.n {
		if g := *t.nth(i); g.frame < s.frame || g.sent >= s.sent {
			*t.nth(keep) = g
			keep++
		}
	}
	t.n = keep
	t.pathLog.add(s)
}

// set records a path replacing the later ones (pathLog.set).
func (t *track) set(s pathSeg) {
	t.curI = -1
	t.pathLog.set(s)
}

// reset forgets the track's paths and how it was drawn: an entity heard
// of anew appears where it is.
func (t *track) reset(s pathSeg) {
	*t = track{curI: -1}
	t.segs[0], t.head, t.n = s, 0, 1
}

// at returns the heard position at whole frame f: along the path that
// covers f, or, before the first path heard, back along it (an entity
// that comes into range moving was walking before it was heard of).
func (t *track) at(f int) Vec {
	i := t.seg(f)
	s := t.nth(i)
	if f < s.frame {
		return back(s, s.frame-f)
	}
	if t.curI == i && t.curF <= f && f-t.curF <= 4 {
		for ; t.curF < f; t.curF++ {
			t.curPos = Step(t.curPos, s.dest, s.speed)
		}
		return t.curPos
	}
	p := StepN(s.pos, s.dest, s.speed, f-s.frame)
	t.curI, t.curF, t.curPos = i, f, p
	return p
}

// back returns where an entity on path s stood n frames before it was
// heard: back along its line of travel at its speed.
func back(s *pathSeg, n int) Vec {
	d := s.dest.Sub(s.pos)
	if s.speed <= 0 || d == (Vec{}) {
		return s.pos
	}
	l := math.Hypot(float64(d.X), float64(d.Y))
	k := float64(s.speed) * float64(n) / l
	return Vec{s.pos.X - int32(math.Round(float64(d.X)*k)), s.pos.Y - int32(math.Round(float64(d.Y)*k))}
}

// heardAt returns the heard position at fractional frame r, between the
// whole frames around it, and the direction of travel there.
func (t *track) heardAt(r float64) (x, y float64, dx, dy float64) {
	f := int(math.Floor(r))
	a, b := t.at(f), t.at(f+1)
	k := r - float64(f)
	dx, dy = float64(b.X-a.X), float64(b.Y-a.Y)
	return float64(a.X) + k*dx, float64(a.Y) + k*dy, dx, dy
}

// moved re-measures the heard position at the last frame drawn, r, after
// news changed the track: the difference joins the blend, so that the
// drawn position does not jump, unless it is as large as a teleport.
func (t *track) moved(r, teleport float64) {
	if !t.drawn {
		return
	}
	x, y, _, _ := t.heardAt(r)
	t.offX += t.heardX - x
	t.offY += t.heardY - y
	t.heardX, t.heardY = x, y
	if math.Hypot(t.offX, t.offY) > teleport {
		t.offX, t.offY = 0, 0
	}
}

// draw returns where to draw the entity at frame r, dt seconds after the
// last draw, the blend having shrunk by up to blend units a second.
func (t *track) draw(r, dt, blend float64) (x, y float64, heading float64, moving bool) {
	x, y, dx, dy := t.heardAt(r)
	if t.drawn {
		if o := math.Hypot(t.offX, t.offY); o > 0 {
			// Half the error goes in 0.1 s (the last of it at a tenth of
			// the blend rate, so that it ends), as fast as the drawing
			// can go without moving more than blend a second faster than
			// the entity: a slide against or across its motion can take
			// more than one along it.
			sx, sy := x-t.heardX, y-t.heardY // the entity's step since the last draw
			b := blend * dt
			along := -(sx*t.offX + sy*t.offY) / o // the step's component in the direction the blend moves
			room := -along + math.Sqrt(along*along+2*b*math.Hypot(sx, sy)+b*b)
			cut := min(o, room, max(o*(1-math.Exp(-dt*7)), b/10))
			k := (o - cut) / o
			t.offX, t.offY = t.offX*k, t.offY*k
		}
	}
	t.heardX, t.heardY = x, y
	t.drawn = true
	if dx != 0 || dy != 0 {
		t.heading = math.Atan2(dy, dx)
	}
	return x + t.offX, y + t.offY, t.heading, dx != 0 || dy != 0
}

// renderClock is the client's smooth estimate of the world's frame: the
// earliest any frame has arrived, taken as on time, drifting slowly
// later so that a route that gets slower is followed, and slewed rather
// than stepped, so that what is drawn from it never jumps.
type renderClock struct {
	have  bool
	epoch time.Time
	// off is the clock's offset in frames: frame(t) = t*Hz + off, off
	// following target at a few percent of real time.
	off, target float64
	at          time.Time // when off was last brought toward target
	hz          float64
}

// clockDrift is how fast, in frames a second, the clock's target slides
// later between arrivals that set it: 3 ms a second at 16 Hz.
const clockDrift = 0.05

// clockSlew is the largest rate, relative to real time, at which the
// clock's offset follows its target.
const clockSlew = 0.05

func (k *renderClock) t(now time.Time) float64 { return now.Sub(k.epoch).Seconds() * k.hz }

// heard records that frame h arrived at now.
func (k *renderClock) heard(now time.Time, h int) {
	if !k.have {
		k.have, k.epoch, k.at = true, now, now
		k.off = float64(h)
		k.target = k.off
		return
	}
	k.settle(now)
	if s := float64(h) - k.t(now); s > k.target {
		k.target = s
		if s > k.off+k.hz { // a second off: a stalled client or a new route; no slewing that far
			k.off = s
		}
	}
}

// settle brings the offset toward its target for the time since the
// last call, and lets the target drift.
func (k *renderClock) settle(now time.Time) {
	dt := now.Sub(k.at).Seconds()
	if dt <= 0 {
		return
	}
	k.at = now
	k.target -= clockDrift * dt
	step := clockSlew * dt * k.hz
	k.off += max(-step, min(step, k.target-k.off))
}

// frame returns the clock's frame at now.
func (k *renderClock) frame(now time.Time) float64 {
	k.settle(now)
	return k.t(now) + k.off
}

// lateSamples is how many lateness samples the learned delay is the
// quantile of: about 16 s of a busy range's moves.
const lateSamples = 256

// lateQuantile is the share of news the learned delay waits for: nearly
// all, since a move heard after its frame is drawn wrong until the slide
// ends.
const lateQuantile = 0.99

// renderer is a client's drawing state: the clock, the learned delay and
// the frame last drawn.
type renderer struct {
	opt     RenderOptions
	clock   renderClock
	late    [lateSamples]float32 // frames between the clock and the frame of news, a ring
	nLate   int
	learnt  int // nLate when the delay was last learned
	held    heldLate
	sorted  [lateSamples]float32
	delay   float64 // frames, learned
	newest  int     // newest frame heard
	r       float64 // frame drawn last
	rAt     time.Time
	drawnAt float64 // the frame others were last drawn at, past the extrapolation's limit or not
	selfT   track   // the player's own entity: its predicted paths
	selfAt  float64 // the frame the player's own entity was last drawn at
	// on: the game renders (Render was called), so every known entity
	// keeps a track, taken from spare and given back when it is dropped;
	// a client that never renders (a bot) keeps none.
	on    bool
	spare []*track
}

// track returns a track for an entity first heard of as s.
func (rd *renderer) track(s pathSeg) *track {
	var t *track
	if n := len(rd.spare); n > 0 {
		t, rd.spare = rd.spare[n-1], rd.spare[:n-1]
	} else {
		t = new(track)
	}
	t.reset(s)
	return t
}

func (rd *renderer) init(cfg Config) {
	rd.clock.hz = float64(cfg.Hz)
	rd.selfT.curI = -1
	rd.setOptions(cfg, RenderOptions{})
}

func (rd *renderer) setOptions(cfg Config, o RenderOptions) {
	if o.MaxDelay <= 0 {
		o.MaxDelay = DefaultMaxRenderDelay
	}
	if o.Extrapolate <= 0 {
		o.Extrapolate = DefaultExtrapolate
	}
	if o.Blend <= 0 {
		o.Blend = float64(cfg.RegionSize) / 10
	}
	if o.Teleport <= 0 {
		o.Teleport = 2 * float64(cfg.MaxSpeed)
	}
	rd.opt = o
}

// heard records a header's frame.
func (rd *renderer) heard(now time.Time, h int) {
	rd.clock.heard(now, h)
	rd.newest = max(rd.newest, h)
}

// news records that news of frame f arrived at now: how late it came is
// what the learned delay covers.
func (rd *renderer) news(now time.Time, f int) {
	l := rd.clock.frame(now) - float64(f)
	rd.late[rd.nLate%lateSamples] = float32(max(l, 0))
	rd.nLate++
}

// heldLate is a move's lateness sample, held until the next message: a
// move followed by its entity's logic in the same packet is a repair's or
// a discovery answer's, the start of a path resent on purpose long after
// it began, which says nothing of how late broadcasts come.
type heldLate struct {
	id    ID
	frame int
	at    time.Time
	have  bool
}

// heardMove holds the lateness of a move of id stamped f.
func (rd *renderer) heardMove(now time.Time, id ID, f int) {
	rd.commit()
	rd.held = heldLate{id, f, now, true}
}

// heardLogic samples the lateness of a logic message about id as of
// frame f, and drops the held move's if it was id's.
func (rd *renderer) heardLogic(now time.Time, id ID, f int) {
	if rd.held.have && rd.held.id == id {
		rd.held.have = false
	}
	rd.commit()
	rd.news(now, f)
}

// commit samples the held move's lateness: a broadcast's.
func (rd *renderer) commit() {
	if rd.held.have {
		rd.held.have = false
		rd.news(rd.held.at, rd.held.frame)
	}
}

// learn brings the learned delay up to date with the samples, every 16 of
// them (and each of the first 16): the quantile of a sorted copy.
func (rd *renderer) learn() {
	if rd.nLate == rd.learnt || (rd.nLate-rd.learnt < 16 && rd.learnt >= 16) {
		return
	}
	rd.learnt = rd.nLate
	n := min(rd.nLate, lateSamples)
	s := rd.sorted[:n]
	copy(s, rd.late[:n])
	slices.Sort(s)
	rd.delay = float64(s[int(lateQuantile*float64(n-1))]) + 0.25
}

// delayFrames is the delay other entities are drawn behind the clock.
func (rd *renderer) delayFrames() float64 {
	if rd.opt.Delay > 0 {
		return rd.opt.Delay.Seconds() * rd.clock.hz
	}
	rd.learn()
	return min(rd.delay, rd.opt.MaxDelay.Seconds()*rd.clock.hz)
}

// frameAt returns the frame to draw others at now, the clock less the
// delay, moving at 0.9 to 1.1 times real time so that a change of delay
// does not jump; it does not move backwards.
func (rd *renderer) frameAt(now time.Time) (r, dt float64) {
	target := rd.clock.frame(now) - rd.delayFrames()
	if rd.rAt.IsZero() { // the first frame drawn
		rd.r, rd.rAt = target, now
		return target, 0
	}
	dt = now.Sub(rd.rAt).Seconds()
	if dt <= 0 {
		return rd.r, 0
	}
	step := dt * rd.clock.hz
	r = rd.r + step
	switch {
	case math.Abs(target-r) > rd.clock.hz: // a second off: jump
		r = max(target, rd.r)
	default:
		r = max(rd.r+0.9*step, min(rd.r+1.1*step, target))
	}
	rd.r, rd.rAt = r, now
	return r, dt
}

// SetRender changes how Render draws.
func (c *Client) SetRender(o RenderOptions) { c.rd.setOptions(c.lay.cfg, o) }

// RenderDelay returns how far behind the world's frame other entities
// are drawn: the fixed delay, or the one learned so far.
func (c *Client) RenderDelay() time.Duration {
	return time.Duration(c.rd.delayFrames() * float64(c.lay.cfg.Period()))
}

// RenderFrame returns the frame other entities were drawn at by the last
// Render: a fraction between two world frames. Client.Skill and the
// other actions tell the world it, so that it judges them against what
// the player saw (World.OnAction).
func (c *Client) RenderFrame() float64 { return c.rd.r }

// Render appends to dst how to draw every entity the client knows and the
// player's own, for a render tick at now, and returns it. Call it once a
// render tick, after Advance.
//
// Other entities are drawn a small delay behind the world (RenderDelay),
// between the frames they were heard at, so that a turn is drawn when it
// happened rather than guessed and corrected; past the newest frame heard
// they walk on along their paths for at most RenderOptions.Extrapolate.
// The player's own entity is drawn at the present, where the client
// predicts it. When news moves what was drawn (a turn heard late, a
// correction of the player's move), the drawing slides there at the
// Blend rate instead of jumping, unless the gap is as large as a
// teleport. An entity that comes into range appears once the frame drawn
// reaches the frame it was first heard at, where it was then.
//
// Once dst has room for every entity, and the client's pool of tracks
// (one an entity in range, kept from the first Render on) has grown to the
// range's population, Render and the packets' handling allocate nothing.
func (c *Client) Render(now time.Time, dst []Drawn) []Drawn {
	rd := &c.rd
	if !c.synced || !rd.clock.have {
		return dst
	}
	if !rd.on {
		// The first render: a track for every entity known, from where
		// the client has it now.
		rd.on = true
		for _, k := range c.ents {
			k.tr = rd.track(pathSeg{c.frame, k.lg.Pos, k.lg.Dest, k.lg.Speed, int32(c.base)})
			k.tr.seeded = true
		}
	}
	r, dt := rd.frameAt(now)
	// The world is silent between changes, but speaks at least every
	// keepaliveFrames: past that and the allowance, news is missing.
	limit := float64(rd.newest+keepaliveFrames) + rd.opt.Extrapolate.Seconds()*rd.clock.hz
	ro := min(r, limit)
	rd.drawnAt = ro
	for id, k := range c.ents {
		if k.tr == nil || (!k.tr.seeded && ro < float64(k.tr.nth(0).frame)) {
			continue // not heard of by the frame drawn: it appears when the drawing gets there
		}
		x, y, h, mv := k.tr.draw(ro, dt, rd.opt.Blend)
		dst = append(dst, Drawn{ID: id, Kind: k.kind, X: x, Y: y, Heading: h, Moving: mv})
	}
	if c.haveMe && rd.selfT.n > 0 {
		f := min(rd.clock.frame(now), float64(c.frame)+1)
		f = max(f, float64(c.frame)-1)
		x, y, h, mv := rd.selfT.draw(f, dt, rd.opt.Blend)
		rd.selfAt = f
		dst = append(dst, Drawn{ID: c.self, Kind: c.meKind, X: x, Y: y, Heading: h, Moving: mv})
	}
	return dst
}

// correction is the world's record of the player's own entity, heard in
// a packet: its path from a frame, and the first command (low bits of its
// sequence number) it voids if stamped before that frame.
type correction struct {
	have bool
	seg  pathSeg
	void uint8
}

// correct adopts the world's record of the player's own entity, once the
// client's frame has reached the frame it was sent at, replays the move
// it voided (reconcile), and lets the drawn position slide to the result.
func (c *Client) correct() {
	s := c.corr.seg
	c.corr.have = false
	c.me.Pos, c.me.Dest, c.me.Speed = s.pos, s.dest, s.speed
	c.rd.selfT.set(s)
	c.toNow(&c.me, s.frame)
	c.haveMe = true
	c.stats.Corrections++
	if !c.noReplay {
		c.reconcile(s.frame, c.corr.void)
	}
	c.rd.selfT.moved(c.rd.selfAt, c.rd.opt.Teleport)
}

// reconcile replays the player's input that a correction at frame f
// voided: the world holds void moves the client stamped before f, sent
// after the command the correction answers (voidFrom on the wire). The
// newest of them, the direction the player last asked for, is sent again
// from the corrected position, so that a correction of an old move does
// not undo newer input; a replayed move is not replayed twice. A move
// stamped at or after f is the world's to judge against its record.
func (c *Client) reconcile(f int, void uint8) {
	from := max(int(int8(void-uint8(c.firstCmd))), 0)
	var last *command
	for i := from; i < len(c.unacked); i++ {
		cmd := &c.unacked[i]
		if cmd.tag != cmdMove {
			continue
		}
		if cmd.frame >= f {
			return
		}
		last = cmd
	}
	if last == nil || last.replay || (last.dest == c.me.Dest && last.speed == c.me.Speed) {
		return
	}
	dest, speed := last.dest, last.speed
	if c.queue(command{tag: cmdMove, src: c.me.Pos, dest: dest, speed: speed, replay: true}) != nil {
		return
	}
	c.me.Dest, c.me.Speed = dest, speed
	c.rd.selfT.set(pathSeg{c.frame, c.me.Pos, dest, speed, 0})
	c.stats.Replays++
}

// SetReplay turns the replay of voided moves after a correction on (the
// default) or off. Off, a correction stands alone: the player's moves sent
// before the client heard it are lost, as a strictly server-driven game
// may want.
//
// On, a move the player made while the world was moving it (a knock-back
// with World.Move) takes over from the knock-back once replayed, as the
// player's newer input. A game whose forced moves must hold (a stun, a
// pull) lowers the player's speed limit for their length (World.SetSpeedLimit,
// down to 1): the replay is refused, and not replayed again.
func (c *Client) SetReplay(on bool) { c.noReplay = !on }

// heardPath records news of entity id's path, from a move (a broadcast,
// or the start of a path a repair or a discovery answer resends) or a
// logic message: the track takes it, what was drawn slides to it, and how
// late it came teaches the delay.
func (c *Client) heardPath(now time.Time, id ID, k *known, s pathSeg, move bool) {
	if move {
		c.rd.heardMove(now, id, s.frame)
	} else {
		c.rd.heardLogic(now, id, s.frame)
	}
	if k.tr == nil {
		return // the game does not render
	}
	k.tr.news(s)
	k.tr.moved(c.rd.drawnAt, c.rd.opt.Teleport)
}

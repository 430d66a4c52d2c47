package lockstep

import (
	"bytes"
	"fmt"
	"math"
	"time"
)

// RollbackGame is a game the prediction mode can run: a deterministic
// Simulation whose state it can save into a buffer and load back, every
// frame if need be. SaveState must append the whole state that Step
// reads (a field left out is the classic rollback bug: SyncTest finds
// it); LoadState(SaveState(nil)) must give a game that steps and hashes
// the same.
type RollbackGame interface {
	Simulation
	// SaveState appends the game's state to dst and returns the result.
	SaveState(dst []byte) []byte
	// LoadState replaces the game's state with one SaveState produced.
	LoadState(state []byte) error
}

// RequestKind is what a Request asks of the game.
type RequestKind uint8

const (
	// RequestSave asks the game to save its state into Request.State:
	// State.Data = game.SaveState(State.Data[:0]).
	RequestSave RequestKind = iota + 1
	// RequestLoad asks the game to load the state in Request.State.Data.
	RequestLoad
	// RequestAdvance asks the game to run Request.Frame.
	RequestAdvance
	// RequestRestore asks the game to restore a snapshot of the room's
	// simulation (Snapshotter.Restore(Request.Snapshot)): a player who
	// joined a running match starts from it.
	RequestRestore
)

func (k RequestKind) String() string {
	switch k {
	case RequestSave:
		return "save"
	case RequestLoad:
		return "load"
	case RequestAdvance:
		return "advance"
	case RequestRestore:
		return "restore"
	}
	return fmt.Sprintf("RequestKind(%d)", uint8(k))
}

// Request is one thing the game must do on this render tick. The game
// carries out a tick's requests in order (Rollback.Run does it for a
// RollbackGame).
type Request struct {
	Kind RequestKind
	// Frame is the frame to run (RequestAdvance). Its slots are valid
	// until the next Update.
	Frame Frame
	// Confirmed is set when Frame holds the room's inputs; otherwise some
	// slots are predicted and the frame may be run again.
	Confirmed bool
	// Hash asks for the game's Hash() after running Frame, handed back
	// with ReportHash: the session passes it to the room once the state
	// is confirmed, never before.
	Hash bool
	// State is the session's snapshot cell (RequestSave, RequestLoad).
	State *State
	// Snapshot is the room simulation's snapshot (RequestRestore).
	Snapshot []byte
}

// State is a saved game state, in a ring the session owns: its Data is
// reused, so saving costs no allocation once the ring is warm.
type State struct {
	Frame int    // the state before this frame runs (after Frame-1)
	Data  []byte // what the game's SaveState wrote
}

// RollbackConfig configures a prediction session (NewRollback).
type RollbackConfig struct {
	// InputDelay is how many frames after the present the local input
	// takes effect (default 0: in the next frame run). Each frame of
	// delay hides a frame of round trip: rollbacks are shallower, but the
	// player's own character answers a frame later.
	InputDelay int
	// MaxPrediction bounds how many frames the present may run beyond the
	// newest frame the room has confirmed; there the session stalls rather
	// than predict further (default: a 150 ms round trip at the room's
	// rate, plus one: 10 at 60 Hz). Through a relay a remote input reaches
	// a client a whole round trip after it was pressed.
	MaxPrediction int
	// Predict, when set, predicts a remote player's slot in frame from its
	// slot in the newest confirmed frame. The default repeats it: a held
	// button stays held, the way a fighting game's controller state does.
	// It must be deterministic only in the sense that a wrong guess costs
	// a rollback, never a desync.
	Predict func(slot int, last Slot, frame int) Slot
	// OnConfirmedHash, when set, sees every hash the session passes to
	// the room: the game's hash after a frame once its state is
	// confirmed. A page or a test compares clients with it.
	OnConfirmedHash func(frame int, hash uint64)
}

// Prediction bounds.
const (
	MaxInputDelay    = 30  // frames
	MaxMaxPrediction = 120 // frames
	// The present's clock runs up to 5% slow when ahead of its target
	// (ahead costs only deeper rollbacks), and up to 25% fast when behind:
	// there the player's inputs reach the room after their frames were
	// cut.
	slowGain, maxSlow = 0.02, 0.05
	fastGain, maxFast = 0.1, 0.25
)

// withDefaults fills in a RollbackConfig for a room running at hz.
func (rc RollbackConfig) withDefaults(hz int) RollbackConfig {
	if rc.MaxPrediction == 0 {
		rc.MaxPrediction = int(math.Ceil(0.150*float64(hz))) + 1
	}
	return rc
}

// RollbackStats count what a session did.
type RollbackStats struct {
	Frames      int           // frames run for the first time
	Predicted   int           // of those, frames run with a predicted slot
	Rollbacks   int           // times a confirmed frame differed from the prediction
	Resimulated int           // frames run again after a rollback
	MaxDepth    int           // the deepest rollback, in frames
	Stalls      int           // times the present stopped at MaxPrediction
	Stalled     time.Duration // time spent stopped there
}

// RollbackTick is what the session asks of the game on one render tick
// and what happened.
type RollbackTick struct {
	// Requests are the saves, loads and frames to run, in order.
	Requests []Request
	// Present is the number of frames run once the requests are done: the
	// state to draw is the one after frame Present-1.
	Present int
	// Confirmed is the number of frames whose state is the room's: frames
	// 0 .. Confirmed-1 ran with its inputs.
	Confirmed int
	// Depth is how many frames this tick rolled back (0: none), and
	// Resimulated how many it ran again.
	Depth, Resimulated int
	// Stalled is set while the present waits at MaxPrediction.
	Stalled bool
	// CatchingUp is set while a player who joined a running match runs the
	// frames it missed; it predicts nothing until it is live.
	CatchingUp bool
	// Alpha is how far the clock is into the next frame, 0 to 1, for
	// drawing between states.
	Alpha float64
	// WaitingFor, in a strict room (Config.Strict), are the slots the room
	// waits for before it cuts its next frame, once it has waited long
	// enough to say so (Client.WaitingFor); nil when it waits for no one.
	WaitingFor []int
}

// Rollback is the prediction mode of a lockstep client (the
// fighting-game mode): the player's own input shows in the next frame
// run, the other players' inputs are predicted, and when the room's
// frames arrive and differ from the prediction the session loads the last
// confirmed state and runs the frames again, in the same render tick.
//
// The room stays the timekeeper: its frames are the truth, and it fills
// in late players as usual. The session runs its present ahead of the
// room's cut by the lead its inputs need to arrive in time, on a clock
// that runs up to 5% slow when ahead of that and up to 25% fast when
// behind (driven by the room's reports of how early each input arrived),
// and never more than MaxPrediction frames beyond the newest confirmed
// frame.
//
// The game is driven by requests: each render tick call
// Update with the player's input and carry out the returned requests in
// order (or pass them to Run). Hashes for desync detection are taken of
// confirmed states only. Like Client, it is not safe for concurrent use.
type Rollback struct {
	c       *Client
	cfg     RollbackConfig
	players int

	started bool
	clock   float64 // the present's position in frames
	lastNow time.Time
	present int     // frames 0 .. present-1 have run, some predicted
	settled int     // frames 0 .. settled-1 ran with the room's inputs
	conf    []Frame // the room's frames from settled on, not yet run as such
	confBuf []Frame // conf's array
	last    []Slot  // each slot in the newest settled frame
	ring    []rbRec // frames settled .. present-1, by number % len
	own     []ownIn // the local inputs, by frame % len
	ownLast []byte  // the last local input given, for a made-up own slot
	hashes  []int   // confirmed frames whose hash the game owes this tick
	lastIn  []byte

	stalled   bool
	stallFrom time.Time
	stats     RollbackStats
	tick      RollbackTick
}

// rbRec is one frame run since the newest settled one: the inputs it ran
// with and the state before it.
type rbRec struct {
	frame  Frame
	one    [][1][]byte
	buf    [][]byte
	state  State
	want   bool // a hash frame: the hash was asked for
	hashed bool
	hash   uint64
}

type ownIn struct {
	frame int
	data  []byte
	set   bool
}

// NewRollback returns a prediction session over c, a player's client
// (not a spectator's, not in an authoritative room). Use c for nothing
// but delivering packets, sending its uplink and reading its counters:
// the session takes the frames and sends the inputs.
func NewRollback(c *Client, cfg RollbackConfig) (*Rollback, error) {
	switch {
	case c.slot < 0:
		return nil, ErrSpectator
	case c.cfg.Authoritative:
		return nil, fmt.Errorf("%w: an authoritative room sends state, not inputs: nothing to predict", ErrConfig)
	case c.cfg.Substeps > 1:
		return nil, fmt.Errorf("%w: the prediction mode runs one logic frame per relay frame: raise Hz instead of Substeps", ErrConfig)
	}
	cfg = cfg.withDefaults(c.cfg.Hz)
	switch {
	case cfg.InputDelay < 0 || cfg.InputDelay > MaxInputDelay:
		return nil, fmt.Errorf("%w: input delay %d frames, want 0 to %d", ErrConfig, cfg.InputDelay, MaxInputDelay)
	case cfg.MaxPrediction < 1 || cfg.MaxPrediction > MaxMaxPrediction:
		return nil, fmt.Errorf("%w: max prediction %d frames, want 1 to %d", ErrConfig, cfg.MaxPrediction, MaxMaxPrediction)
	case cfg.InputDelay+cfg.MaxPrediction > c.cfg.MaxAhead:
		return nil, fmt.Errorf("%w: input delay %d and max prediction %d frames reach beyond the room's window of %d", ErrConfig, cfg.InputDelay, cfg.MaxPrediction, c.cfg.MaxAhead)
	}
	n := c.cfg.Players
	r := &Rollback{c: c, cfg: cfg, players: n, last: make([]Slot, n),
		ring: make([]rbRec, cfg.MaxPrediction+2), own: make([]ownIn, cfg.MaxPrediction+cfg.InputDelay+2)}
	for i := range r.last {
		r.last[i].MadeUp = true
	}
	for i := range r.ring {
		r.ring[i] = rbRec{frame: Frame{Number: -1, Slots: make([]Slot, n)}, one: make([][1][]byte, n), buf: make([][]byte, n)}
	}
	for i := range r.own {
		r.own[i].frame = -1
	}
	return r, nil
}

// Client returns the client the session runs over.
func (r *Rollback) Client() *Client { return r.c }

// Stats returns the session's counters.
func (r *Rollback) Stats() RollbackStats {
	s := r.stats
	if r.stalled {
		s.Stalled += r.lastNow.Sub(r.stallFrom)
	}
	return s
}

// Present returns the number of frames run (the state drawn is after
// frame Present-1), and Confirmed the number run with the room's inputs.
func (r *Rollback) Present() int { return r.present }

// Confirmed returns the number of frames whose state is confirmed.
func (r *Rollback) Confirmed() int { return r.settled }

// Update is called on every render tick with the player's input now (its
// controller state: the session puts it in every new frame, at
// InputDelay) after the client took what arrived. It returns what the
// game must do this tick; send the client's uplink right after, so the
// inputs leave at once.
func (r *Rollback) Update(now time.Time, input []byte) RollbackTick {
	r.tick = RollbackTick{Requests: r.tick.Requests[:0]}
	r.hashes = r.hashes[:0]
	r.lastIn = append(r.lastIn[:0], input...)
	st := r.c.confirmedFrames(now)
	if st.Snapshot != nil {
		r.restart(st.SnapshotFrame)
		r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestRestore, Snapshot: st.Snapshot})
	}
	r.conf = append(r.confBuf[:0], r.conf...) // in place: what was taken from the front is gone
	for _, f := range st.Frames {
		if f.Number == r.settled+len(r.conf) {
			r.conf = append(r.conf, f)
		}
	}
	r.confBuf = r.conf[:0]
	if st.CatchingUp {
		if r.present > r.settled && r.present-r.settled < len(r.ring) {
			// It predicted on the newest frames before the room's catch-up
			// began: back to the state before the first guess.
			r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestLoad, State: &r.ring[r.settled%len(r.ring)].state})
			r.present = r.settled
		}
		// Run what the room has; predict nothing until live.
		for len(r.conf) > 0 {
			r.runConfirmed()
		}
		r.present = r.settled
		return r.done(now, true)
	}
	r.fold()
	if !r.started {
		if !r.c.clockSet {
			return r.done(now, false)
		}
		r.started, r.clock = true, max(r.target(now), float64(r.present))
	} else {
		r.moveClock(now)
	}
	want := int(math.Floor(r.clock)) + 1
	limit := r.c.have + r.cfg.MaxPrediction
	stall := want > limit
	if stall {
		want = limit
		r.clock = min(r.clock, float64(limit))
	}
	r.setStalled(now, stall)
	r.advance(now, want, true)
	return r.done(now, false)
}

// restart starts the session over at frame n, where a snapshot put the
// game.
func (r *Rollback) restart(n int) {
	r.present, r.settled, r.conf = n, n, r.conf[:0]
	for i := range r.last {
		r.last[i] = Slot{MadeUp: true}
	}
}

// done finishes a tick.
func (r *Rollback) done(now time.Time, catching bool) RollbackTick {
	r.lastNow = now
	t := &r.tick
	t.Present, t.Confirmed, t.Stalled, t.CatchingUp = r.present, r.settled, r.stalled, catching
	t.WaitingFor = r.c.WaitingFor()
	if !catching && r.started {
		t.Alpha = max(0, min(1, r.clock-float64(r.present-1)))
	}
	return *t
}

// target is the frame the present should be in at now: the room's frame
// estimate plus the lead the client's inputs need, less the input delay.
func (r *Rollback) target(now time.Time) float64 {
	return r.c.serverFrame(now) + r.c.lead - float64(r.cfg.InputDelay)
}

// moveClock advances the present's clock by the time since the last tick,
// a little fast when behind the target and a little slow when ahead; far
// off (joining, after a stall) it jumps.
func (r *Rollback) moveClock(now time.Time) {
	dt := now.Sub(r.lastNow).Seconds()
	dt = max(0, min(dt, 0.25))
	target := r.target(now)
	skew := max(-maxSlow, (target-r.clock)*slowGain)
	if target > r.clock {
		skew = min(maxFast, (target-r.clock)*fastGain)
	}
	r.clock += dt * float64(r.c.cfg.Hz) * (1 + skew)
	if math.Abs(target-r.clock) > float64(r.cfg.MaxPrediction) {
		r.clock = max(target, float64(r.present-1))
	}
}

func (r *Rollback) setStalled(now time.Time, stall bool) {
	switch {
	case stall && !r.stalled:
		r.stats.Stalls++
		r.stallFrom = now
	case !stall && r.stalled:
		r.stats.Stalled += now.Sub(r.stallFrom)
	}
	r.stalled = stall
}

// fold compares the confirmed frames that arrived for frames already run
// with what they ran with. Up to the first difference the prediction was
// right; from there the session loads the state before it and runs the
// frames again.
func (r *Rollback) fold() {
	for len(r.conf) > 0 && r.conf[0].Number < r.present {
		rec := &r.ring[r.settled%len(r.ring)]
		if !sameSlots(r.conf[0].Slots, rec.frame.Slots) {
			break
		}
		if rec.hashed {
			r.confirmHash(rec.frame.Number, rec.hash)
		}
		r.settle(&r.conf[0])
		r.conf = r.conf[1:]
	}
	if len(r.conf) == 0 || r.conf[0].Number >= r.present {
		return
	}
	from, to := r.settled, r.present
	rec := &r.ring[from%len(r.ring)]
	r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestLoad, State: &rec.state})
	r.stats.Rollbacks++
	r.stats.MaxDepth = max(r.stats.MaxDepth, to-from)
	r.tick.Depth = to - from
	r.present = from
	r.advance(time.Time{}, to, false)
	r.tick.Resimulated = to - from
	r.stats.Resimulated += to - from
}

// settle makes f, the room's frame r.settled, the newest confirmed one.
func (r *Rollback) settle(f *Frame) {
	copy(r.last, f.Slots)
	r.settled++
}

// runConfirmed runs the next confirmed frame, from the present.
func (r *Rollback) runConfirmed() {
	f := r.conf[0]
	r.conf = r.conf[1:]
	h := r.hashFrame(f.Number)
	if h {
		r.hashes = append(r.hashes, f.Number)
	}
	r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestAdvance, Frame: f, Confirmed: true, Hash: h})
	r.settle(&f)
	r.present = r.settled
}

// hashFrame reports whether the room wants the hash after frame n.
func (r *Rollback) hashFrame(n int) bool {
	every := r.c.cfg.HashEvery
	return every > 0 && n%every == 0
}

// advance runs frames from the present up to want-1: the room's where it
// has sent them, predicted beyond. fresh frames (not a re-run) take the
// local input, which is sent to the room.
func (r *Rollback) advance(now time.Time, want int, fresh bool) {
	for r.present < want {
		n := r.present
		if fresh {
			r.stats.Frames++
			r.send(now, n+r.cfg.InputDelay)
		}
		if len(r.conf) > 0 && r.conf[0].Number == n && r.settled == n {
			r.runConfirmed()
			continue
		}
		if fresh {
			r.stats.Predicted++
		}
		rec := &r.ring[n%len(r.ring)]
		rec.state.Frame = n
		r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestSave, State: &rec.state})
		r.predict(rec, n)
		rec.want, rec.hashed = r.hashFrame(n), false
		r.tick.Requests = append(r.tick.Requests, Request{Kind: RequestAdvance, Frame: rec.frame, Hash: rec.want})
		r.present++
	}
}

// send stamps the local input for frame n and queues it for the room.
func (r *Rollback) send(now time.Time, n int) {
	if n < r.c.have {
		return // cut already: it could only be late
	}
	got, err := r.c.inputFor(now, n, r.lastIn)
	if err != nil {
		return // the room makes the input up, and the frame says so
	}
	o := &r.own[got%len(r.own)]
	o.frame, o.set = got, true
	o.data = append(o.data[:0], r.lastIn...)
}

// predict fills rec with frame n's inputs as the session guesses them: the
// local player's own, the others' from their newest confirmed slot.
func (r *Rollback) predict(rec *rbRec, n int) {
	rec.frame.Number = n
	for i := range rec.frame.Slots {
		var s Slot
		var own []byte
		switch {
		case i != r.c.slot && r.cfg.Predict != nil:
			s = r.cfg.Predict(i, r.last[i], n)
		case i != r.c.slot:
			s = repeatSlot(r.last[i])
		default:
			if o := &r.own[n%len(r.own)]; o.set && o.frame == n {
				own = o.data
				r.ownLast = append(r.ownLast[:0], o.data...)
			} else { // not sent: the room makes it up
				s.MadeUp = true
				if r.c.cfg.Fill == FillRepeat && r.ownLast != nil {
					own = r.ownLast
				}
			}
		}
		if n := len(s.Inputs); n > 0 {
			own = s.Inputs[n-1]
		}
		// Keep a copy: the frame must survive the slots it came from.
		d := &rec.frame.Slots[i]
		d.MadeUp, d.Gone, d.Inputs = s.MadeUp, s.Gone && s.MadeUp, nil
		if own != nil {
			rec.buf[i] = append(rec.buf[i][:0], own...)
			rec.one[i][0] = rec.buf[i]
			d.Inputs = rec.one[i][:]
		}
	}
}

// repeatSlot is the default prediction: the slot's newest input again.
func repeatSlot(last Slot) Slot {
	if n := len(last.Inputs); n > 1 {
		return Slot{MadeUp: last.MadeUp, Inputs: last.Inputs[n-1:]}
	}
	return last
}

// sameSlots reports whether a frame ran with the room's inputs: the same
// made-up and gone marks and the same inputs in every slot.
func sameSlots(a, b []Slot) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.MadeUp != y.MadeUp || x.Gone != y.Gone || len(x.Inputs) != len(y.Inputs) {
			return false
		}
		for k := range x.Inputs {
			if !bytes.Equal(x.Inputs[k], y.Inputs[k]) {
				return false
			}
		}
	}
	return true
}

// ReportHash hands back the game's hash after running frame, as a request
// with Hash asked. The session passes it to the room when the frame's
// state is confirmed: at once for a confirmed frame, or when the room's
// frame matches the prediction it ran with.
func (r *Rollback) ReportHash(frame int, hash uint64) {
	for i, n := range r.hashes {
		if n == frame {
			r.hashes = append(r.hashes[:i], r.hashes[i+1:]...)
			r.confirmHash(frame, hash)
			return
		}
	}
	if frame < r.settled || frame >= r.present {
		return
	}
	if rec := &r.ring[frame%len(r.ring)]; rec.frame.Number == frame && rec.want {
		rec.hash, rec.hashed = hash, true
	}
}

// confirmHash passes the hash of a confirmed state on to the room.
func (r *Rollback) confirmHash(frame int, hash uint64) {
	r.c.ReportHash(frame, hash)
	if r.cfg.OnConfirmedHash != nil {
		r.cfg.OnConfirmedHash(frame, hash)
	}
}

// Run carries out a tick's requests on g, in order, handing the hashes
// asked for back to the session.
func (r *Rollback) Run(g RollbackGame, reqs []Request) error {
	return runRequests(g, reqs, r.ReportHash)
}

func runRequests(g RollbackGame, reqs []Request, report func(int, uint64)) error {
	for i := range reqs {
		q := &reqs[i]
		switch q.Kind {
		case RequestSave:
			q.State.Data = g.SaveState(q.State.Data[:0])
		case RequestLoad:
			if err := g.LoadState(q.State.Data); err != nil {
				return fmt.Errorf("lockstep: loading the state before frame %d: %w", q.State.Frame, err)
			}
		case RequestAdvance:
			g.Step(q.Frame)
			if q.Hash {
				report(q.Frame.Number, g.Hash())
			}
		case RequestRestore:
			s, ok := g.(Snapshotter)
			if !ok {
				return fmt.Errorf("%w: the room sent a snapshot and the game cannot restore one (Snapshotter)", ErrConfig)
			}
			if err := s.Restore(q.Snapshot); err != nil {
				return fmt.Errorf("lockstep: restoring the room's snapshot: %w", err)
			}
		}
	}
	return nil
}

// confirmedFrames takes every frame received in order since the last call
// (the prediction mode runs them as they come, with no playout delay), or
// while catching up what catchUp hands out.
func (c *Client) confirmedFrames(now time.Time) Step {
	if c.catching {
		return c.catchUp(now)
	}
	s := Step{Frames: c.queue} // the caller copies them before the next Deliver
	c.queued += len(c.queue)
	c.queue = c.queue[:0]
	if n := len(s.Frames); n > 0 {
		c.ran = s.Frames[n-1].Number + 1
		c.done = c.ran
	}
	return s
}

package lockstep

import (
	"fmt"
	"math"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Client is the player's half of a lockstep match. It stamps inputs with
// the frame they should reach the room for, repeats them until the room
// acknowledges them, reassembles the frame sequence from redundant and
// retransmitted packets, acknowledges what it holds, and plays frames out
// through a JitterBuffer at the game's own render rate.
//
// Like the Room it is driven by explicit calls with the time (Input,
// Packet, Deliver, Advance) and is not safe for concurrent use.
type Client struct {
	cfg  Config
	slot int

	// Downlink.
	have     int           // frames 0 .. have-1 received
	ahead    map[int]Frame // frames received beyond have
	queue    []Frame       // frames have been received, not yet taken by Advance: in qarr's array
	qarr     []Frame       // queue's array from its start (push)
	queued   int           // number of the first frame in queue
	prevReal [][]byte      // last real inputs of each slot, for FillRepeat
	jb       *JitterBuffer
	received []int  // frames first received by the last Deliver
	recv     uint16 // downlink packets received
	lastSeq  uint16
	seqSeen  bool
	run      int // current run of lost downlink packets
	maxRun   int // longest run recently
	runDecay int

	// Uplink.
	nextSeq               uint32
	unacked               []sentInput
	spare                 [][]byte // buffers of acknowledged inputs, for the next ones
	minOffset             float64  // ms: the earliest (arrival - cut schedule) seen, the server frame clock's zero
	clockSet              bool
	lead                  float64 // frames of lead over the estimated server frame
	lastTarget, perTarget int     // the last input's frame, and inputs aimed at it
	stamps                []stamp
	excess                [marginWindow]float64 // recent margins less the lead used, in frames: a ring
	excessN               int                   // margins taken so far (the ring's next slot is excessN % marginWindow)
	notices               []Notice

	w   codec.Writer
	dl  downlink
	buf []byte
	up  []upInput // Packet's list of the inputs it sends, reused
	sub []Frame   // logic frames of relay frames handed out, not yet due (Substeps)

	held [CarryFrames]Frame // the newest frames received in order, by number % CarryFrames (Carry)

	strict clientStrict // Config.Strict
	views  clientViews  // Config.Authoritative: views that come in parts

	clientLife
}

type sentInput struct {
	seq   uint32
	frame int
	data  []byte
}

// stamp remembers the lead an input was actually given (its target minus
// the estimated server frame when it was stamped), to read the room's
// margin report for it.
type stamp struct {
	seq  uint32
	lead float64
}

// NewClient returns the client half for the player in slot of a room with
// configuration cfg (as the room has it).
func NewClient(cfg Config, slot int) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if slot < 0 || slot >= cfg.Players {
		return nil, fmt.Errorf("%w: slot %d of %d", ErrSlot, slot, cfg.Players)
	}
	return newClient(cfg, slot), nil
}

func newClient(cfg Config, slot int) *Client {
	c := &Client{
		cfg: cfg, slot: slot, ahead: make(map[int]Frame), nextSeq: 1,
		prevReal: make([][]byte, cfg.Players),
		lead:     2, clientLife: clientLife{newest: -1},
	}
	c.jb = c.newJitterBuffer()
	return c
}

// newJitterBuffer returns a playout buffer for the room's rate and bound.
func (c *Client) newJitterBuffer() *JitterBuffer {
	jb := NewJitterBuffer(c.cfg.Hz)
	jb.SetMaxDelay(c.cfg.MaxDelay)
	jb.paused = c.strict.paused()
	return jb
}

// NewSpectator returns the client half for a spectator of a room with
// configuration cfg: it receives frames and sends only acknowledgements.
func NewSpectator(cfg Config) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newClient(cfg, -1), nil
}

// serverFrame estimates the frame the room is cutting at t, from the
// earliest arrivals seen: it runs behind by the shortest downlink delay,
// which the lead covers.
func (c *Client) serverFrame(t time.Time) float64 {
	if !c.clockSet {
		return float64(c.have)
	}
	return (float64(t.UnixNano())/1e6 - c.minOffset - c.strict.paused()) / cutMs(1, c.cfg.Hz)
}

// Input queues one input of the player and returns the frame it targets:
// the frame the room will be cutting when the input arrives, as estimated
// from the downlink's timing and the room's reports of how early the
// player's inputs arrive. In a strict room it is no earlier than the
// frame the client last promised the room it may still send for, and no
// later than a few frames past the newest frame held.
func (c *Client) Input(now time.Time, data []byte) (int, error) {
	target := int(math.Ceil(c.serverFrame(now) + c.lead))
	if c.cfg.Strict {
		target = c.strictBase(now)
	}
	return c.inputFor(now, target, data)
}

// inputFor queues one input aimed at target, or at a later frame when
// earlier inputs aimed beyond it or target is full; it returns the frame.
func (c *Client) inputFor(now time.Time, target int, data []byte) (int, error) {
	if c.slot < 0 {
		return 0, ErrSpectator
	}
	if len(data) > c.cfg.InputBytes {
		return 0, fmt.Errorf("%w: %d bytes, room allows %d", ErrInputTooLarge, len(data), c.cfg.InputBytes)
	}
	if len(c.unacked) >= maxUplinkInputs {
		return 0, ErrBacklog
	}
	if target < c.lastTarget {
		target = c.lastTarget // inputs keep their order
	}
	if target < c.strict.sealed {
		target = c.strict.sealed // the room was told no input comes for earlier frames
	}
	if target == c.lastTarget && c.perTarget >= c.cfg.InputsPerFrame {
		target++ // the room takes only so many inputs a frame
	}
	if target != c.lastTarget {
		c.lastTarget, c.perTarget = target, 0
	}
	c.perTarget++
	c.stamps = append(c.stamps, stamp{seq: c.nextSeq, lead: float64(target) - c.serverFrame(now)})
	if len(c.stamps) > 4*maxUplinkInputs { // keep the newest, in place
		c.stamps = append(c.stamps[:0], c.stamps[len(c.stamps)-2*maxUplinkInputs:]...)
	}
	var buf []byte
	if n := len(c.spare); n > 0 { // an acknowledged input's bytes, reused
		buf, c.spare = c.spare[n-1][:0], c.spare[:n-1]
	}
	c.unacked = append(c.unacked, sentInput{seq: c.nextSeq, frame: target, data: append(buf, data...)})
	c.nextSeq++
	return target, nil
}

// Packet returns the uplink packet to send now: acknowledgements of the
// frames held, the downlink loss report, and every unacknowledged input.
// Send one every frame period, and at once after Input. The slice is valid
// until the next call.
func (c *Client) Packet(now time.Time) []byte {
	c.sent++
	u := uplink{have: c.have, recv: c.recv, lossRun: c.maxRun, sent: c.sent, sealed: c.seal(now)}
	if c.seqSeen {
		if hold := now.Sub(c.lastArrival); hold >= 0 && hold <= maxEchoHoldMs*time.Millisecond {
			u.hasEcho, u.echoSeq, u.echoHold = true, c.lastSeq, int(hold/time.Millisecond)
		}
	}
	if len(c.hashes) > 0 {
		h := &c.hashes[0]
		u.hasHash, u.hashFrame, u.hash = true, h.frame, h.hash
		if h.sent++; h.sent >= hashRepeats {
			c.hashes = c.hashes[1:]
		}
	}
	c.maybeReport(now)
	c.flushEvents()
	for n := range c.ahead {
		if off := n - c.have - 1; off >= 0 && off < maxAckMask {
			u.mask |= 1 << off
			u.maskLen = max(u.maskLen, off+1)
		}
	}
	if len(c.unacked) > 0 {
		u.firstSeq = c.unacked[0].seq
		u.inputs = c.up[:0]
		for _, in := range c.unacked {
			u.inputs = append(u.inputs, upInput{frame: in.frame, data: in.data})
		}
	}
	c.w.Reset(c.buf[:0])
	u.encode(&c.w)
	c.buf = c.w.Bytes()
	clear(u.inputs) // holds no input's bytes until the next packet
	c.up = u.inputs[:0]
	return c.buf
}

// Deliver handles one packet from the room: frames (unreliable) or
// notices (reliable). A packet that does not decode is dropped with an
// error.
func (c *Client) Deliver(now time.Time, msg []byte) error {
	c.received = c.received[:0]
	switch packetKind(msg) {
	case kindFrames:
	case kindNotice:
		var err error
		c.notices, err = decodeNotices(msg, c.notices)
		if len(c.notices) > maxNotices { // a game that never reads them keeps the newest
			c.notices = append(c.notices[:0], c.notices[len(c.notices)-maxNotices:]...)
		}
		return err
	case kindLife:
		return c.lifeMessage(now, msg)
	default:
		return fmt.Errorf("%w: kind %d", ErrMalformed, packetKind(msg))
	}
	if err := decodeDownlink(msg, c.players(), &c.dl); err != nil {
		return err
	}
	d := &c.dl
	if d.pausedMs > 0 {
		c.strict.learnPause(d.pauseFrom, d.pausedMs)
		c.jb.paused = c.strict.paused()
	}
	c.recv++
	c.trackLoss(d.seq, now)
	// Inputs the room has: forget them.
	k := 0
	for k < len(c.unacked) && c.unacked[k].seq <= d.inputAck {
		k++
	}
	for _, in := range c.unacked[:k] {
		if len(c.spare) < maxUplinkInputs {
			c.spare = append(c.spare, in.data)
		}
	}
	c.unacked = append(c.unacked[:0], c.unacked[k:]...)
	if d.hasMargin {
		c.margin(d.marginSeq, d.marginMs)
	}
	for _, f := range d.frames {
		c.newest = max(c.newest, f.Number)
		c.frame(now, f)
	}
	return nil
}

// trackLoss follows the downlink packet sequence for the loss report.
func (c *Client) trackLoss(seq uint16, now time.Time) {
	if c.seqSeen {
		if gap := int(seq - c.lastSeq - 1); gap >= 0 && gap < 1<<15 {
			c.run = gap
			c.maxRun = max(c.maxRun, gap)
			c.lastSeq, c.lastArrival = seq, now
		}
	} else {
		c.seqSeen, c.lastSeq, c.lastArrival = true, seq, now
	}
	c.runDecay++
	if c.runDecay >= 2*c.cfg.Hz { // forget runs after a couple of seconds
		c.runDecay, c.maxRun = 0, c.run
	}
}

// marginWindow is how many of the room's margin reports the lead follows.
const marginWindow = 64

// margin sets the lead from the room's report of how early an input
// arrived before its frame's cut. Subtracting the lead that input was
// given leaves what a lead of zero would have achieved, whatever the lead
// was then; the new lead puts nearly the worst of the recent ones (the
// second lowest of 64: under loss an input can arrive a packet late) a
// quarter of a frame before the cut. No integration, so no wind-up.
func (c *Client) margin(seq uint32, ms int) {
	// The stamps are consecutive in seq (Input), so seq's is found by its
	// distance from the first; the server names any seq it likes.
	if len(c.stamps) == 0 {
		return
	}
	i := seq - c.stamps[0].seq // wraps past the end when seq is older
	if i >= uint32(len(c.stamps)) {
		return
	}
	period := cutMs(1, c.cfg.Hz)
	c.excess[c.excessN%marginWindow] = float64(ms)/period - c.stamps[i].lead
	c.excessN++
	low := secondLeast(c.excess[:min(c.excessN, marginWindow)])
	c.lead = max(0, min(0.25-low, float64(c.cfg.MaxAhead)/2))
}

// secondLeast returns the second-smallest of v, or its only value.
func secondLeast(v []float64) float64 {
	a, b := math.Inf(1), math.Inf(1) // a <= b: the two smallest so far
	for _, x := range v {
		if x < a {
			a, b = x, a
		} else if x < b {
			b = x
		}
	}
	if len(v) == 1 {
		return a
	}
	return b
}

// frame takes one received frame.
func (c *Client) frame(now time.Time, f Frame) {
	if f.Number < c.have {
		return
	}
	if _, dup := c.ahead[f.Number]; dup {
		return
	}
	if f.Number > c.have+4*maxRunFrames*MaxRedundancy {
		return // absurdly far ahead: the room never sends such a frame (but while catching up)
	}
	if c.players() == authPlayers {
		var whole bool
		if f, whole = c.viewHead(f); !whole {
			return // its view's parts are still to come
		}
	}
	c.place(now, f)
}

// place takes a received frame, whole.
func (c *Client) place(now time.Time, f Frame) {
	if c.catching {
		c.ahead[f.Number] = f
		c.drain()
		return
	}
	paused := c.strict.pausedAt(f.Number)
	c.jb.arrive(f.Number, now, paused)
	c.received = append(c.received, f.Number)
	// The server frame clock: cut n at minOffset + n*period (and a strict
	// room's waits), from the earliest arrival seen.
	off := float64(now.UnixNano())/1e6 - cutMs(f.Number, c.cfg.Hz) - paused
	if !c.clockSet || off < c.minOffset {
		c.minOffset, c.clockSet = off, true
	}
	c.ahead[f.Number] = f
	c.drain()
}

// drain moves the frames that follow the held ones into the queue.
func (c *Client) drain() {
	for {
		g, ok := c.ahead[c.have]
		if !ok {
			break
		}
		delete(c.ahead, c.have)
		if len(c.queue) == 0 {
			c.queued = c.have
		}
		g = c.resolve(g)
		c.push(g)
		c.held[c.have%CarryFrames] = g
		c.have++
	}
}

// push appends a frame to the queue. Advance takes frames off its front,
// so its array's end comes soon: what is queued then moves back to the
// array's front (when it fills under half of it), not to a new array a
// few frames.
func (c *Client) push(f Frame) {
	if len(c.queue) == cap(c.queue) {
		if full := c.qarr[:cap(c.qarr)]; len(c.queue) < len(full)/2 {
			n := copy(full, c.queue)
			clear(full[n:]) // no frame's inputs kept for nothing
			c.queue = full[:n]
		} else {
			c.qarr = make([]Frame, len(c.queue), 2*len(c.queue)+8)
			copy(c.qarr, c.queue)
			c.queue = c.qarr
		}
	}
	c.queue = append(c.queue, f)
}

// resolve applies the room's Fill to made-up slots, in frame order.
func (c *Client) resolve(f Frame) Frame {
	applyFill(f.Slots, c.prevReal, c.cfg.Fill, nil) // frames wait in the queue: fresh slices
	return f
}

// Step is what the game does on one render tick.
type Step struct {
	// Frames are the logic frames to run now, in order: none, one, or
	// several when catching up.
	Frames []Frame
	// Alpha is the fraction of the way from the last frame run to the next,
	// for interpolating the picture: the game renders at its own rate.
	Alpha float64
	// State is the playout state; Depth and Target the frames buffered and
	// the depth aimed for.
	State         PlayState
	Depth, Target float64
	// CatchingUp is set while a client that joined a running match runs
	// the frames it missed: run them without rendering (or render only
	// the last); play turns live when it is caught up.
	CatchingUp bool
	// Snapshot, when not nil, is a snapshot of the room's simulation
	// (Snapshotter) taken after frames 0 .. SnapshotFrame-1: restore the
	// game from it before running Frames, which start at SnapshotFrame.
	// It comes once, while catching up, in a room that runs a simulation.
	Snapshot      []byte
	SnapshotFrame int
	// WaitingFor, in a strict room (Config.Strict), are the slots the
	// room is waiting for before it cuts the next frame, once it has
	// waited long enough to say so: show "waiting for ...". Play is
	// paused meanwhile. Nil when it waits for no one.
	WaitingFor []int
}

// Advance is called on every render tick of the game: it returns the frames
// to run now and how far to interpolate.
func (c *Client) Advance(now time.Time) Step {
	if c.catching {
		s := c.catchUp(now)
		if c.cfg.Substeps > 1 { // all at once: the frames are run, not shown
			s.Frames = c.logic(nil, s.Frames)
			s.SnapshotFrame = c.cfg.LogicFrame(s.SnapshotFrame)
		}
		return s
	}
	_, to, alpha, st := c.jb.Advance(now)
	s := Step{Alpha: alpha, State: st, Depth: c.jb.Depth(), Target: c.jb.Target(), WaitingFor: c.WaitingFor()}
	for len(c.queue) > 0 && c.queued < to {
		s.Frames = append(s.Frames, c.queue[0])
		c.queue = c.queue[1:]
		c.queued++
	}
	if n := len(s.Frames); n > 0 {
		c.ran = s.Frames[n-1].Number + 1
		c.done = c.ran
	}
	if c.cfg.Substeps > 1 {
		c.substeps(&s)
	}
	return s
}

// substeps turns the relay frames of a step into logic frames, handed out
// as the playhead passes them: logic frame k of n relay frames' worth is
// due when the playhead, counted in logic frames, passes it, so the game
// steps evenly at Substeps times the room's rate.
func (c *Client) substeps(s *Step) {
	c.sub = c.logic(c.sub, s.Frames)
	n := float64(c.cfg.Substeps)
	lp := (c.jb.playhead+1)*n - 1 // the playhead in logic frames
	due := int(math.Ceil(lp)) + 1 // logic frames 0 .. due-1 are due
	k := 0
	for k < len(c.sub) && c.sub[k].Number < due {
		k++
	}
	s.Frames = append(s.Frames[:0], c.sub[:k]...)
	c.sub = append(c.sub[:0], c.sub[k:]...)
	s.Alpha = 1 - (math.Ceil(lp) - lp)
	if len(c.sub) > 0 { // a relay frame is complete once all its logic frames ran
		c.done = c.cfg.RelayFrame(c.sub[0].Number)
	}
}

// logic appends the logic frames of relay frames fs to dst.
func (c *Client) logic(dst []Frame, fs []Frame) []Frame {
	for _, f := range fs {
		dst = c.cfg.Expand(dst, f)
	}
	return dst
}

// Received returns the frames first received in the packet the last
// Deliver took, in the order they were taken: the arrivals the jitter
// buffer was told of. The slice is valid until the next Deliver.
func (c *Client) Received() []int { return c.received }

// players returns the player count the frame decoders take: authPlayers
// in an authoritative room.
func (c *Client) players() int {
	if c.cfg.Authoritative {
		return authPlayers
	}
	return c.cfg.Players
}

// Have returns how many frames, from frame 0, the client holds.
func (c *Client) Have() int { return c.have }

// Lead returns the current input lead, in frames.
func (c *Client) Lead() float64 { return c.lead }

// Unacked returns the inputs not yet acknowledged by the room.
func (c *Client) Unacked() int { return len(c.unacked) }

// Notices returns and clears the room's notices about late inputs.
func (c *Client) Notices() []Notice {
	n := c.notices
	c.notices = nil
	return n
}

// Playout returns the jitter buffer's counters.
func (c *Client) Playout() PlayoutStats { return c.jb.Stats() }

// Config returns the room's configuration as the client has it.
func (c *Client) Config() Config { return c.cfg }

// Slot returns the player's slot, or -1 for a spectator.
func (c *Client) Slot() int { return c.slot }

package lockstep

import (
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
)

// Room is the relay of one lockstep match: it cuts frames
// on a drift-free schedule, fills in input for players who sent none, and
// delivers every frame to every player over the unreliable channel with
// redundancy, acknowledgements and retransmission from the match's frame
// log, which it keeps whole.
//
// A Room is driven by explicit calls: Deliver with each packet from a
// player, Tick with the time. It is not safe for concurrent use: one
// goroutine owns it (see Scheduler).
type Room struct {
	cfg     Config
	out     Sender
	start   time.Time
	next    int      // the next frame to cut
	log     frameLog // frames 0 .. next-1
	players []player
	stats   RoomStats

	w      codec.Writer
	buf    []byte
	up     uplink // decode scratch
	period time.Duration

	mem arena // the match's inputs, slots and frame encodings

	sim  *serverSim // nil without Config.Simulation
	ver  *verifier  // nil without Config.VerifyEvents
	auth *authState // nil without Config.Authoritative

	checks hashChecks // desync detection
	specs  spectators // the peers watching
	life   lifecycle  // joins and catch-up streams

	now    time.Time // the last tick
	events []Event   // raised since the engine last took them (Events)
	rec    Recorder  // the match's recording, or nil (Record)

	tap      func(EncodedFrame) // the standby's tap, or nil (Tap)
	restored int                // frames taken from the room this one continues (RestoreRoom)

	strict strictRoom // Config.Strict
}

// NewRoom returns a room whose frame 0 is cut at start. cfg is validated
// after defaults are applied.
func NewRoom(cfg Config, start time.Time, out Sender) (*Room, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Room{cfg: cfg, out: out, start: start, players: make([]player, cfg.Players), period: cfg.Period()}
	r.log = newFrameLog(cfg.Players, &r.mem)
	// The players' pending inputs start side by side in one array, a few
	// each (a player who sends more gets an array of its own).
	pending := make([]pendingInput, pendingEach*cfg.Players)
	for i := range r.players {
		p := &r.players[i]
		p.redundancy = uint8(cfg.Redundancy)
		p.heard = neverHeard
		p.pending = pending[i*pendingEach : i*pendingEach : (i+1)*pendingEach]
		p.initLife(start)
	}
	if cfg.Simulation != nil {
		sim, err := newServerSim(cfg)
		if err != nil {
			return nil, err
		}
		r.sim = sim
	}
	if cfg.Authoritative {
		if r.sim == nil {
			return nil, fmt.Errorf("%w: an authoritative room needs a Simulation", ErrConfig)
		}
		a, err := newAuthState(cfg, r.sim.sim)
		if err != nil {
			return nil, err
		}
		r.auth = a
	}
	if cfg.VerifyEvents {
		r.ver = newVerifier(cfg.Players, cfg.Hz, r.sim)
	}
	r.checks = newHashChecks(&cfg, r.sim)
	r.now = start
	return r, nil
}

// Config returns the room's configuration, with defaults applied.
func (r *Room) Config() Config { return r.cfg }

// Stats returns the room's counters.
func (r *Room) Stats() RoomStats { return r.stats }

// PlayerStats returns the counters of one player.
func (r *Room) PlayerStats(slot int) PlayerStats {
	p := &r.players[slot]
	return PlayerStats{Inputs: p.inputs, LateDrops: p.lateDrops, LateMoved: p.lateMoved, MadeUp: p.madeUp,
		Redundancy: int(p.redundancy), Loss: p.loss, Have: p.have}
}

// NextFrame returns the number of the next frame to be cut.
func (r *Room) NextFrame() int { return r.next }

// Frame returns a cut frame of the match.
func (r *Room) Frame(n int) (Frame, bool) {
	if n < 0 || n >= r.next {
		return Frame{}, false
	}
	return *r.log.frameAt(n), true
}

// StartAt moves the cut of frame 0 to t, or just after it: to the first
// moment at or after t on the room's schedule (start, as NewRoom was
// given it, plus whole frame periods), so that rooms a host spread over
// the period stay spread. It is for a host that starts a room when its
// players arrive (Config.Start) and does not Tick it before; it reports
// false, and changes nothing, once a frame has been cut.
func (r *Room) StartAt(t time.Time) bool {
	if r.next > 0 {
		return false
	}
	period := r.period
	k := t.Sub(r.start) / period // whole periods to move by, either way
	if r.start.Add(k * period).Before(t) {
		k++
	}
	shift := k * period
	r.start = r.start.Add(shift)
	for _, peers := range [][]player{r.players, r.specs.peers} { // what was heard so far, from the new start
		for i := range peers {
			if p := &peers[i]; p.heard != neverHeard {
				p.heard -= shift
			}
		}
	}
	if r.now.Before(r.start) {
		r.now = r.start
	}
	return true
}

// NextCut returns when the next frame is due; a strict room that waits
// for a player's input wants to be ticked again soon.
func (r *Room) NextCut() time.Time {
	if r.strict.waiting {
		return r.now.Add(min(r.period/8, waitPollMax))
	}
	return r.start.Add(r.cutDue(r.next))
}

// Deliver handles one packet from the player in slot. A packet that does
// not decode, or parts of it that break the rules, are dropped and counted;
// the error says why. Nothing a player sends affects another player.
func (r *Room) Deliver(slot int, msg []byte, now time.Time) error {
	p := r.peer(slot)
	if p == nil {
		r.stats.Dropped[DropSlot]++
		return fmt.Errorf("%w: %d", ErrSlot, slot)
	}
	if p.away {
		r.stats.Dropped[DropAway]++
		return fmt.Errorf("%w: %d left the room", ErrSlot, slot)
	}
	p.q.bytesUp += uint64(len(msg))
	if packetKind(msg) == kindLife {
		return r.lifeMessage(slot, p, msg, now)
	}
	if err := decodeUplink(msg, &r.up); err != nil {
		r.stats.Dropped[DropMalformed]++
		return err
	}
	at := now.Sub(r.start)
	p.heard = at
	u := &r.up
	var err error
	p.uplinkQuality(u, at)
	if u.hasHash && !p.spectator && r.auth == nil { // spectators' and authoritative rooms' hashes are not compared
		cr := r.checkRoom()
		if err = r.checks.report(&cr, slot, p, u.hashFrame, u.hash); err != nil {
			r.stats.Dropped[DropHash]++
		}
	}
	if p.spectator {
		if len(u.inputs) > 0 {
			r.stats.Dropped[DropSpectator]++
			err = fmt.Errorf("%w: a spectator sent %d inputs", ErrMalformed, len(u.inputs))
		}
		u.inputs = u.inputs[:0]
	}
	if u.have > r.next {
		r.stats.Dropped[DropAck]++
		err = fmt.Errorf("%w: acknowledges frame %d, only %d cut", ErrMalformed, u.have-1, r.next)
	} else if u.have >= p.have {
		p.have, p.mask, p.maskLen = u.have, u.mask, uint8(u.maskLen)
		if p.retransWait {
			for f := range p.retransAt {
				if f < p.have {
					delete(p.retransAt, f)
				}
			}
			p.retransWait = len(p.retransAt) > 0
		}
	}
	r.lossReport(p, u.recv, u.lossRun)
	for i, in := range u.inputs {
		if e := r.input(p, u.firstSeq+uint32(i), in, at); e != nil && err == nil {
			err = e
		}
	}
	if r.cfg.Strict {
		if e := r.seal(p, u.sealed); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// input places one input from a player that arrived at (from the room's
// start).
func (r *Room) input(p *player, seq uint32, in upInput, at time.Duration) error {
	switch {
	case seq <= p.inAck:
		return nil // a repeat of an input already handled
	case seq-p.inAck-2 < 64 && p.inSeen&(1<<(seq-p.inAck-2)) != 0:
		return nil
	case seq-p.inAck > 65: // beyond the window a client's unacknowledged inputs can span
		r.stats.Dropped[DropSequence]++
		return fmt.Errorf("%w: input sequence %d after %d", ErrMalformed, seq, p.inAck)
	}
	// Mark it seen and advance the contiguous acknowledgement.
	if seq == p.inAck+1 {
		p.inAck = seq
		for p.inSeen&1 != 0 {
			p.inSeen >>= 1
			p.inAck++
		}
		p.inSeen >>= 1
	} else if off := seq - p.inAck - 2; off < 64 {
		p.inSeen |= 1 << off
	}

	if len(in.data) > r.cfg.InputBytes {
		r.stats.Dropped[DropSize]++
		return fmt.Errorf("%w: input of %d bytes, room allows %d", ErrMalformed, len(in.data), r.cfg.InputBytes)
	}
	margin := (r.cutDue(in.frame) - at) / time.Millisecond
	p.margin, p.marginSeq, p.hasMargin = int32(max(-maxMarginMs, min(margin, maxMarginMs))), seq, true
	target := in.frame
	if target < r.next {
		if r.cfg.Late == LateDrop {
			r.stats.Dropped[DropLate]++
			p.lateDrops++
			p.notice(Notice{Seq: seq, Target: target, Applied: -1})
			return nil
		}
		target = r.next
		p.lateMoved++
		p.notice(Notice{Seq: seq, Target: in.frame, Applied: target})
	}
	if target > r.next+r.cfg.MaxAhead {
		r.stats.Dropped[DropFuture]++
		p.notice(Notice{Seq: seq, Target: target, Applied: -1})
		return fmt.Errorf("%w: input for frame %d, next cut is %d", ErrMalformed, target, r.next)
	}
	// After the inputs for target and the frames before it; almost always
	// at the end.
	i := len(p.pending)
	for i > 0 && p.pending[i-1].frame > target {
		i--
	}
	same := 0
	for j := i; j > 0 && p.pending[j-1].frame == target; j-- {
		same++
	}
	if same >= r.cfg.InputsPerFrame {
		r.stats.Dropped[DropTooMany]++
		return fmt.Errorf("%w: more than %d inputs for frame %d", ErrMalformed, r.cfg.InputsPerFrame, target)
	}
	in.data = r.mem.keep(in.data)
	if i == len(p.pending) {
		p.pending = append(p.pending, pendingInput{frame: target, data: in.data})
	} else {
		p.pending = slices.Insert(p.pending, i, pendingInput{frame: target, data: in.data})
	}
	return nil
}

// lossReport updates the downlink loss estimate and the redundancy.
func (r *Room) lossReport(p *player, recv uint16, run int) {
	sent := p.seq - p.lastSent
	got := recv - p.lastRecv
	if sent >= 8 && got <= sent { // a window of at least 8 packets
		p.q.downSent += uint64(sent)
		p.q.downGot += uint64(got)
		sample := 1 - float64(got)/float64(sent)
		p.loss += (sample - p.loss) / 4
		p.lastSent, p.lastRecv = p.seq, recv
		// Enough redundancy that losing every copy of a frame is rarer than
		// 1 in 1000 (for independent loss).
		want := r.cfg.Redundancy
		if p.loss > 0.001 {
			want = max(want, int(math.Ceil(math.Log(1e-3)/math.Log(p.loss)))-1)
		}
		p.lossWant = uint8(min(want, MaxRedundancy))
	}
	// And more than the longest loss run the player reports.
	want := uint8(min(max(int(p.lossWant), run, r.cfg.Redundancy), MaxRedundancy))
	switch {
	case want > p.redundancy:
		p.redundancy = want // up at once
	case want < p.redundancy && p.loss < 0.01:
		p.redundancy-- // down slowly, once the link is clean
	}
}

// Tick cuts every frame that is due at now and sends each player its
// packet. A room that fell behind cuts all the frames it owes at once; the
// frames are numbered, not timed, so nothing is lost. Then the room's
// simulation, if any, runs the frames cut, up to its budget per tick.
func (r *Room) Tick(now time.Time) {
	cut := false
	at := now.Sub(r.start)
	for {
		due := r.cutDue(r.next)
		late := at - due
		if late < 0 {
			break
		}
		if r.cfg.Strict && r.next > 0 {
			if r.strictHold(due, at) {
				break
			}
			late = at - r.cutDue(r.next) // the schedule moved by the wait
		}
		if r.next > 0 { // frame 0 is cut when the room is made, whatever its start
			r.stats.MaxCutLate = max(r.stats.MaxCutLate, late)
		}
		r.cut()
		cut = true
	}
	r.now = now
	if !cut {
		if r.strict.resent { // a strict room's wait
			r.strict.resent = false
			r.tickLife(now)
		}
		r.stepSim() // a simulation that fell behind catches up between cuts too
		return
	}
	if r.auth != nil {
		r.stepSim() // the views are what is sent
	}
	r.sendAll(r.next-1, at)
	r.strict.sentAt = at
	if r.auth == nil {
		r.stepSim()
	}
	r.tickLife(now)
}

// cut makes frame r.next from the pending inputs.
func (r *Room) cut() {
	n := r.next
	f := cutFrame{Frame: Frame{Number: n, Slots: r.mem.slots(len(r.players), n)}}
	for i := range r.players {
		p := &r.players[i]
		k := 0
		for k < len(p.pending) && p.pending[k].frame == n {
			k++
		}
		if k == 0 {
			f.Slots[i].MadeUp, f.Slots[i].Gone = true, p.away && !p.restoring
			p.madeUp++
			r.stats.MadeUp++
			continue
		}
		ins := r.mem.inputSlice(k, n)
		for j := range ins {
			ins[j] = p.pending[j].data
		}
		f.Slots[i].Inputs = ins
		p.inputs += uint64(k)
		r.stats.Inputs += uint64(k)
		m := copy(p.pending, p.pending[k:])
		clear(p.pending[m:]) // drop the references to the arena
		p.pending = p.pending[:m]
	}
	r.w.Reset(r.buf[:0])
	encodeFrameBody(&r.w, &f.Frame, nil)
	f.fullBits = r.w.Len()
	f.full = r.mem.keep(r.w.Bytes())
	r.buf = r.w.Bytes()[:0]
	r.log.add(f)
	r.next++
	r.stats.Frames++
	if r.tap != nil {
		cf := r.log.hot(n)
		r.tap(EncodedFrame{Number: n, Full: cf.full, FullBits: cf.fullBits})
	}
	if r.rec != nil {
		cf := r.log.hot(n)
		r.log.ensureRel(cf) // the recording takes the relative body at once
		r.rec.RecordFrame(cf.encoded())
	}
	r.log.cool()
}

// stepSim runs the server-side simulation through the frames cut, at most
// the configured steps per tick, and reports a simulation that fell more
// than a second of frames behind the cut.
func (r *Room) stepSim() {
	s := r.sim
	if s == nil {
		return
	}
	steps := stepsPerTick(r.cfg.SimStepsPerTick)
	for i := 0; i < steps && s.frame < r.next; i++ {
		s.step(r.log.frameAt(s.frame), &r.cfg, r.ver, &r.mem)
		if r.auth != nil {
			r.encodeViews()
		}
		r.stats.SimFrames++
	}
	lag := r.next - s.frame
	r.stats.MaxSimLag = max(r.stats.MaxSimLag, lag)
	if s.fellBehind(lag, r.cfg.Hz, steps) {
		r.stats.SimBehind++
		r.events = append(r.events, Event{Kind: EventSimBehind, Frame: s.frame, Behind: lag})
	}
}

// Sender is how a room reaches its peers: the engine implements it over
// its transport connections, a test over anything. The peer is a player's
// slot (0 .. Players-1) or a spectator's id (Players and up, as returned by
// Room.AddSpectator; ids are not reused). msg is only valid during the
// call. A send may fail (a full queue, a closed connection); the room
// counts it and carries on.
type Sender interface {
	SendUnreliable(peer int, msg []byte) error
	SendReliable(peer int, msg []byte) error
}

// cutFrame is a frame with its body encoded once for every packet: alone
// when cut, and relative to the frame before when first needed (a packet
// that carries it after that frame, or the replay). A player who holds
// every frame but the newest, the usual case, needs only the first.
type cutFrame struct {
	Frame
	full, rel         []byte // body alone, and relative to the frame before
	fullBits, relBits int    // relBits 0: rel not encoded yet (a body is at least 1 bit)
}

// player is the room's state for one slot. The fields every packet
// touches come first, in the first three cache lines (players are 64-byte
// multiples, see TestPlayerLayout), so that a room's turn reads few cache
// lines of each player when many rooms share a core.
type player struct {
	peerState
	// The pad rounds player up to a multiple of 64 bytes. It is never empty,
	// since a trailing empty field would add 8 bytes: when peerState is
	// itself a multiple of 64 bytes, the pad is a whole 64-byte line.
	_ [64 - unsafe.Sizeof(peerState{})%64]byte
}

// peerState is a player's (or spectator's) state in the room.
type peerState struct {
	have      int           // frames 0 .. have-1 are held
	mask      uint64        // bit i: frame have+1+i is held
	heard     time.Duration // when the last packet arrived, from the room's start (never: neverHeard)
	inSeen    uint64        // bit i: input inAck+2+i arrived
	inAck     uint32        // inputs up to this sequence number arrived
	marginSeq uint32
	margin    int32
	seq       uint16 // downlink packets sent
	lastRecv  uint16 // the client's count of downlink packets received, at its last report
	lastSent  uint16 // our count at that report
	maskLen   uint8
	// redundancy is the frames repeated per packet now, lossWant what the
	// loss estimate asks for (both at most MaxRedundancy).
	redundancy, lossWant uint8
	hasMargin            bool
	away                 bool // left: nothing is sent, input is made up
	spectator            bool
	live                 bool // playing live (false while catching up)
	noticed              bool // notices holds some
	retransWait          bool // retransAt holds some
	restoring            bool // away in a restored room, not yet back: made up as late, not gone

	pending []pendingInput // by frame, then arrival; frames next .. next+MaxAhead
	inputs  uint64         // inputs placed in frames
	madeUp  uint64         // frames with made-up input
	// recent are the last two downlink packets sent, by seq % 2: the RTT
	// of an echo of either is taken without reading echo.
	recent [2]echoEntry
	q      peerQuality // its first fields are touched by every packet

	// Touched once every few packets, or less.
	notices   []Notice
	retransAt map[int]int // missing frame -> the room frame when last retransmitted; nil until the first
	loss      float64
	lateDrops uint64 // inputs dropped as late
	lateMoved uint64 // late inputs moved to the next frame
	sealed    int    // strict rooms: the first frame the player may still send an input for
	givenUp   bool   // strict rooms: waited for too long; not waited for until it seals ahead again
	stream    stream
	peerLife
	echo [echoRing]echoEntry // downlink packets sent, by seq % echoRing
}

// pendingEach is the room of each player's first pending-input array.
const pendingEach = 2

// neverHeard is player.heard before the first packet.
const neverHeard = -1 << 62

type pendingInput struct {
	frame int
	data  []byte
}

// maxNotices bounds the notices held for one player between two ticks; a
// client that sends more late inputs than that learns of the rest from the
// frames themselves.
const maxNotices = 64

func (p *player) notice(n Notice) {
	if len(p.notices) < maxNotices {
		if p.notices == nil { // one allocation for most players' whole match, not one a doubling
			p.notices = make([]Notice, 0, 8)
		}
		p.notices = append(p.notices, n)
		p.noticed = true
	}
}

// livePlayers returns the players present and playing live, a bit per
// slot.
func livePlayers(players []player) uint32 {
	var live uint32
	for i := range players {
		if p := &players[i]; !p.away && p.live {
			live |= 1 << i
		}
	}
	return live
}

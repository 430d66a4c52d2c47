package interest

import (
	"fmt"
	"unsafe"

	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// Deliver hands the world an uplink packet from player's client. A packet
// that does not decode, or a command that fails validation, is dropped
// and counted; the error says why. Nothing else is affected.
func (w *World) Deliver(player ID, msg []byte) error {
	e := w.get(player)
	if e == nil || e.obs == nil {
		return fmt.Errorf("%w: %d", ErrNotObserver, player)
	}
	w.stats.PacketsIn++
	w.stats.BytesIn += int64(len(msg))
	return e.obs.deliver(w, e, msg)
}

// Uplink is a packet from a client, for DeliverAll.
type Uplink struct {
	Player ID
	Msg    []byte
}

// How far ahead of the packet it hands on DeliverAll starts loading a
// client's state, in stages: the entity, then its observer, then the
// packets an acknowledgement marks.
const (
	uplinkAhead = 8
	uplinkNext  = 4
	uplinkLast  = 2
	obsLine     = int(unsafe.Offsetof(entity{}.obs) / 64) // the entity's cache line that holds obs
)

// DeliverAll hands the world a batch of packets, as Deliver would one by
// one, in order, and returns how many it refused in whole or in part
// (Stats counts why). A server that collects a frame's packets should use
// it: it starts loading each client's state a few packets ahead, while
// Deliver has to wait for it, and handles thousands of packets a frame
// in less time.
func (w *World) DeliverAll(batch []Uplink) (refused int) {
	for i := range batch {
		if j := i + uplinkAhead; j < len(batch) {
			w.prefetchEntity(batch[j].Player, 0, 1)
			w.prefetchEntity(batch[j].Player, obsLine, 1)
		}
		if j := i + uplinkNext; j < len(batch) {
			if o := w.observerAt(batch[j].Player); o != nil {
				o.prefetch()
			}
		}
		if j := i + uplinkLast; j < len(batch) {
			if o := w.observerAt(batch[j].Player); o != nil {
				prefetch.Line(unsafe.Pointer(&o.ring[(o.seq+ringSize-1)%ringSize]))
			}
		}
		if w.Deliver(batch[i].Player, batch[i].Msg) != nil {
			refused++
		}
	}
	return refused
}

// observerAt returns the observer of entity id, read from its storage
// (entityAddr) for a prefetch: it may be a dead entity's, or nil.
func (w *World) observerAt(id ID) *observer {
	if e := w.ent(id); e != nil {
		return e.obs
	}
	return nil
}

// deliver handles an uplink packet.
func (o *observer) deliver(w *World, e *entity, msg []byte) error {
	u := &w.up
	if err := u.decode(&w.lay, msg, w.frame); err != nil {
		w.stats.Dropped[DropMalformed]++
		return err
	}
	var firstErr error
	fail := func(reason int, err error) {
		w.stats.Dropped[reason]++
		if firstErr == nil {
			firstErr = err
		}
	}
	if u.hasAck {
		if err := o.ack(w, uint32(u.ackSeq), u.ackMask); err != nil {
			fail(DropAck, err)
		}
	}
	for i := range u.cmds {
		seq := u.firstSeq + uint16(i)
		if o.haveCmd && int16(seq-o.cmdSeq) <= 0 {
			continue // applied already; the client repeats until acknowledged
		}
		o.cmdSeq, o.haveCmd, o.ackDue = seq, true, true
		if o.movesTo >= 0 && u.cmds[i].tag != cmdMove && u.cmds[i].frame <= o.movesTo {
			continue // in flight at a crossing whose old cell may have applied it
		}
		if reason, err := o.command(w, e, &u.cmds[i]); err != nil {
			fail(reason, err)
		}
	}
	failReq := func(reason int, id ID) {
		w.stats.Dropped[reason]++
		if firstErr == nil {
			firstErr = requestErr(w, reason, id)
		}
	}
	for _, raw := range u.discover {
		if reason := o.request(w, ID(raw)); reason != 0 {
			failReq(reason, ID(raw))
			continue
		}
		o.enqueue(item{kind: itemLogic, why: whyDiscovery, id: ID(raw), enter: w.frame})
		w.stats.Discoveries++
	}
	if len(u.display) > 0 {
		o.displays(w, u.display, failReq)
	}
	for _, k := range u.groups {
		if reason := o.request(w, k.id); reason != 0 {
			failReq(reason, k.id)
			continue
		}
		o.wantGroups(w, k.id, k.g)
		w.listGroups(o)
	}
	// The game hears the packet's actions once the world is done with
	// the packet: its hook may despawn the sender or move it, which the
	// packet's later commands must not run into.
	for _, a := range w.actions {
		if w.onAction != nil { // the hook may remove itself
			w.onAction(a)
		}
	}
	w.actions = w.actions[:0]
	return firstErr
}

// request checks a discovery or display request for entity id and
// returns 0 or the drop reason (requestErr says it in words: only the
// first failure of a packet is, so a flood costs no formatting).
func (o *observer) request(w *World, id ID) int {
	if o.tokens < 1 {
		return DropRate
	}
	o.tokens--
	// From the dense copy of the regions: a flood of requests reads no
	// entity.
	r := w.regionOfID(id)
	if r < 0 {
		return DropUnknown
	}
	if !near(w.regionAt(w.where[o.id]), w.regionAt(r)) {
		return DropOutOfRange
	}
	return 0
}

// inRange reports whether entity id exists within the 3x3 regions around
// entity from.
func (w *World) inRange(from, id ID) bool {
	r := w.regionOfID(id)
	return r >= 0 && near(w.regionAt(w.where[from]), w.regionAt(r))
}

func requestErr(w *World, reason int, id ID) error {
	switch reason {
	case DropRate:
		return fmt.Errorf("interest: request for %d over the rate of %d a second", id, w.cfg.DiscoveryRate)
	case DropUnknown:
		return fmt.Errorf("%w: request for %d", ErrUnknown, id)
	}
	return fmt.Errorf("interest: request for %d, outside the client's range", id)
}

func (o *observer) displays(w *World, ids []uint32, fail func(int, ID)) {
	var list [maxDisplayBatch]*entity
	n := 0
	for _, raw := range ids {
		if reason := o.request(w, ID(raw)); reason != 0 {
			fail(reason, ID(raw))
			continue
		}
		list[n] = w.ent(ID(raw))
		// Start loading each entity's version and display while the next
		// requests are checked (see World.step), and then the looks they
		// point to, rather than wait for each in turn as the message is
		// written.
		w.prefetchEntity(ID(raw), 0, 1)
		if int(raw) < len(w.disps) {
			prefetch.Line(unsafe.Pointer(&w.disps[raw]))
		}
		n++
	}
	if n == 0 {
		return
	}
	for _, t := range list[:n] {
		if d := w.dispEnc(t.id); d.lk != nil {
			prefetch.Line(unsafe.Pointer(d.lk))
			prefetch.Line(unsafe.Pointer(unsafe.StringData(d.d.Name)))
			if s := o.looks.slot(d.look); s != nil {
				prefetch.Line(unsafe.Pointer(s))
			}
		}
	}
	// What the message adds to the dictionaries is taken back if it is
	// not sent: the client would never hold it.
	nLooks, nNames := o.looks.len(), len(o.names.list)
	w.pw.Reset(w.pbuf[:0])
	w.pw.WriteBits(kindDisplay, kindBits)
	w.pw.WriteUint(uint64(n), maxDisplayBatch)
	for _, t := range list[:n] {
		d := w.dispEnc(t.id)
		w.lay.writeDisplay(&w.pw, t.id, t.dver, &o.looks, &o.names, d.lk.id, d.lk.shared, &d.d)
	}
	if len(w.cfg.Groups) > 0 {
		// A newcomer's groups come with its display data (Group).
		for _, t := range list[:n] {
			o.wantGroups(w, t.id, -1)
		}
		w.writeGroupRecords(o)
	}
	if !w.sendDisplay(o) {
		o.looks.truncate(nLooks)
		o.names.truncate(nNames)
	}
}

// command validates and applies one of the player's commands (seed
// 5.2.1): the world rewinds to the command's frame, compares the source
// position with its record, and accepts the move or corrects the client.
func (o *observer) command(w *World, e *entity, c *command) (int, error) {
	if c.frame <= w.frame-len(o.hist)+1 {
		return DropStale, fmt.Errorf("interest: command for frame %d, history starts at %d", c.frame, w.frame-len(o.hist)+2)
	}
	if c.frame > w.frame+w.cfg.MaxAhead {
		return DropFuture, fmt.Errorf("interest: command for frame %d, world at %d", c.frame, w.frame)
	}
	if c.tag == cmdMove && c.frame < o.lastCorr {
		return 0, nil // sent before the client saw its correction: void (the client replays it)
	}
	switch c.tag {
	case cmdMove:
		if !w.lay.onMap(c.src) || !w.lay.onMap(c.dest) {
			o.correct(w)
			return DropOffMap, fmt.Errorf("%w: move %v -> %v", ErrOffMap, c.src, c.dest)
		}
		if d := int64(w.cfg.MaxMove); c.src.DistSq(c.dest) > 2*d*d {
			o.correct(w)
			return DropMoveRange, fmt.Errorf("interest: destination %v too far from %v", c.dest, c.src)
		}
		var expect Vec
		if c.frame <= w.frame {
			expect = o.at(c.frame)
		} else { // the client runs ahead: catch up to it
			expect = StepN(e.lg.Pos, e.lg.Dest, e.lg.Speed, c.frame-w.frame)
		}
		if tol := int64(w.cfg.Tolerance); c.src.DistSq(expect) > tol*tol {
			o.correct(w)
			return 0, nil
		}
		if limit := o.limitAt(w, c.frame); c.speed > limit {
			o.correct(w)
			return DropSpeed, fmt.Errorf("interest: move at speed %d, the player's limit at frame %d is %d", c.speed, c.frame, limit)
		}
		w.setPath(e, c.src, c.dest, c.speed, c.frame)
		o.rewriteFrom(w, c.frame, c.src, c.dest, c.speed)
		w.reregion(e)
	case cmdJump:
		w.pend = append(w.pend, pending{id: e.id, tag: tagJump, frame: c.frame})
		w.acted(w.action(e.id, c, ActionJump))
	case cmdSkill:
		// A target outside the sender's range is refused as an unknown one:
		// the same drop, nothing sent back, so that a client cannot learn
		// which IDs exist beyond its range.
		if c.target != 0 && !w.inRange(e.id, c.target) {
			return DropUnknown, fmt.Errorf("%w: skill target %d", ErrUnknown, c.target)
		}
		w.pend = append(w.pend, pending{id: e.id, tag: tagSkill, frame: c.frame, c: command{skill: c.skill, target: c.target}})
		a := w.action(e.id, c, ActionSkill)
		a.Skill, a.Target = c.skill, c.target
		w.acted(a)
	case cmdCustom:
		w.pend = append(w.pend, pending{id: e.id, tag: tagCustom, frame: c.frame,
			c: command{ctag: c.ctag, data: append([]byte(nil), c.data...)}})
		a := w.action(e.id, c, ActionCustom)
		a.Tag, a.Data = c.ctag, c.data
		w.acted(a)
	}
	return 0, nil
}

// ActionKind says what a player did (Action).
type ActionKind uint8

// The actions a player's client sends besides moves.
const (
	ActionJump   ActionKind = iota + 1 // Client.Jump
	ActionSkill                        // Client.Skill
	ActionCustom                       // Client.Custom
)

// Action is a jump, skill or custom command from a player's client that
// the world accepted (OnAction). The world broadcasts it to the players
// in range whatever the game does with it; the game decides what it
// means: damage, a cooldown, a quest step.
type Action struct {
	Player ID
	// Frame is the world frame the client stamped the action with: at or
	// before the world's frame, or up to Config.MaxAhead after it, and
	// never older than Config.MaxRewind before the world's frame at
	// arrival (an older stamp is taken as that bound). The player's own
	// entity stood where the client predicted it at Frame.
	Frame int
	// View is the frame, with its fraction, at which the client drew the
	// other entities when the player acted (Client.RenderFrame): a little
	// before Frame, by the client's render delay. Judge what the player
	// aimed at by where it was then (World.PositionAt, World.Reach): lag
	// compensation. It is never older than Config.MaxRewind before the
	// world's frame at arrival; a client that does not render through
	// Client.Render views Frame.
	View float64
	Kind ActionKind
	// Skill and Target are a skill's (ActionSkill). Target is 0 for none;
	// otherwise it was in the player's range when the world accepted it.
	Skill  uint16
	Target ID
	// Tag and Data are a custom command's (ActionCustom). Data is valid
	// only during the call: copy what you keep.
	Tag  uint8
	Data []byte
}

// OnAction sets f to be called for every action a player's client sends
// that the world accepts, as Deliver or DeliverAll hands it over, on the
// goroutine that called them, once the world has applied the rest of the
// packet: this is where a game server resolves a player's skills. f may
// call the world's methods (Update, Place, Move, Skill, Despawn, ...) but
// Deliver and DeliverAll. A nil f removes the hook. Actions the server
// makes itself (World.Jump, Skill, Custom) do not call it.
func (w *World) OnAction(f func(Action)) { w.onAction = f }

// acted keeps a for the hook, which hears it after the packet.
func (w *World) acted(a Action) {
	if w.onAction != nil {
		w.actions = append(w.actions, a)
	}
}

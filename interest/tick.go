package interest

import (
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// Tick runs every frame due by now: frame n is run at start + n/Hz. A world
// far behind (a stalled process) skips ahead rather than running a burst.
func (w *World) Tick(now time.Time) {
	due := int(now.Sub(w.start) / w.cfg.Period())
	if behind := due - w.frame; behind > w.cfg.Hz {
		skip := behind - w.cfg.Hz
		w.stats.SkippedFrames += skip
		for _, o := range w.obs {
			o.skip(w, skip)
		}
		w.skipGroups(skip)
		w.frame += skip
	}
	for w.frame < due {
		w.step()
	}
}

// NextFrame returns when the next frame is due.
func (w *World) NextFrame() time.Time {
	return w.start.Add(time.Duration(w.frame+1) * w.cfg.Period())
}

// How far ahead step's loops prefetch the entities and observers they will
// work on. An observer is fetched in stages: its own lines first, then,
// once they are in, what they point to, and so on.
const (
	moverAhead    = 8
	observerAhead = 8
	observerNext  = 4
	observerLast  = 2
)

// step runs one frame: movement, crossings, forced and state sync, and
// one packet per client.
func (w *World) step() {
	w.frame++
	w.stats.Frames++
	// The loops below prefetch the entity or observer a few places ahead:
	// its cache lines load while this one is worked on, where the
	// processor on its own would wait for each in turn.
	for i := 0; i < len(w.movers); {
		if j := i + moverAhead; j < len(w.movers) {
			prefetch.Line(unsafe.Pointer(w.movers[j]))
		}
		e := w.movers[i]
		if e.start >= w.frame { // its path starts at a later frame: it stands at the source
			i++
			continue
		}
		// No invalidate: the encodings of a mover are current only in the
		// frame they were made (cached).
		e.lg.Pos = Step(e.lg.Pos, e.lg.Dest, e.lg.Speed)
		w.reregion(e)
		if !e.lg.Moving() {
			e.lg.Speed = 0
			w.invalidate(e) // its last step: standing, its encodings would be kept
			w.stopMoving(e) // swaps the last mover into i
			continue
		}
		i++
	}
	w.crossings()
	w.stateSync()
	w.flush()
	for i, o := range w.obs {
		if j := i + observerAhead; j < len(w.obs) {
			w.obs[j].prefetch()
		}
		if j := i + observerNext; j < len(w.obs) {
			w.obs[j].prefetchNext(w)
		}
		if j := i + observerLast; j < len(w.obs) {
			w.obs[j].prefetchLast()
		}
		o.record(w) // here, not in a pass of its own: nothing before reads this frame's
		o.send(w)
	}
	if len(w.cfg.Groups) > 0 {
		w.pushGroups()
	}
	for _, ri := range w.touched {
		reg := &w.regions[ri]
		reg.bc.reset()
		reg.direct.reset()
		reg.syncs = reg.syncs[:0]
		w.busy[ri] = false
	}
	w.touched = w.touched[:0]
}

// reregion moves e to the region of its position, recording a crossing.
func (w *World) reregion(e *entity) {
	r := w.regionOfPos(e.lg.Pos)
	if r == e.reg {
		return
	}
	if e.crossed == -1 {
		e.crossed = e.reg
		w.cross = append(w.cross, e.id)
	}
	w.removeFrom(e, e.reg)
	w.addTo(e, r)
	if e.obs != nil {
		w.moveObserver(e.obs, e.reg, r)
	}
	w.setRegion(e, r)
	w.invalidate(e)
}

// crossings announces the frame's border crossings once every entity has
// moved, from where each entity was at the start of the frame to where it
// is now, so that an announcement reaches observers where they are now and
// never a region out of the entity's range.
func (w *World) crossings() {
	if w.cfg.LeaveMessages {
		w.leaves()
	}
	for _, id := range w.cross {
		e := w.get(id)
		if e != nil && e.crossed == crossedNew {
			w.announce(e, -1, e.reg)
			e.crossed = -1
			continue
		}
		if e == nil || e.crossed < 0 {
			continue
		}
		if e.crossed != e.reg {
			w.stats.Crossings++
			l := &w.lastCross[e.id]
			l[1], l[0] = l[0], crossRec{at: int32(w.frame), from: e.crossed}
			w.announce(e, e.crossed, e.reg)
			w.crossedTogether(e)
			to := w.regionAt(e.reg)
			w.around(e.crossed, func(ri int32) {
				if !near(to, w.regionAt(ri)) {
					return
				}
				reg := &w.regions[ri]
				if reg.waiting == 0 {
					return // most regions: nobody there waits for a forced sync
				}
				for k, id := range reg.obsIDs {
					if w.waiting[id] {
						reg.obs[k].moved(w, e, e.crossed, e.reg)
					}
				}
			})
		}
	}
	for _, id := range w.cross {
		if e := w.get(id); e != nil {
			e.crossed = -1
		}
	}
	w.cross = w.cross[:0]
}

// crossedTogether sends e to the observers that announce skipped but
// never had it: those whose own entity crossed in the same frame, from a
// region whose range did not hold e's start. announce skips the regions
// near e's start region, whose observers had it in range; an observer
// that has just moved into one of them from further away had not, and
// the forced sync of its new regions finds e where it was, or no longer
// there.
func (w *World) crossedTogether(e *entity) {
	from, to := w.regionAt(e.crossed), w.regionAt(e.reg)
	w.around(e.reg, func(ri int32) {
		r := w.regionAt(ri)
		if !near(from, r) {
			return // announce reached it
		}
		for _, o := range w.regions[ri].obs {
			oe := w.ent(o.id)
			if o.id == e.id || oe.crossed < 0 || near(w.regionAt(oe.crossed), from) || !near(r, to) {
				continue
			}
			o.enqueue(item{kind: itemLogic, why: whyRepair, id: e.id})
		}
	})
}

// leaves queues, for Config.LeaveMessages, a removal for every observer
// whose range an entity that crossed this frame has left: because the
// entity moved, the observer did, or both in the same frame. It runs
// before crossings resets the entities' start regions. (An observer's own
// crossing also queues removals for what its old range held.)
func (w *World) leaves() {
	for _, id := range w.cross {
		e := w.get(id)
		if e == nil || e.crossed < 0 || e.crossed == e.reg {
			continue
		}
		a, b := w.regionAt(e.crossed), w.regionAt(e.reg)
		// An observer near a at the start of the frame is within two
		// regions of it now, but for a teleport, which its own crossing
		// covers.
		for y := max(a.Y-2, 0); y <= min(a.Y+2, w.cfg.Height-1); y++ {
			for x := max(a.X-2, 0); x <= min(a.X+2, w.cfg.Width-1); x++ {
				for _, o := range w.regions[y*w.cfg.Width+x].obs {
					oe := w.ent(o.id)
					start := oe.reg
					if oe.crossed >= 0 {
						start = oe.crossed
					}
					if o.id != id && near(w.regionAt(start), a) && !near(w.regionAt(oe.reg), b) {
						o.enqueue(item{kind: itemRemove, why: whyLeave, id: id})
					}
				}
			}
		}
	}
}

// announce sends e's logic to the regions that newly have it in range
// after it moved from region from (-1: it is new) to region to: the seed's
// G2C_NEW_CHARACTER_INTO_REGION, step 4 of a crossing.
func (w *World) announce(e *entity, from, to int32) {
	var fr Region
	if from >= 0 {
		fr = w.regionAt(from)
	}
	w.absolute(e)
	w.around(to, func(ri int32) {
		if from >= 0 && near(fr, w.regionAt(ri)) {
			return
		}
		reg := &w.regions[ri]
		if len(reg.obs) == 0 {
			return
		}
		for _, o := range reg.obs {
			o.prefetchTold() // loads while the message is written
		}
		w.touch(ri)
		w.writeLogicMsg(&reg.direct.w, e)
		reg.direct.mark(e.id)
		for _, o := range reg.obs {
			o.tell(w, e.id)
		}
		w.stats.Enters += int64(len(reg.obs))
	})
	if from < 0 {
		// A new entity is announced to its whole range: a broadcast. A
		// crossing reaches only the newly covering regions, so it is not
		// one: an observer that had the entity in range before heard
		// nothing, and its forced sync must still include it.
		w.lastBc[e.id] = w.frame
	}
}

// stateSync queues the entities due for a state sync in their regions.
func (w *World) stateSync() {
	for i := 0; i < len(w.dirty); {
		e := w.ent(w.dirty[i])
		if w.frame-e.lastSyn < w.period(false, e.lg.Combat, e.reg) {
			i++
			continue
		}
		e.lastSyn = w.frame
		reg := &w.regions[e.reg]
		if w.hasObservers(e.reg) {
			w.touch(e.reg)
			reg.syncs = append(reg.syncs, e.id)
		}
		w.clean(e) // swaps the last dirty entity into i
	}
}

// The bits of an index into World.periods.
const (
	periodCity = 1 << iota
	periodCombat
	periodTarget
)

// period returns the state-sync period in frames of an entity in region
// reg, from the table filled from the policy at NewWorld.
func (w *World) period(target, combat bool, reg int32) int {
	c := 0
	if target {
		c |= periodTarget
	}
	if combat {
		c |= periodCombat
	}
	if w.city[reg] {
		c |= periodCity
	}
	return w.periods[c]
}

// flush encodes the frame's commands, each once, into the region its
// entity is in now.
func (w *World) flush() {
	for i := range w.pend {
		p := &w.pend[i]
		ri := p.reg
		if p.tag != tagRemove {
			e := w.get(p.id)
			if e == nil {
				continue
			}
			ri = e.reg
			w.lastBc[p.id] = w.frame
			if p.tag == tagMove {
				if p.reg != ri {
					w.gone(p.id, p.reg, ri)
				}
				w.missed(p.id, p.reg, ri)
				w.leftBehind(p.id, ri)
			}
		}
		if !w.hasObservers(ri) {
			continue
		}
		w.touch(ri)
		m := &w.regions[ri].bc
		writeTag(&m.w, p.tag)
		w.lay.writeID(&m.w, p.id)
		if p.tag != tagRemove {
			w.lay.writeStamp(&m.w, p.frame, w.frame)
		}
		switch p.tag {
		case tagMove:
			w.lay.writeMove(&m.w, p.ep, p.cont, p.c.src, p.c.dest, p.c.speed, p.prev)
		case tagSkill:
			m.w.WriteBits(uint64(p.c.skill), 16)
			m.w.WriteBool(p.c.target != 0)
			if p.c.target != 0 {
				w.lay.writeID(&m.w, p.c.target)
			}
		case tagCustom:
			m.w.WriteBits(uint64(p.c.ctag), 8)
			m.w.WriteBytes(p.c.data, w.cfg.MaxCustom)
		}
		m.mark(p.id)
		w.stats.Commands++
	}
	w.pend = w.pend[:0]
}

// gone tells the observers around region from that entity id, which a
// command just took out of their range before they could hear the command,
// is gone: the seed's step 2, for the case where the broadcast move cannot
// do it. A removal carries nothing about the entity.
func (w *World) gone(id ID, from, to int32) {
	t := w.regionAt(to)
	w.around(from, func(ri int32) {
		reg := &w.regions[ri]
		if len(reg.obs) == 0 || near(t, w.regionAt(ri)) {
			return
		}
		w.touch(ri)
		w.writeRemoveMsg(&reg.direct.w, id)
		reg.direct.mark(id)
		w.stats.Leaves += int64(len(reg.obs))
	})
}

// crossRec is an entity's crossing: the frame, and the region it left
// (-1: none).
type crossRec struct{ at, from int32 }

var noCross = [2]crossRec{{from: -1}, {from: -1}}

// leftBehind repairs the clients whose range entity id, now in region ri
// and given a move, left along its own path in the last leaverFrames:
// such a client may still hold the entity (it keeps what leaves its range
// for removeGrace, and a move of the player that brings it back in range
// saves it) but does not hear this move. It gets a removal, or the
// entity's logic if it is back in range when its packet is built. (A
// client listed there now that never had the entity ignores the removal.)
// missed covers the clients that left the entity's range themselves.
func (w *World) leftBehind(id ID, ri int32) {
	now := w.regionAt(ri)
	for _, c := range w.lastCross[id] {
		if c.from < 0 || w.frame-int(c.at) > w.leaverFrames {
			continue
		}
		w.around(c.from, func(r int32) {
			if near(now, w.regionAt(r)) {
				return // in range of the move: it hears it
			}
			for _, o := range w.regions[r].obs {
				if o.id != id {
					o.enqueue(item{kind: itemLogic, why: whyRepair, id: id})
				}
			}
		})
	}
}

// missed repairs the clients that have just left the range of region ri,
// where entity id moves, or of region from, where its move was made (the
// same frame's step may have carried it over a border): such a client may
// still hold the entity (it keeps what leaves its range for removeGrace,
// and comes back in range along its own path) but does not hear this
// move. It gets the entity's logic if it is back in range when its packet
// is built, else a removal; neither says anything about an entity outside
// its range.
func (w *World) missed(id ID, from, ri int32) {
	a := w.regionAt(ri)
	window := w.leaverFrames
	leavers := func(r int32) {
		for _, l := range w.regions[r].leavers {
			if w.frame-l.at > window || l.o.id == id || w.ent(l.o.id).obs != l.o {
				continue
			}
			if !near(a, w.regionAt(w.ent(l.o.id).reg)) {
				l.o.enqueue(item{kind: itemLogic, why: whyRepair, id: id})
			}
		}
	}
	w.around(ri, leavers)
	if from != ri {
		// Regions near both are visited twice; enqueue keeps one item.
		w.around(from, leavers)
	}
}

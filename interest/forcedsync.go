package interest

import (
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// forced queues the forced sync of regions whose time has come. A
// region ahead of a moving player is due earlier: Lead before the player
// would reach it.
func (o *observer) forced(w *World, me *entity) {
	if !w.waiting[o.id] {
		return
	}
	c := w.regionAt(me.reg)
	lead := w.leadFrames
	for s := range 9 {
		if !o.open[s] {
			continue
		}
		r := Region{c.X + s%3 - 1, c.Y + s/3 - 1}
		if r.X < 0 || r.Y < 0 || r.X >= w.cfg.Width || r.Y >= w.cfg.Height {
			o.open[s] = false
			continue
		}
		why := uint8(whyForced)
		due := o.due[s]
		// Direction first: a region on the mover's path is
		// due Lead before it would reach it, or Lead before its regular
		// time, whichever is sooner, so that at any speed it comes ahead
		// of the regions to the sides.
		if eta := w.eta(me, r); eta >= 0 {
			if ahead := o.enter[s] + max(0, min(eta, due-o.enter[s])-lead); ahead < due {
				due, why = ahead, whyForcedAhead
			}
		}
		if w.frame >= due {
			o.open[s] = false
			ri := w.regionIndex(r)
			it := item{kind: itemRegion, why: why, reg: ri, enter: o.enter[s], rest: o.spareList()}
			for _, id := range w.regions[ri].ents {
				if id != o.id && !w.discovered(id, it.enter) {
					it.rest = append(it.rest, id)
				}
			}
			if len(it.rest) > 0 {
				o.enqueue(it)
			} else {
				o.keepList(it.rest)
			}
		}
	}
	o.opened(w)
}

// eta returns in how many frames a moving entity reaches region r on its
// way to its destination, or -1 if its path does not cross r: the
// straight line from its position to its destination (which may lie
// regions beyond r) enters r's square after eta frames at its speed. It
// decides only when a forced sync is sent, never the simulation, so
// floating point is fine.
func (w *World) eta(e *entity, r Region) int {
	if !e.lg.Moving() {
		return -1
	}
	s := float64(w.cfg.RegionSize)
	px, py := float64(e.lg.Pos.X), float64(e.lg.Pos.Y)
	dx, dy := float64(e.lg.Dest.X)-px, float64(e.lg.Dest.Y)-py
	lo, hi := 0.0, 1.0 // the part of the path inside r, as fractions of it
	for _, a := range [2]struct{ p, d, min, max float64 }{
		{px, dx, s * float64(r.X), s * float64(r.X+1)},
		{py, dy, s * float64(r.Y), s * float64(r.Y+1)},
	} {
		if a.d == 0 {
			if a.p < a.min || a.p >= a.max {
				return -1
			}
			continue
		}
		t1, t2 := (a.min-a.p)/a.d, (a.max-a.p)/a.d
		lo, hi = max(lo, min(t1, t2)), min(hi, max(t1, t2))
		if lo >= hi {
			return -1
		}
	}
	return int(lo*math.Hypot(dx, dy)/float64(e.lg.Speed)) + 1
}

// moved handles entity e crossing from region from to region to inside the
// observer's range: if the client is waiting for from's forced sync to
// learn of e, and to's forced sync is over or would not include e (e
// broadcast before the client's range took in to, or was sent whole since
// then: the client may have dropped it when from left its range), e would
// fall between the two, so it is queued on its own.
func (o *observer) moved(w *World, e *entity, from, to int32) {
	c := w.regionAt(w.ent(o.id).reg)
	sf, st := slotOf(c, w.regionAt(from)), slotOf(c, w.regionAt(to))
	lastBc := w.lastBc[e.id]
	if sf < 0 || st < 0 || !o.open[sf] || lastBc > o.enter[sf] || e.id == o.id {
		return // not waiting for from's forced sync: the client has it or will
	}
	if o.open[st] && lastBc <= o.enter[st] && o.due[st] <= o.due[sf] &&
		(o.enter[st] >= o.enter[sf] || !o.toldSince(e.id, o.enter[st])) {
		return // to's forced sync will carry it, as early
	}
	if len(o.owed) < maxQueue {
		o.owed = append(o.owed, owed{id: e.id, due: o.due[sf], enter: o.enter[sf]})
	}
}

// owed is an entity a client is due to learn by forced sync at a frame,
// apart from its region's.
type owed struct {
	id    ID
	due   int
	enter int
}

// settle queues the owed entities whose time has come.
func (o *observer) settle(w *World) {
	keep := o.owed[:0]
	for _, ow := range o.owed {
		if ow.due > w.frame {
			keep = append(keep, ow)
			continue
		}
		if w.regionOfID(ow.id) >= 0 && !w.discovered(ow.id, ow.enter) && !o.toldSince(ow.id, ow.enter) {
			o.enqueue(item{kind: itemLogic, why: whyForced, id: ow.id})
		}
	}
	o.owed = keep
}

// discovered reports whether the client can be counted on to have learned
// entity id since frame enter by itself: the entity broadcast a command
// since then, which makes the client ask for it (the seed leaves such
// entities out of a forced sync), and did so at least lateFrames ago, long
// enough for the client's request to be answered. A forced sync sends the
// rest, so one broadcast just before it does not leave the client to a
// discovery that has no time left to recover from a loss.
func (w *World) discovered(id ID, enter int) bool {
	bc := w.lastBc[id]
	return bc > enter && bc <= w.frame-w.lateFrames
}

// lateBroadcast is how recent a broadcast may be and still not have
// brought a client's discovery answer: a round trip and a frame or two,
// with room for a slow link (discovered).
const lateBroadcast = 250 * time.Millisecond

// toldSize is how many of the entities lately sent whole (announced,
// discovered, repaired) an observer remembers, in a ring. When the ring
// wraps, the oldest are forgotten: a forced sync may then send such an
// entity again, a duplicate send, never a missed one.
const toldSize = 32

// toldRec is an entity sent whole to a client, and the frame.
type toldRec struct {
	id    ID
	frame int32
}

// toldBuckets is how many buckets of IDs an observer counts its told
// ring's entries in, so that toldSince skips the scan for an ID none of
// them shares a bucket with (most of the forced syncs' entities).
const toldBuckets = 64

func toldBucket(id ID) int { return int(id % toldBuckets) }

// prefetchTold starts loading the ring of entities lately told, its index
// and its bucket counts, which tell writes and toldSince reads.
func (o *observer) prefetchTold() {
	size := unsafe.Offsetof(o.toldIn) + toldBuckets - unsafe.Offsetof(o.told)
	for off := uintptr(0); off < size+63; off += 64 { // every line the span touches
		prefetch.Line(unsafe.Add(unsafe.Pointer(&o.told), off))
	}
}

// tell records that the client was sent e whole this frame.
func (o *observer) tell(w *World, id ID) {
	t := &o.told[o.toldAt]
	if t.id != 0 {
		o.toldIn[toldBucket(t.id)]--
	}
	*t = toldRec{id: id, frame: int32(w.frame)}
	o.toldIn[toldBucket(id)]++
	o.toldAt = (o.toldAt + 1) % toldSize
}

// toldSince reports whether the client was sent entity id whole after
// frame f: a forced sync need not send it again. (If that packet was
// lost, its entities are repaired.)
func (o *observer) toldSince(id ID, f int) bool {
	if o.toldIn[toldBucket(id)] == 0 {
		return false
	}
	for _, t := range o.told {
		if t.id == id && int(t.frame) > f {
			return true
		}
	}
	return false
}

// reorderFrames is how much later a packet must have been sent than an
// unacknowledged one for its acknowledgement to mean the older was lost.
const reorderFrames = 2

// ack handles the client's acknowledgement: packets it reports missing
// (three or more behind the newest it holds) are lost, and what they
// carried is repaired with the entities' current logic, or removed if they
// are out of range now.
func (o *observer) ack(w *World, low, mask uint32) error {
	hs := unwrapSeq(uint64(low), o.seq-1)
	if hs < 0 || hs >= o.seq || hs < o.seq-ringSize { // (it unwraps below 0 before the world has sent a packet a sequence long)
		return fmt.Errorf("interest: acknowledgement of packet %d, newest sent %d", hs, o.seq-1)
	}
	newest := o.ring[hs%ringSize].frame
	o.heard = true // the client has a frame in full: short ones from now on
	for s := max(o.settled, o.seq-ringSize); s <= hs; s++ {
		p := &o.ring[s%ringSize]
		if p.seq != s || p.done {
			continue
		}
		d := hs - s
		if d == 0 || (d <= ackMaskBits && mask>>(d-1)&1 == 1) {
			p.done = true
			continue
		}
		// Lost: three newer packets arrived, or one sent reorderFrames
		// later did (the world sends rarely to a quiet client).
		if d >= 3 || newest-p.frame >= reorderFrames {
			p.done = true
			o.lost(w, p)
		}
	}
	for o.settled <= hs {
		if p := &o.ring[o.settled%ringSize]; p.seq == o.settled && !p.done {
			break
		}
		o.settled++
	}
	return nil
}

func (o *observer) lost(w *World, p *sentPacket) {
	copy(o.lossAt[1:], o.lossAt[:])
	o.lossAt[0] = w.frame
	if p.corr {
		o.corr = true
	}
	me := w.ent(o.id)
	for _, id := range p.ids {
		if id == o.id {
			o.enqueue(item{kind: itemLogic, why: whyRepair, id: id})
			continue
		}
		if r := w.regionOfID(id); r >= 0 && near(w.regionAt(me.reg), w.regionAt(r)) {
			o.enqueue(item{kind: itemLogic, why: whyRepair, id: id})
		} else {
			o.enqueue(item{kind: itemRemove, why: whyRepair, id: id})
		}
		w.stats.Repairs++
	}
}

// A send that brings a client up to date (a forced sync, a discovery
// answer, a repair) comes late by design or after a loss, and leaves
// little time before the client must know what is in its range: a loss
// seen by acknowledgement and then repaired takes a round trip, and a lost
// repair another. On a link that has lately lost packets, such a send is
// echoed: sent again in the next frames, so that only the loss of every
// copy leaves it to repair. The copies follow the packets found lost in
// the last lossMemory seconds (echoesAfter): none after none or one, one
// after two, two after three or more. With independent losses, that puts
// the chance of losing every copy near 1e-4 on a link losing a packet in
// a hundred (two copies) or one in twenty (three). On a clean link
// nothing is sent twice.
const lossMemory = 30

var echoesAfter = [...]uint8{0, 0, 1, 2}

// echoed counts the n entities sent by item it and reports whether they
// are to be sent again next frame: it brings the client up to date, and
// the link's recent losses call for more copies than were sent.
func (o *observer) echoed(w *World, it *item, n int) bool {
	switch {
	case it.echo > 0:
		w.stats.Echoes += int64(n)
	case it.why == whyForced || it.why == whyForcedAhead:
		w.stats.ForcedSyncs += int64(n)
	case it.why != whyDiscovery && it.why != whyRepair:
		return false
	}
	since, lost := w.frame-lossMemory*w.cfg.Hz, 0
	for _, f := range o.lossAt {
		if f > since {
			lost++
		}
	}
	return it.echo < echoesAfter[lost]
}

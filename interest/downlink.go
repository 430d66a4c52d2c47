package interest

import (
	"math/bits"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// ringSize is how many recent downlink packets an observer remembers, to
// repair what a lost one carried.
const ringSize = 64

// sentPacket is what a downlink packet carried, for repair if it is lost.
type sentPacket struct {
	seq   int
	frame int // the frame it was sent in
	done  bool
	corr  bool
	ids   []ID
}

// maxQueue bounds the sends waiting for an observer's byte budget.
const maxQueue = 512

// keepalive is how many frames an observer may go without a packet: the
// header carries the frame, which keeps the client's clock.
const keepaliveFrames = 8

// Why an entity is queued for a client, and the weight its priority
// accumulates by each frame it waits.
const (
	whyState = iota
	whyCombat
	whyForced
	whyTarget
	whyForcedAhead
	whyDiscovery
	whyRepair
	whyLeave
)

var whyWeight = [...]float32{1, 2, 3, 5, 6, 6, 8, 8}

const (
	itemLogic = iota
	itemRegion
	itemRemove
)

// item is a send waiting for the budget.
type item struct {
	kind  uint8
	why   uint8
	echo  uint8 // which copy of an echoed send this is, 0 for the first
	id    ID
	reg   int32 // itemRegion: the region
	enter int   // itemRegion: the frame the range took it in; a discovery answer: the frame asked
	acc   float32
	rest  []ID // itemRegion: entities still to send, once started
}

func (o *observer) enqueue(it item) {
	if it.kind != itemRegion {
		for i := range o.queue {
			q := &o.queue[i]
			if q.kind == it.kind && q.id == it.id {
				if whyWeight[it.why] > whyWeight[q.why] {
					q.why, q.enter = it.why, it.enter
				}
				return
			}
		}
	}
	if len(o.queue) >= maxQueue {
		return
	}
	o.queue = append(o.queue, it)
}

// send builds and sends this frame's packets for the client: commands from
// the 3x3 range and announcements, each spliced from its region's buffer;
// then a correction if one is due; then queued sends by accumulated
// priority under the byte budget.
func (o *observer) send(w *World) {
	me := w.ent(o.id)
	o.forced(w, me)
	o.settle(w)
	o.tokens = min(o.tokens+float64(w.cfg.DiscoveryRate)/float64(w.cfg.Hz), float64(w.cfg.DiscoveryRate))
	if t := w.get(o.target); t != nil && t.dirty && w.frame-o.tgtSync >= w.period(true, t.lg.Combat, t.reg) {
		o.tgtSync = w.frame
		o.enqueue(item{kind: itemLogic, why: whyTarget, id: t.id})
	}
	// The regions of the range with anything this frame, found in the
	// dense w.busy rather than in the region structs.
	var act [9]int32
	na := 0
	c := w.regionAt(me.reg)
	for y := max(c.Y-1, 0); y <= min(c.Y+1, w.cfg.Height-1); y++ {
		for x := max(c.X-1, 0); x <= min(c.X+1, w.cfg.Width-1); x++ {
			if ri := int32(y*w.cfg.Width + x); w.busy[ri] {
				act[na] = ri
				na++
			}
		}
	}
	bc := 0
	for _, ri := range act[:na] {
		reg := &w.regions[ri]
		bc += reg.bc.w.Len()
		for _, id := range reg.syncs {
			why := uint8(whyState)
			if w.ent(id).lg.Combat {
				why = whyCombat
			}
			o.enqueue(item{kind: itemLogic, why: why, id: id})
			w.stats.StateSyncs++
		}
	}
	var direct *msgBuf
	if w.busy[me.reg] {
		direct = &w.regions[me.reg].direct
		bc += direct.w.Len()
	}
	if bc == 0 && len(o.queue) == 0 && !o.ackDue && !o.corr && w.frame != o.probe && w.frame-o.lastSend < keepaliveFrames {
		return
	}
	o.begin(w)
	used := 0
	for _, ri := range act[:na] {
		used += o.splice(w, &w.regions[ri].bc)
	}
	if direct != nil {
		used += o.splice(w, direct)
	}
	if used > 0 {
		// A broadcast went out: send a packet reorderFrames later even if
		// there is nothing to say, so that if this one is lost the
		// client's acknowledgement shows it at once and the repair comes
		// in a round trip, not a keepalive period later. A turn heard late
		// is drawn wrong (Client.Render) until it comes.
		o.probe = w.frame + reorderFrames
	}
	if o.corr {
		o.correction(w, me)
	}
	o.drain(w, me, max(w.cfg.TickBudget*8-used, w.cfg.TickBudget*2))
	o.end(w)
}

func (o *observer) begin(w *World) {
	w.pw.Reset(w.pbuf[:0])
	h := downHeader{seq: o.seq & seqMask, full: !o.heard, frame: w.frame, hasAck: o.ackDue, cmdAck: o.cmdSeq}
	h.encode(&w.pw)
	o.ackDue = false
	p := &o.ring[o.seq%ringSize]
	p.seq, p.frame, p.done, p.corr, p.ids = o.seq, w.frame, false, false, p.ids[:0]
	o.pkt = p
	o.seq++
}

func (o *observer) end(w *World) {
	b := w.pw.Bytes()
	w.pbuf = b[:0]
	o.lastSend = w.frame
	w.stats.PacketsOut++
	w.stats.BytesOut += int64(len(b))
	if err := w.out.SendUnreliable(o.id, b); err != nil {
		w.stats.Dropped[DropSendFailed]++
	}
}

// room returns the bits left in the packet being built.
func (w *World) room() int { return MaxPacket*8 - w.pw.Len() }

// splice copies a region buffer's messages into the packet, starting a new
// packet when one is full, and returns the bits it copied.
func (o *observer) splice(w *World, m *msgBuf) int {
	n := m.w.Len()
	if n == 0 {
		return 0
	}
	b := m.w.Bytes()
	if n <= w.room() {
		w.pw.WriteBitString(b, n)
		o.pkt.ids = append(o.pkt.ids, m.ids...)
		return n
	}
	from := 0
	for i, end := range m.ends {
		size := int(end) - from
		if size > w.room() {
			o.end(w)
			o.begin(w)
		}
		copyBits(&w.pw, b, from, int(end))
		o.pkt.ids = append(o.pkt.ids, m.ids[i])
		from = int(end)
	}
	return n
}

// copyBits writes bits [from, to) of a Writer's output b to w.
func copyBits(w *codec.Writer, b []byte, from, to int) {
	r := codec.NewReader(b)
	r.Skip(from)
	for n := to - from; n > 0; {
		k := min(n, 64)
		w.WriteBits(r.ReadBits(k), k)
		n -= k
	}
}

func (o *observer) correction(w *World, me *entity) {
	writeTag(&w.pw, tagCorrection)
	w.lay.writePos(&w.pw, me.lg.Pos)
	w.lay.writePath(&w.pw, me.lg.Pos, me.lg.Dest, me.lg.Speed)
	w.pw.WriteBits(uint64(o.voidFrom&0xff), 8)
	// The client takes moves stamped before this packet's frame as void
	// (and replays the newest): so does the world, from now on.
	o.lastCorr = max(o.lastCorr, w.frame)
	o.corr = false
	o.pkt.corr = true
}

// drain sends queued items in the order of accumulated priority until the
// budget (in bits) is spent. A region's forced sync that does not fit is
// sent in part, the rest left for later frames: the seed's peak shaving.
func (o *observer) drain(w *World, me *entity, budget int) {
	if len(o.queue) == 0 {
		return
	}
	need, per := 0, w.lay.idBits+entryBits
	for i := range o.queue {
		it := &o.queue[i]
		it.acc += whyWeight[it.why]
		need += it.needed(w, per)
		// Start loading the lines emit reads: an entity's first and
		// its absolute encoding's; a region list's first entities' first
		// and relative encoding's.
		switch it.kind {
		case itemLogic:
			w.prefetchEntity(it.id, 0, 1)
			w.prefetchEntity(it.id, 2, 1)
		case itemRegion:
			for _, id := range it.rest[:min(len(it.rest), listAhead)] {
				w.prefetchEntity(id, 0, 2)
			}
		}
	}
	slices.SortStableFunc(o.queue, func(a, b item) int {
		switch {
		case a.acc > b.acc:
			return -1
		case a.acc < b.acc:
			return 1
		}
		return 0
	})
	budget = max(budget, min(need, maxNeeded*8*w.cfg.TickBudget))
	center := w.regionAt(me.reg)
	keep := o.queue[:0]
	for _, it := range o.queue {
		before := w.pw.Len()
		if !o.emit(w, me, center, &it, &budget) {
			keep = append(keep, it)
			w.stats.Deferred++
			continue
		}
		o.keepList(it.rest)
		if (it.why == whyForced || it.why == whyForcedAhead) && w.pw.Len() > before {
			// A forced sync went out: send a packet reorderFrames later
			// even if there is nothing to say, so that if this one is
			// lost the client sees the gap and its acknowledgement shows
			// the loss at once, well within the time a client may go
			// without knowing what is in its range.
			o.probe = w.frame + reorderFrames
		}
	}
	clear(o.queue[len(keep):])
	o.queue = keep
	for _, it := range o.later {
		o.enqueue(it)
	}
	o.later = o.later[:0]
}

// Deadlines of the sends that make a client know what is in its range:
// a region's forced sync is done within forcedFrames of the range
// taking it in (the seed's 2 s), a discovery answer within answerFrames
// of the request. Peak shaving spreads them under the byte budget, and
// when what else the client is sent (a mass battle's broadcasts) leaves
// too little of it, the drain gives them what they need to make it
// (item.needed), up to maxNeeded times the budget: a client asking for
// everything cannot make the world send it more than that.
const (
	answerFrames = 4
	maxNeeded    = 8
	// entryBits is what item.needed reckons an entity of a region list
	// or a discovery answer takes, besides its ID: a little over a
	// moving entity's relative logic.
	entryBits = 80
)

// needed returns the bits this frame's packet must carry for the item
// to make its deadline, if it has one (a forced sync, a discovery
// answer): its remaining size, per bits an entity, over the frames it
// has left. The drain sums them over the queue.
func (it *item) needed(w *World, per int) int {
	var size, end int
	switch {
	case it.kind == itemRegion:
		size, end = len(it.rest)*per, it.enter+w.forcedFrames
	case it.why == whyDiscovery:
		size, end = per, it.enter+answerFrames
	default:
		return 0
	}
	return size / max(1, end-w.frame)
}

// maxSpare bounds the region lists' storage an observer keeps: a join (or
// a teleport out of the range, Place) opens all 9 regions of the range at
// once; a step over a border opens at most 5.
const maxSpare = 9

// keepList keeps a finished region list's storage for spareList.
func (o *observer) keepList(l []ID) {
	if l != nil && len(o.spare) < maxSpare {
		o.spare = append(o.spare, l[:0])
	}
}

// spareList returns empty storage for a region list.
func (o *observer) spareList() []ID {
	n := len(o.spare)
	if n == 0 {
		return nil
	}
	l := o.spare[n-1]
	o.spare = o.spare[:n-1]
	return l
}

// listAhead is how far ahead a region list's entities are prefetched.
const listAhead = 4

// emit sends one item if it fits in the budget and returns whether it is
// done with (sent, or no longer worth sending).
func (o *observer) emit(w *World, me *entity, center Region, it *item, budget *int) bool {
	idBits := w.lay.idBits
	switch it.kind {
	case itemRemove:
		if r := w.regionOfID(it.id); r >= 0 && near(center, w.regionAt(r)) {
			if it.why == whyRepair && w.get(it.id) != nil {
				// Back in range: what the lost packet said is still
				// missing, so the repair sends the entity's logic.
				it.kind = itemLogic
				return o.emit(w, me, center, it, budget)
			}
			return true // back in range: nothing to remove
		}
		size := tagLen(tagRemove) + idBits
		if size > *budget || size > w.room() {
			return false
		}
		*budget -= size
		w.writeRemoveMsg(&w.pw, it.id)
		o.pkt.ids = append(o.pkt.ids, it.id) // lost, it is repaired like the rest
		w.stats.Leaves++
		return true
	case itemLogic:
		e := w.get(it.id)
		if e != nil && e.id == o.id {
			center = w.regionAt(e.reg) // its own entity is always in range
		}
		if e == nil || !near(center, w.regionAt(e.reg)) {
			if it.why == whyRepair {
				it.kind = itemRemove
				return o.emit(w, me, center, it, budget)
			}
			return true
		}
		if it.why == whyState || it.why == whyCombat || it.why == whyTarget {
			// A state sync: the vitals alone, spliced from the absolute
			// encoding, made once a frame.
			w.absolute(e)
			size := tagLen(tagVitals) + idBits + e.vitalsBits()
			if size > *budget || size > w.room() {
				return false
			}
			w.writeVitalsMsg(&w.pw, e)
			*budget -= size
			o.pkt.ids = append(o.pkt.ids, e.id)
			return true
		}
		if it.why == whyDiscovery && it.echo == 0 && o.toldSince(e.id, w.frame-w.lateFrames) {
			return true // sent whole lately: the request crossed it
		}
		w.absolute(e)
		size := tagLen(tagLogic) + idBits + e.abs.n
		turn := w.repairTurn(e, it.why)
		if size+turn > *budget || size+turn > w.room() {
			return false
		}
		*budget -= size + turn
		if turn > 0 {
			w.pw.WriteBitString(w.mw.Bytes(), turn)
		}
		w.writeLogicMsg(&w.pw, e)
		o.tell(w, e.id)
		o.pkt.ids = append(o.pkt.ids, e.id)
		if o.echoed(w, it, 1) {
			o.later = append(o.later, item{kind: itemLogic, why: it.why, id: e.id, echo: it.echo + 1})
		}
		return true
	}
	// itemRegion: the seed's G2C_ALL_CHARACTER_IN_REGION.
	r := w.regionAt(it.reg)
	if !near(center, r) {
		return true
	}
	head := tagLen(tagRegion) + bits.Len64(w.lay.rxMax) + bits.Len64(w.lay.ryMax) + 8
	room := min(*budget, w.room()) - head
	// One pass over the list: it.rest[:n] are the entries kept for this
	// message, it.rest[i] the next to read; the dropped ones are skipped.
	n, i, size := 0, 0, 0
	for i < len(it.rest) && n < maxRegionList {
		if j := i + listAhead; j < len(it.rest) {
			// Prefetch (see World.step) the entity's lines that relative
			// reads, and its entries in the tables by ID read first.
			w.prefetchEntity(it.rest[j], 0, 2)
			w.prefetchTables(it.rest[j])
		}
		id := it.rest[i]
		er := w.regionOfID(id)
		told := er >= 0 && it.echo == 0 && o.toldSince(id, it.enter)
		found := w.discovered(id, it.enter)
		if er != it.reg || found || told {
			if er >= 0 && !told && !found && near(center, w.regionAt(er)) {
				// It moved on, without a broadcast, to a region whose
				// forced sync may be over: send it on its own.
				o.later = append(o.later, item{kind: itemLogic, why: it.why, id: id, echo: it.echo})
			}
			i++
			continue
		}
		e := w.ent(id)
		w.relative(e)
		s := idBits + e.rel.n
		if size+s > room {
			break
		}
		size += s
		it.rest[n] = id
		n++
		i++
	}
	if i > n {
		// Close the gap the dropped entries left: the unread tail follows
		// the kept ones, in order.
		it.rest = it.rest[:n+copy(it.rest[n:], it.rest[i:])]
	}
	if n == 0 {
		return len(it.rest) == 0
	}
	*budget -= head + size
	writeTag(&w.pw, tagRegion)
	w.pw.WriteUint(uint64(r.X), w.lay.rxMax)
	w.pw.WriteUint(uint64(r.Y), w.lay.ryMax)
	w.pw.WriteBits(uint64(n), 8)
	for _, id := range it.rest[:n] {
		e := w.ent(id)
		w.lay.writeID(&w.pw, id)
		w.pw.WriteBitString(e.rel.b, e.rel.n)
		e.wholeAt = int32(w.frame)
		o.pkt.ids = append(o.pkt.ids, id)
		if w.lastBc[id] > it.enter && it.echo == 0 {
			// It broadcast lately: the client may be asking for it, and
			// need not be answered (see discovered).
			o.tell(w, id)
		}
	}
	if o.echoed(w, it, n) {
		o.later = append(o.later, item{kind: itemRegion, why: it.why, reg: it.reg, enter: it.enter,
			echo: it.echo + 1, rest: append(o.spareList(), it.rest[:n]...)})
	}
	it.rest = it.rest[:copy(it.rest, it.rest[n:])] // the start stays, for keepList's storage
	return len(it.rest) == 0
}

// turnWithin bounds how long ago a path may have started for a whole
// logic message to be preceded by its start (turnMsg): a second, longer
// than any render delay and than a lost broadcast takes to repair.
const turnWithin = time.Second

// repairTurn is turnMsg for an item: a repair (what the lost broadcast
// said) or a discovery answer (an entity the client just heard of).
func (w *World) repairTurn(e *entity, why uint8) int {
	if why != whyRepair && why != whyDiscovery {
		return 0
	}
	return w.turnMsg(e)
}

// turnMsg writes into w.mw, for an entity whose path began lately
// (walking still, or arrived since), the move that began it, stamped with
// its frame, and returns its length in bits (0 for none). The logic
// message that follows says where the entity is; the move says since when
// it walks that way, which the client's rendering needs to draw the frames
// since then right (Client.Render draws a little behind the world).
func (w *World) turnMsg(e *entity) int {
	l := &w.past[e.id]
	if l.n == 0 {
		return 0
	}
	s := l.nth(l.n - 1)
	if s.frame >= w.frame || w.frame-s.frame > min(w.turnFrames, w.lay.history) || s.dest != e.lg.Dest || s.speed == 0 ||
		(s.speed != e.lg.Speed && e.lg.Moving()) {
		return 0
	}
	w.mw.Reset(w.mbuf[:0])
	writeTag(&w.mw, tagMove)
	w.lay.writeID(&w.mw, e.id)
	w.lay.writeStamp(&w.mw, s.frame, w.frame)
	w.lay.writeMove(&w.mw, e.ep, false, s.pos, s.dest, s.speed, 0)
	w.mbuf = w.mw.Bytes()[:0]
	return w.mw.Len()
}

// writeLogicMsg writes a logic message for e, whose absolute encoding is
// current.
func (w *World) writeLogicMsg(wr *codec.Writer, e *entity) {
	writeTag(wr, tagLogic)
	w.lay.writeID(wr, e.id)
	wr.WriteBitString(e.abs.b, e.abs.n)
	e.wholeAt = int32(w.frame)
}

// writeVitalsMsg writes e's vitals: a state sync, which corrects what
// changes without a broadcast. Positions and paths need none: every change
// to them is broadcast, and a broadcast lost is repaired. The vitals are
// spliced from e's absolute encoding, which must be current: encoded once
// a frame however many packets carry them.
func (w *World) writeVitalsMsg(wr *codec.Writer, e *entity) {
	writeTag(wr, tagVitals)
	w.lay.writeID(wr, e.id)
	copyBits(wr, e.abs.b, logicKindBits, int(e.absVit))
}

// writeRemoveMsg writes a removal of id.
func (w *World) writeRemoveMsg(wr *codec.Writer, id ID) {
	writeTag(wr, tagRemove)
	w.lay.writeID(wr, id)
}

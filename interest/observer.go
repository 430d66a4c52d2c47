package interest

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// ringSize is how many recent downlink packets an observer remembers, to
// repair what a lost one carried.
const ringSize = 64

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
	enter int   // itemRegion: the frame the range took it in
	acc   float32
	rest  []ID // itemRegion: entities still to send, once started
}

// sentPacket is what a downlink packet carried, for repair if it is lost.
type sentPacket struct {
	seq   int
	frame int // the frame it was sent in
	done  bool
	corr  bool
	ids   []ID
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

// lateBroadcast is how recent a broadcast may be and still not have
// brought a client's discovery answer: a round trip and a frame or two,
// with room for a slow link (discovered).
const lateBroadcast = 250 * time.Millisecond

// reorderFrames is how much later a packet must have been sent than an
// unacknowledged one for its acknowledgement to mean the older was lost.
const reorderFrames = 2

// observer is the world's state for one client (the seed's per-character
// m_nEnterRegionFrame[9], plus what a lossy network needs).
type observer struct {
	// The first cache lines hold what every frame reads, for a client
	// with nothing to hear as much as for one with a packet to build.
	id       ID
	ackDue   bool
	corr     bool // a correction is to be sent
	haveCmd  bool
	heard    bool    // the client has acknowledged a packet
	open     [9]bool // forced sync not yet queued
	cmdSeq   uint16
	target   ID
	tokens   float64
	probe    int // frame to send a packet at even with nothing to say
	lastSend int
	tgtSync  int
	seq      int

	queue   []item
	owed    []owed
	hist    []Vec // position by frame, ring of history frames
	pkt     *sentPacket
	settled int // packets before it are acknowledged or repaired

	later    []item                    // queued while draining
	lossAt   [len(echoesAfter) - 1]int // frames of the last packets found lost, newest first
	spare    [][]ID                    // region lists' storage, for the next forced syncs
	lastCorr int                       // frame of the last correction; older commands are void
	listed   int32                     // the region whose list holds it (World.addObserver), or -1
	enter    [9]int
	due      [9]int

	told        [toldSize]toldRec // the entities lately sent to the client whole, a ring
	toldAt      int
	toldIn      [toldBuckets]uint8 // how many of told's entries fall in each bucket (toldBucket)
	names       names              // the name dictionary shared with the client
	looks       lookDict           // the look dictionary shared with the client
	corrections int64

	ring [ringSize]sentPacket
}

func newObserver(w *World, e *entity) *observer {
	o := &observer{id: e.id, hist: make([]Vec, w.lay.history+1), tokens: float64(w.cfg.DiscoveryRate), listed: -1}
	for i := range o.hist {
		o.hist[i] = e.lg.Pos
	}
	o.lastCorr = w.frame
	for i := range o.lossAt {
		o.lossAt[i] = math.MinInt / 2
	}
	o.enqueue(item{kind: itemLogic, why: whyRepair, id: e.id}) // its own entity
	// A client that joins learns the whole range at once: every region is
	// due for forced sync now, spread over frames by the budget.
	for s := range o.enter {
		o.enter[s], o.due[s], o.open[s] = w.frame, w.frame, true
	}
	o.opened(w)
	return o
}

// opened records in World.waiting whether the observer waits for any
// region's forced sync, after o.open changed, and counts it in the region
// it is listed in.
func (o *observer) opened(w *World) {
	wait := o.open != [9]bool{}
	if wait == w.waiting[o.id] {
		return
	}
	w.waiting[o.id] = wait
	if o.listed >= 0 {
		if wait {
			w.regions[o.listed].waiting++
		} else {
			w.regions[o.listed].waiting--
		}
	}
}

// slot returns the index of region r in the 3x3 range centred on c, or -1.
func slotOf(c, r Region) int {
	dx, dy := r.X-c.X, r.Y-c.Y
	if dx < -1 || dx > 1 || dy < -1 || dy > 1 {
		return -1
	}
	return dx + 1 + 3*(dy+1)
}

// crossed updates the per-region enter frames when the observer's entity
// moves from region from to region to: regions still in range keep their
// frames; new ones are entered now and due for forced sync.
func (o *observer) crossed(w *World, from, to int32) {
	a, b := w.regionAt(from), w.regionAt(to)
	var enter, due [9]int
	var open [9]bool
	forced := w.cfg.frames(w.cfg.ForcedSync)
	for s := range 9 {
		r := Region{b.X + s%3 - 1, b.Y + s/3 - 1}
		if old := slotOf(a, r); old >= 0 {
			enter[s], due[s], open[s] = o.enter[old], o.due[old], o.open[old]
			continue
		}
		enter[s], due[s], open[s] = w.frame, w.frame+forced, true
	}
	o.enter, o.due, o.open = enter, due, open
	o.opened(w)
	if w.cfg.LeaveMessages {
		w.around(from, func(ri int32) {
			if near(b, w.regionAt(ri)) {
				return
			}
			for _, id := range w.regions[ri].ents {
				o.enqueue(item{kind: itemRemove, why: whyLeave, id: id})
			}
		})
	}
}

// observerLines is how many of an observer's first cache lines every
// frame reads (TestObserverLayout).
const observerLines = 3

// prefetch starts loading the observer's first lines, which every frame's
// record and send read.
func (o *observer) prefetch() {
	for i := range observerLines {
		prefetch.Line(unsafe.Add(unsafe.Pointer(o), i*64))
	}
}

// prefetchNext starts loading what the observer's first lines point to and
// this frame reads: its entity, this frame's history slot, the next
// packet's ring entry and the head of its queue, and for an observer that
// waits for a forced sync, its frames of entering and due.
func (o *observer) prefetchNext(w *World) {
	w.prefetchEntity(o.id, 0, 1)
	prefetch.Line(unsafe.Pointer(&o.hist[w.frame%len(o.hist)]))
	prefetch.Line(unsafe.Pointer(&o.ring[o.seq%ringSize]))
	if len(o.queue) > 0 {
		prefetch.Line(unsafe.Pointer(&o.queue[0]))
	}
	if w.waiting[o.id] { // forced reads the range's enter and due frames
		p := unsafe.Pointer(&o.enter)
		for off := uintptr(0); off < unsafe.Sizeof(o.enter)+unsafe.Sizeof(o.due)+63; off += 64 {
			prefetch.Line(unsafe.Add(p, off))
		}
	}
}

// prefetchLast starts loading what the lines prefetchNext loaded point to:
// the list of IDs of the next packet's ring entry.
func (o *observer) prefetchLast() {
	prefetch.Line(unsafe.Pointer(unsafe.SliceData(o.ring[o.seq%ringSize].ids)))
}

// record stores the entity's position for this frame.
func (o *observer) record(w *World) {
	o.hist[w.frame%len(o.hist)] = w.ent(o.id).lg.Pos
}

// at returns the recorded position at frame f, which must be within the
// history.
func (o *observer) at(f int) Vec { return o.hist[f%len(o.hist)] }

// rewriteFrom re-records frames f..now along the path from src.
func (o *observer) rewriteFrom(w *World, f int, src, dest Vec, speed int32) {
	f = max(f, w.frame-len(o.hist)+1)
	p := src
	for g := f; g <= w.frame; g++ {
		o.hist[g%len(o.hist)] = p
		p = Step(p, dest, speed)
	}
}

// correct queues a correction: the world's truth about the player's own
// entity, which the client adopts.
func (o *observer) correct(w *World) {
	o.push(w)
	o.corrections++
	w.stats.Corrections++
}

// push sends the client the world's record of its entity: after a
// correction, or when the game moved the player itself (a knock-back).
// Commands the client stamped before it are void.
func (o *observer) push(w *World) {
	o.corr = true
	o.lastCorr = w.frame
}

// skip fills the history over frames the world skipped: the entity stood
// still through them.
func (o *observer) skip(w *World, n int) {
	p := w.ent(o.id).lg.Pos
	for f := w.frame + 1; f <= w.frame+min(n, len(o.hist)); f++ {
		o.hist[f%len(o.hist)] = p
	}
}

func (o *observer) enqueue(it item) {
	if it.kind != itemRegion {
		for i := range o.queue {
			q := &o.queue[i]
			if q.kind == it.kind && q.id == it.id {
				if whyWeight[it.why] > whyWeight[q.why] {
					q.why = it.why
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
		o.enqueue(item{kind: itemLogic, why: whyDiscovery, id: ID(raw)})
		w.stats.Discoveries++
	}
	if len(u.display) > 0 {
		o.displays(w, u.display, failReq)
	}
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
	b := w.pw.Bytes()
	w.pbuf = b[:0]
	w.stats.ReliableOut += int64(len(b))
	if err := w.out.SendReliable(o.id, b); err != nil {
		w.stats.Dropped[DropSendFailed]++
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
	if c.frame < o.lastCorr {
		return 0, nil // sent before the client saw its correction: void
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
		} else { // the client runs ahead: catch up to it (seed 5.2.1)
			expect = StepN(e.lg.Pos, e.lg.Dest, e.lg.Speed, c.frame-w.frame)
		}
		if tol := int64(w.cfg.Tolerance); c.src.DistSq(expect) > tol*tol {
			o.correct(w)
			return 0, nil
		}
		w.setPath(e, c.src, c.dest, c.speed, c.frame)
		o.rewriteFrom(w, c.frame, c.src, c.dest, c.speed)
		w.reregion(e)
	case cmdJump:
		w.pend = append(w.pend, pending{id: e.id, tag: tagJump, frame: c.frame})
	case cmdSkill:
		if c.target != 0 && w.get(c.target) == nil {
			return DropUnknown, fmt.Errorf("%w: skill target %d", ErrUnknown, c.target)
		}
		w.pend = append(w.pend, pending{id: e.id, tag: tagSkill, frame: c.frame, c: command{skill: c.skill, target: c.target}})
	case cmdCustom:
		w.pend = append(w.pend, pending{id: e.id, tag: tagCustom, frame: c.frame,
			c: command{ctag: c.ctag, data: append([]byte(nil), c.data...)}})
	}
	return 0, nil
}

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

// forced queues the forced sync of regions whose time has come (seed
// 5.2.2). A region ahead of a moving player is due earlier: Lead before
// the player would reach it (seed 5.1.3).
func (o *observer) forced(w *World, me *entity) {
	if !w.waiting[o.id] {
		return
	}
	c := w.regionAt(me.reg)
	lead := w.cfg.frames(w.cfg.Lead)
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
		if eta := w.eta(me, r); eta >= 0 && o.enter[s]+eta-lead < due {
			due = max(o.enter[s], o.enter[s]+eta-lead)
			why = whyForcedAhead
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

// eta returns in how many frames a moving entity reaches region r, or -1
// if it is not heading there.
func (w *World) eta(e *entity, r Region) int {
	if !e.lg.Moving() {
		return -1
	}
	s := int64(w.cfg.RegionSize)
	rect := func(p Vec) int64 {
		dx := max(s*int64(r.X)-int64(p.X), 0, int64(p.X)-(s*int64(r.X+1)-1))
		dy := max(s*int64(r.Y)-int64(p.Y), 0, int64(p.Y)-(s*int64(r.Y+1)-1))
		return dx*dx + dy*dy
	}
	now, end := rect(e.lg.Pos), rect(e.lg.Dest)
	if end >= now {
		return -1
	}
	return int(isqrt(now)/int64(e.lg.Speed)) + 1
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
	for i := range o.queue {
		it := &o.queue[i]
		it.acc += whyWeight[it.why]
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

// moved handles entity e crossing from region from to region to inside the
// observer's range: if the client is waiting for from's forced sync to
// learn of e, and to's forced sync is over or would not include e (e
// broadcast before the client's range took in to), e would fall between
// the two, so it is queued on its own.
func (o *observer) moved(w *World, e *entity, from, to int32) {
	c := w.regionAt(w.ent(o.id).reg)
	sf, st := slotOf(c, w.regionAt(from)), slotOf(c, w.regionAt(to))
	lastBc := w.lastBc[e.id]
	if sf < 0 || st < 0 || !o.open[sf] || lastBc > o.enter[sf] || e.id == o.id {
		return // not waiting for from's forced sync: the client has it or will
	}
	if o.open[st] && lastBc <= o.enter[st] && o.due[st] <= o.due[sf] {
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
		if size > *budget || size > w.room() {
			return false
		}
		*budget -= size
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

// prefetchTold starts loading the ring of entities lately told, its index
// and its bucket counts, which tell writes and toldSince reads.
func (o *observer) prefetchTold() {
	size := unsafe.Offsetof(o.toldIn) + toldBuckets - unsafe.Offsetof(o.told)
	for off := uintptr(0); off < size+63; off += 64 { // every line the span touches
		prefetch.Line(unsafe.Add(unsafe.Pointer(&o.told), off))
	}
}

// toldBuckets is how many buckets of IDs an observer counts its told
// ring's entries in, so that toldSince skips the scan for an ID none of
// them shares a bucket with (most of the forced syncs' entities).
const toldBuckets = 64

func toldBucket(id ID) int { return int(id % toldBuckets) }

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

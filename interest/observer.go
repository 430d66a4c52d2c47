package interest

import (
	"math"
	"unsafe"

	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

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
	lastCorr int                       // frame of the last correction; older moves are void
	voidFrom uint16                    // the first command the last correction voids, if stamped before lastCorr
	listed   int32                     // the region whose list holds it (World.addObserver), or -1
	// movesTo is the frame of a crossing from a cell that did not say
	// which commands it applied: the jumps, skills and custom commands
	// stamped by then are dropped (adopt); -1 otherwise.
	movesTo int
	// The field group records due to the client this frame (pushGroups):
	// gpush, the frame's pushed records (World.gpush) of entities in its
	// range; groupOut, the groups it asked for. groupListed: the observer
	// is in World.groupObs.
	gpush       []int32
	groupOut    []gkey
	groupListed bool
	enter       [9]int
	due         [9]int

	told        [toldSize]toldRec // the entities lately sent to the client whole, a ring
	toldAt      int
	toldIn      [toldBuckets]uint8 // how many of told's entries fall in each bucket (toldBucket)
	names       names              // the name dictionary shared with the client
	looks       lookDict           // the look dictionary shared with the client
	corrections int64
	// limits are the player's recent speed limits (SetSpeedLimit), newest
	// last: with hist, the movement history a command is checked against.
	limits []speedLimit

	ring [ringSize]sentPacket
}

// speedLimit is a change of a player's speed limit: from frame on, speed;
// before, prev.
type speedLimit struct {
	frame       int
	speed, prev int32
}

// maxLimits bounds the speed limit changes kept: beyond them, the limit
// before the oldest kept stands for the frames before it.
const maxLimits = 16

// limitAt returns the player's speed limit at frame f.
func (o *observer) limitAt(w *World, f int) int32 {
	for i := len(o.limits) - 1; i >= 0; i-- {
		if o.limits[i].frame <= f {
			return o.limits[i].speed
		}
	}
	if len(o.limits) > 0 {
		return o.limits[0].prev // before the oldest change kept
	}
	return int32(w.cfg.MaxSpeed)
}

// setLimit records a new speed limit from the current frame on, keeping
// the changes the history still reaches.
func (o *observer) setLimit(w *World, speed int32) {
	prev := o.limitAt(w, w.frame)
	if n := len(o.limits); n > 0 && o.limits[n-1].frame == w.frame {
		o.limits[n-1].speed = speed
		return
	}
	for len(o.limits) > 1 && (len(o.limits) >= maxLimits || o.limits[1].frame <= w.frame-len(o.hist)) {
		o.limits = append(o.limits[:0], o.limits[1:]...)
	}
	o.limits = append(o.limits, speedLimit{frame: w.frame, speed: speed, prev: prev})
}

func newObserver(w *World, e *entity) *observer {
	o := &observer{id: e.id, hist: make([]Vec, w.lay.history+1), tokens: float64(w.cfg.DiscoveryRate), listed: -1, movesTo: -1}
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

// crowdLead is how many frames early region r's forced sync starts when
// the range takes it in: the frames its list takes at half the most a
// frame may carry for it (item.needed), rounded up, so that a crowded
// region's is done by its time, not begun, with room for the frames'
// broadcasts and the other regions taken in at once. A region whose list
// fits in a quarter of that starts on time. Read once, at the crossing.
func (w *World) crowdLead(r Region) int {
	if r.X < 0 || r.Y < 0 || r.X >= w.cfg.Width || r.Y >= w.cfg.Height {
		return 0
	}
	bits := len(w.regions[w.regionIndex(r)].ents) * (w.lay.idBits + entryBits)
	half := maxNeeded * 4 * w.cfg.TickBudget // bits: half of maxNeeded budgets
	if bits <= half/4 {
		return 0
	}
	return (bits + half - 1) / half
}

// crossed updates the per-region enter frames when the observer's entity
// moves from region from to region to: regions still in range keep their
// frames; new ones are entered now and due for forced sync.
func (o *observer) crossed(w *World, from, to int32) {
	a, b := w.regionAt(from), w.regionAt(to)
	var enter, due [9]int
	var open [9]bool
	forced := w.forcedFrames
	for s := range 9 {
		r := Region{b.X + s%3 - 1, b.Y + s/3 - 1}
		if old := slotOf(a, r); old >= 0 {
			enter[s], due[s], open[s] = o.enter[old], o.due[old], o.open[old]
			continue
		}
		enter[s], due[s], open[s] = w.frame, w.frame+forced-w.crowdLead(r), true
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
	o.voidFrom = o.cmdSeq // the refused command, which the client may replay from the world's record
	o.corrections++
	w.stats.Corrections++
}

// push sends the client the world's record of its entity: after a
// correction, or when the game moved the player itself (a knock-back).
// Moves the client stamped before it and sends after it are void: the
// client replays the newest on top of the record (Client reconciles).
func (o *observer) push(w *World) {
	o.corr = true
	o.lastCorr = w.frame
	o.voidFrom = o.cmdSeq + 1
	if !o.haveCmd {
		o.voidFrom = 0
	}
}

// skip fills the history over frames the world skipped: the entity stood
// still through them.
func (o *observer) skip(w *World, n int) {
	p := w.ent(o.id).lg.Pos
	for f := w.frame + 1; f <= w.frame+min(n, len(o.hist)); f++ {
		o.hist[f%len(o.hist)] = p
	}
}

package interest

import (
	"fmt"
	"slices"

	"github.com/tongbu/tongbu/codec"
)

// Rect is a rectangle of a world's region grid: the regions (x, y) with
// X0 <= x < X1 and Y0 <= y < Y1. A map cut into cells gives each cell one.
type Rect struct{ X0, Y0, X1, Y1 int }

// Contains reports whether region g is in r.
func (r Rect) Contains(g Region) bool { return g.X >= r.X0 && g.X < r.X1 && g.Y >= r.Y0 && g.Y < r.Y1 }

// near reports whether region g is within one region of r (in it, or on
// the ring around it): what a client in r can see.
func (r Rect) near(g Region) bool {
	return g.X >= r.X0-1 && g.X < r.X1+1 && g.Y >= r.Y0-1 && g.Y < r.Y1+1
}

func (r Rect) empty() bool { return r.X0 >= r.X1 || r.Y0 >= r.Y1 }

// Border is this world's side of the border between its cell and a
// neighbour's, when one map is cut into cells, each a World in its own
// process: every cell holds the whole map's grid, owns the entities in
// its rectangle, and mirrors as read-only ghosts the neighbours'
// entities its clients can see, so that a client near a border is served
// the same 3x3 set as if one world held the map.
//
// After every tick, Write makes the message for the neighbour: the
// entities of this cell within one region of the neighbour's (those its
// clients can see), when they change or every BorderRefresh frames; the
// ones that left that band; and the ones that crossed into the
// neighbour's cell, whose ownership goes with the message (this world
// keeps them as ghosts). The neighbour's Apply takes it. The carrier
// between the processes (NATS, in package cluster) is the caller's. A
// Border belongs to its world's goroutine.
//
// A map cut into cells gives every cell's world the same configuration
// but for IDOffset (the cell's index) and IDStride (the number of cells),
// so that an entity keeps its ID wherever it goes, and the same start
// instant, so that frame numbers agree.
type Border struct {
	w            *World
	mine, theirs Rect
	band         []int32 // my regions the neighbour's clients can see
	strays       []int32 // their regions where my entities arrive when they cross
	sent         map[ID]sentGhost
	wr           codec.Writer
	ops          []borderOp    // Apply's, reused
	cmds         []cmdState    // Write's: the command state of each carried handover, for the trailer
	gops         []groupOp     // Write's: the update and handover ops, for the groups trailer
	gsent        map[ID]uint32 // the version of each entity's groups told (fieldSet.ver+1)
	all          bool          // the next Write hands over from all of theirs (Reclaim)
	noTrailer    bool          // tests: Write as a cell that predates the trailer
}

// groupOp is an update or handover op of a border message, whose
// entity's field groups the groups trailer may carry.
type groupOp struct {
	id     ID
	handed bool
}

// cmdState is a handed-over player's command state at its old cell: the
// last command the cell applied (SPEC.md §8.4's trailer).
type cmdState struct {
	have bool
	seq  uint16
}

// sentGhost is what the neighbour was last told of an entity.
type sentGhost struct {
	lg    Logic
	kind  Kind
	dver  uint8
	frame int // when it was told
	seen  int // the last frame the entity was in the band
}

// ghostOf is a ghost's record: the border that mirrors it, and since
// when it has been left without an owner (-1: it has one).
type ghostOf struct {
	from   *Border
	orphan int
}

// BorderRefresh is how often, in frames, an entity that has not changed
// is told to the neighbour again, which repairs a lost message.
const BorderRefresh = 16

// orphanFrames is how long a ghost whose owner handed it to a third cell
// waits for that cell to mirror it before it is dropped.
const orphanFrames = 2 * BorderRefresh

// Border ops.
const (
	borderUpdate = iota
	borderHandover
	borderRemove
	borderHanded // removed here: its owner handed it to another cell
)

// NewBorder joins this world's cell, mine, to a neighbour's, theirs:
// rectangles of the region grid that do not overlap and touch (share an
// edge or a corner).
func (w *World) NewBorder(mine, theirs Rect) (*Border, error) {
	full := Rect{0, 0, w.cfg.Width, w.cfg.Height}
	for _, r := range []Rect{mine, theirs} {
		if r.empty() || r.X0 < 0 || r.Y0 < 0 || r.X1 > full.X1 || r.Y1 > full.Y1 {
			return nil, fmt.Errorf("%w: cell %+v not on the %dx%d grid", ErrConfig, r, w.cfg.Width, w.cfg.Height)
		}
	}
	b := &Border{w: w, mine: mine, theirs: theirs, sent: map[ID]sentGhost{}}
	for y := range w.cfg.Height {
		for x := range w.cfg.Width {
			g := Region{x, y}
			switch {
			case mine.Contains(g) && theirs.Contains(g):
				return nil, fmt.Errorf("%w: cells %+v and %+v overlap", ErrConfig, mine, theirs)
			case mine.Contains(g) && theirs.near(g):
				b.band = append(b.band, w.regionIndex(g))
			case theirs.Contains(g) && mine.near(g):
				b.strays = append(b.strays, w.regionIndex(g))
			}
		}
	}
	if len(b.band) == 0 {
		return nil, fmt.Errorf("%w: cells %+v and %+v do not touch", ErrConfig, mine, theirs)
	}
	if w.ghosts == nil {
		w.ghosts = map[ID]*ghostOf{}
	}
	return b, nil
}

// Ghost reports whether entity id is a ghost: another cell owns it, and
// this world only mirrors it (its changes are refused with ErrGhost).
func (w *World) Ghost(id ID) bool { return w.get(id) != nil && w.ghost[id] }

// Write appends the message for the neighbour to dst, for the world's
// current frame, and returns the entities whose ownership it hands over
// (they crossed into the neighbour's cell): from now on they are ghosts
// here. A game that attached a client to one (Join) moves the client to
// the neighbour; the world has already detached it here.
func (b *Border) Write(dst []byte) ([]byte, []ID) {
	w := b.w
	b.wr.Reset(dst)
	b.wr.WriteUvarint(uint64(w.frame))
	var handed []ID
	b.cmds, b.gops = b.cmds[:0], b.gops[:0]
	// Entities of mine that walked into the neighbour's cell.
	for _, ri := range b.strays {
		for _, id := range w.regions[ri].ents {
			if w.ghost[id] {
				continue
			}
			handed = append(handed, id)
		}
	}
	deep := len(handed)
	if b.all { // and, once after Reclaim, those deeper in
		b.all = false
		for y := b.theirs.Y0; y < b.theirs.Y1; y++ {
			for x := b.theirs.X0; x < b.theirs.X1; x++ {
				g := Region{x, y}
				if b.mine.near(g) {
					continue // a stray region, done above
				}
				for _, id := range w.regions[w.regionIndex(g)].ents {
					if !w.ghost[id] {
						handed = append(handed, id)
					}
				}
			}
		}
	}
	for _, id := range handed {
		e := w.ent(id)
		b.writeOp(borderHandover, e, true)
		b.writeCarried(e.obs)
		if e.obs != nil {
			b.cmds = append(b.cmds, cmdState{have: e.obs.haveCmd, seq: e.obs.cmdSeq})
			w.Leave(id)
		}
		w.ghost[id] = true
		w.mirror(id, b)
		delete(b.sent, id)
		if e.lg.Moving() { // from now on a frame behind its new owner (setGhost)
			w.setPath(e, e.lg.Pos, e.lg.Dest, e.lg.Speed, w.frame+1)
		}
	}
	// Those handed from deep in: out of this cell's clients' sight, they
	// are dropped here unless the neighbour mirrors them back.
	for _, id := range handed[deep:] {
		g := w.ghosts[id]
		w.orphans++
		g.orphan = w.frame
	}
	// Mine in the band: new, changed, or due for a refresh.
	for _, ri := range b.band {
		for _, id := range w.regions[ri].ents {
			if w.ghost[id] {
				continue
			}
			e := w.ent(id)
			s, ok := b.sent[id]
			display := !ok || s.dver != e.dver || w.frame-s.frame >= BorderRefresh
			if ok && !display && s.kind == e.kind && s.lg.Dest == e.lg.Dest && s.lg.Speed == e.lg.Speed &&
				StepN(s.lg.Pos, s.lg.Dest, s.lg.Speed, w.frame-s.frame) == e.lg.Pos && sameVitals(&s.lg, &e.lg) &&
				(len(w.cfg.Groups) == 0 || !b.groupsChanged(id)) {
				s.seen = w.frame
				b.sent[id] = s
				continue
			}
			b.writeOp(borderUpdate, e, display)
			b.sent[id] = sentGhost{lg: e.lg, kind: e.kind, dver: e.dver, frame: w.frame, seen: w.frame}
		}
	}
	// Those that left the band, or this cell.
	for id, s := range b.sent {
		if s.seen == w.frame {
			continue
		}
		op := borderRemove
		if w.get(id) != nil && w.ghost[id] { // handed to a third cell through another border
			op = borderHanded
		}
		b.wr.WriteBool(true)
		b.wr.WriteBits(uint64(op), 2)
		w.lay.writeID(&b.wr, id)
		delete(b.sent, id)
		delete(b.gsent, id)
	}
	b.wr.WriteBool(false) // the end of the ops
	// The trailer: the last command each carried player's old cell
	// applied, so that its client's commands in flight at the crossing
	// are applied once, here or there. A reader that predates it stops
	// at the end of the ops.
	b.wr.WriteBool(!b.noTrailer)
	for _, c := range b.cmds {
		if b.noTrailer {
			break
		}
		b.wr.WriteBool(c.have)
		if c.have {
			b.wr.WriteBits(uint64(c.seq), 16)
		}
	}
	if len(w.cfg.Groups) > 0 {
		b.writeBorderGroups()
	}
	b.sweepOrphans()
	return b.wr.Bytes(), handed
}

func sameVitals(a, b *Logic) bool {
	return a.State == b.State && a.Combat == b.Combat && a.Life == b.Life && a.Mana == b.Mana && a.Rage == b.Rage && a.Magic == b.Magic
}

// writeOp writes an update or handover of e.
func (b *Border) writeOp(op int, e *entity, display bool) {
	b.gops = append(b.gops, groupOp{e.id, op == borderHandover})
	b.wr.WriteBool(true)
	b.wr.WriteBits(uint64(op), 2)
	b.w.lay.writeID(&b.wr, e.id)
	b.w.lay.writeLogic(&b.wr, e.kind, &e.lg, e.dver, nil)
	b.wr.WriteBool(display)
	if display {
		d := &b.w.dispEnc(e.id).d
		b.wr.WriteBits(uint64(d.Appearance), 32)
		b.wr.WriteBits(uint64(d.Camp), 8)
		b.wr.WriteString(d.Name, MaxName)
	}
}

// borderOp is one decoded op of a border message.
type borderOp struct {
	op      int
	id      ID
	kind    Kind
	lg      Logic
	dver    uint8
	display bool
	d       Display
	carry   *carried  // a handover's player: its client's command state
	groups  [][]int64 // the entity's field groups, when the message carries them
}

// Apply takes a message of the neighbour's Write: it spawns, moves and
// removes the ghosts of the neighbour's entities, and takes ownership of
// those handed over, which it returns (a game attaches their clients
// here). A message that does not decode is dropped whole with
// ErrMalformed; an op about an entity this world owns (a stale one) is
// skipped.
func (b *Border) Apply(msg []byte) (adopted []ID, err error) {
	w := b.w
	r := codec.NewReader(msg)
	frame := r.ReadUvarint() // the sender's frame
	if frame > 1<<40 {
		r.Fail(fmt.Errorf("%w: frame %d", ErrMalformed, frame))
	}
	ops := b.ops[:0]
	for r.Err() == nil && r.ReadBool() {
		var o borderOp
		o.op = int(r.ReadBits(2))
		o.id = w.lay.readID(r)
		if o.op == borderUpdate || o.op == borderHandover {
			o.kind, o.dver = w.lay.readLogic(r, &o.lg, nil)
			if o.display = r.ReadBool(); o.display {
				o.d.Appearance = uint32(r.ReadBits(32))
				o.d.Camp = uint8(r.ReadBits(8))
				o.d.Name = r.ReadString(MaxName)
			}
			if o.kind >= numKinds {
				r.Fail(fmt.Errorf("%w: kind %d", ErrMalformed, o.kind))
			}
		}
		if o.op == borderHandover && r.ReadBool() {
			o.carry = b.readCarried(r, int(frame))
		}
		ops = append(ops, o)
		if len(ops) > w.cfg.MaxEntities {
			r.Fail(fmt.Errorf("%w: %d ops", ErrMalformed, len(ops)))
		}
	}
	// The trailer, from a sender that writes it (a 0 bit, or none, from
	// one that does not: its padding).
	if r.Err() == nil && r.Remaining() > 0 && r.ReadBool() {
		for i := range ops {
			if c := ops[i].carry; c != nil && r.Err() == nil {
				c.cmds = true
				if c.haveCmd = r.ReadBool(); c.haveCmd {
					c.cmdSeq = uint16(r.ReadBits(16))
				}
			}
		}
	}
	// The groups trailer, in a world with field groups.
	if len(w.cfg.Groups) > 0 && r.Err() == nil && r.Remaining() > 0 && r.ReadBool() {
		b.readBorderGroups(r, ops)
	}
	b.ops = ops[:0]
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: border message: %v", ErrMalformed, err)
	}
	for i := range ops {
		if id, ok := b.apply(&ops[i]); ok {
			adopted = append(adopted, id)
		}
	}
	return adopted, nil
}

// apply applies one op; it reports an entity adopted.
func (b *Border) apply(o *borderOp) (ID, bool) {
	w := b.w
	e := w.get(o.id)
	if e != nil && !w.ghost[o.id] {
		return 0, false // mine: the neighbour's word is stale
	}
	switch o.op {
	case borderRemove, borderHanded:
		g := w.ghosts[o.id]
		if e == nil || g == nil || g.from != b {
			return 0, false // mirrored through another border now
		}
		if o.op == borderHanded {
			if g.orphan < 0 {
				w.orphans++
			}
			g.orphan = w.frame
			return 0, false
		}
		w.despawn(e)
		w.unmirror(o.id)
		return 0, false
	}
	own := o.op == borderHandover
	if e == nil {
		if !w.reserve(o.id) {
			return 0, false
		}
		w.spawnAt(o.id, o.kind, o.lg, o.d, !own)
		e = w.ent(o.id)
		if !own {
			e.start = w.frame + 1 // a frame behind its owner (setGhost)
		}
		if o.dver != e.dver {
			e.dver = o.dver
		}
	} else {
		w.setGhost(e, o, own)
		if own {
			w.ghost[o.id] = false
		}
	}
	if o.groups != nil {
		w.mirrorGroups(o.id, o.groups)
	}
	if own {
		w.unmirror(o.id)
		if o.carry != nil {
			if w.carried == nil {
				w.carried = map[ID]*carried{}
			}
			o.carry.at = o.lg
			w.carried[o.id] = o.carry // for the observer its client makes here (Join)
		}
		return o.id, true
	}
	w.mirror(o.id, b)
	return 0, false
}

// mirror records that ghost id is mirrored through b.
func (w *World) mirror(id ID, b *Border) {
	if g := w.ghosts[id]; g != nil {
		if g.orphan >= 0 {
			w.orphans--
		}
		g.from, g.orphan = b, -1
		return
	}
	w.ghosts[id] = &ghostOf{from: b, orphan: -1}
}

// reserve makes storage for entity id, which another cell spawned; an ID
// of this world's own that it had freed leaves the free list. It reports
// false for an ID out of range.
func (w *World) reserve(id ID) bool {
	if int(id) >= w.cfg.MaxEntities {
		return false
	}
	for w.ids <= int(id) {
		g := ID(w.ids)
		w.grow()
		if g != id && w.ownID(g) {
			w.free = append(w.free, g) // not skipped for good
		}
	}
	if w.ownID(id) {
		if i := slices.Index(w.free[w.freeAt:], id); i >= 0 {
			w.free = slices.Delete(w.free, w.freeAt+i, w.freeAt+i+1)
		}
	}
	return true
}

// setGhost brings a ghost to what its owner says: a new path, vitals or
// display are applied (and reach the clients) as the owner's changes did.
//
// A ghost runs one frame behind its owner: it stands at the position the
// owner reported for the coming frame and walks the owner's path from the
// frame after. It is then never where its owner was not: a ghost that
// stepped ahead on its own would walk the old path for a frame whenever
// the owner turned, and could cross into the range of clients its owner
// never came near. own: the entity is handed over, and from now on its
// path runs here on time.
func (w *World) setGhost(e *entity, o *borderOp, own bool) {
	if e.kind != o.kind {
		e.kind = o.kind
		w.invalidate(e)
	}
	at, start := e.lg.Pos, w.frame
	if !own {
		if e.start <= w.frame { // where the ghost will be next frame: where the owner is now
			at = Step(e.lg.Pos, e.lg.Dest, e.lg.Speed)
		}
		start = w.frame + 1
	}
	if o.lg.Pos != at || o.lg.Dest != e.lg.Dest || o.lg.Speed != e.lg.Speed {
		w.setPath(e, o.lg.Pos, o.lg.Dest, o.lg.Speed, start)
		w.reregion(e)
	}
	if !sameVitals(&o.lg, &e.lg) {
		e.lg.State, e.lg.Combat, e.lg.Life, e.lg.Mana, e.lg.Rage, e.lg.Magic = o.lg.State, o.lg.Combat, o.lg.Life, o.lg.Mana, o.lg.Rage, o.lg.Magic
		w.invalidate(e)
		w.markDirty(e)
	}
	if o.display && (o.dver != e.dver || w.dispEnc(e.id).d != o.d) {
		w.setDisplay(e.id, o.d)
		e.dver = o.dver
		w.invalidate(e)
		w.markDirty(e)
	}
}

// unmirror forgets ghost id's record.
func (w *World) unmirror(id ID) {
	if g := w.ghosts[id]; g != nil && g.orphan >= 0 {
		w.orphans--
	}
	delete(w.ghosts, id)
}

// sweepOrphans drops the ghosts this border mirrored whose owner handed
// them to a cell that has not mirrored them since.
func (b *Border) sweepOrphans() {
	w := b.w
	if w.orphans == 0 {
		return // the usual frame: no scan of the ghosts
	}
	for id, g := range w.ghosts {
		if g.from == b && g.orphan >= 0 && w.frame-g.orphan > orphanFrames {
			if e := w.get(id); e != nil && w.ghost[id] {
				w.despawn(e)
			}
			w.unmirror(id)
		}
	}
}

// Reclaim makes the next Write hand the neighbour every entity of this
// world inside its cell, not only those that just crossed: call it when a
// neighbour is back after being down, during which this world kept (and
// wrote no message for) the entities that walked into its cell.
func (b *Border) Reclaim() { b.all = true }

// Refresh makes the next Write tell the neighbour every entity of this
// world in its band again, as if it had been told none: call it when the
// neighbour's cell moved to another process, which mirrors nothing of
// this world yet.
func (b *Border) Refresh() { clear(b.sent) }

// Drop removes every ghost this border mirrors: the neighbour's process
// is gone, and its entities with it.
func (b *Border) Drop() {
	w := b.w
	for id, g := range w.ghosts {
		if g.from != b {
			continue
		}
		if e := w.get(id); e != nil && w.ghost[id] {
			w.despawn(e)
		}
		w.unmirror(id)
	}
	clear(b.sent)
}

package interest

import (
	"fmt"
	"unsafe"

	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// entity is the world's record of one entity, laid out in cache lines by
// what reads it.
type entity struct {
	// The first cache line holds what every frame's loops read: the
	// movement loop, forced-sync scans, range checks.
	id      ID
	kind    Kind
	alive   bool
	dver    uint8
	dirty   bool
	reg     int32 // region index (World.where holds a dense copy)
	mover   int32 // index in World.movers, -1 when standing
	lg      Logic
	start   int // frame its path starts: it stands at the source until then (a move stamped ahead)
	lastSyn int // frame of its last state sync

	// The second: the region-relative encoding (forced sync), its bits
	// held in the line itself, and what a crossing touches.
	relFrame int // frame the cached region-relative encoding was made, -1 if invalidated
	rel      bitString
	relBuf   [encInline]byte // rel.b's storage while the encoding fits
	slot     int32           // index in the region's entity list
	crossed  int32           // region it was in when it first crossed a border this frame, -1 if it did not, crossedNew if spawned since the last frame

	// The third: the absolute encoding (announcements, discovery, repairs),
	// likewise, and what a state change touches.
	absFrame int // frame the cached absolute encoding was made, -1 if invalidated
	abs      bitString
	absBuf   [encInline]byte
	dirtyAt  int32 // index in World.dirty, -1 when clean
	absVit   uint8 // the bit where abs's vitals end; they start after its kind (writeLogic)

	obs *observer
	// The path its last broadcast move (or its spawn) gave clients, and
	// that move's number (epochBits of it): a move that goes on from it
	// goes without its source (flush).
	bc pathSeg
	// wholeAt is the frame of the last logic message of it sent: a move
	// stamped before it rewrites what those clients hold, which they
	// cannot step back, so it goes with its source.
	wholeAt int32
	ep      uint8
	bcOK    bool
	_       [18]byte // to entitySize, so that entities in a slab keep to cache lines
}

// entitySize is the size of an entity: four cache lines. Entities are
// allocated in slabs of entitySlab, in ID order, and never move, so an
// encoding's slice may point into its own entity.
const (
	entitySize = 256
	entitySlab = 256
)

// encInline is the room for an encoding inside the entity: logic data in
// the default configuration takes at most 15 bytes (TestEncodingsInline).
// A longer encoding grows past it, to the heap, and stays there.
const encInline = 16

// bitString is an encoded message part, spliced into many packets.
type bitString struct {
	b []byte
	n int
}

func (w *World) get(id ID) *entity {
	if id == 0 || int(id) >= w.ids {
		return nil
	}
	if e := w.ent(id); e.alive {
		return e
	}
	return nil
}

// lookup returns the live entity id, or ErrUnknown.
func (w *World) lookup(id ID) (*entity, error) {
	if e := w.get(id); e != nil {
		return e, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknown, id)
}

// owned returns the live entity id if this world owns it: ErrUnknown, or
// ErrGhost for one it mirrors from another cell.
func (w *World) owned(id ID) (*entity, error) {
	e, err := w.lookup(id)
	if err == nil && w.ghost[id] {
		return nil, fmt.Errorf("%w: %d", ErrGhost, id)
	}
	return e, err
}

// crossedNew marks an entity spawned since the last frame: the frame's
// crossings announce it to its whole range.
const crossedNew = -2

// ent returns the storage of entity id, live or not, which must be 1 ..
// w.ids-1 (see entityAddr).
func (w *World) ent(id ID) *entity { return (*entity)(w.entityAddr(id)) }

// entityAddr returns where entity id is stored, or nil if it never was.
// It comes from the entity's slab, whose address the processor keeps in
// cache, not from a table of pointers by ID, a large one that a loop over
// scattered IDs would wait for.
func (w *World) entityAddr(id ID) unsafe.Pointer {
	k := int(id) - 1 // ID 1 is the first of the first slab
	if k < 0 || k/entitySlab >= len(w.slabs) {
		return nil
	}
	return unsafe.Add(unsafe.Pointer(w.slabs[k/entitySlab]), (k%entitySlab)*entitySize)
}

// prefetchEntity starts loading lines of entity id's storage: n lines
// from line first (of 4).
func (w *World) prefetchEntity(id ID, first, n int) {
	if p := w.entityAddr(id); p != nil {
		for i := range n {
			prefetch.Line(unsafe.Add(p, (first+i)*64))
		}
	}
}

// prefetchTables starts loading entity id's entries in World.where and
// World.lastBc, which loops over region lists read before the entity.
func (w *World) prefetchTables(id ID) {
	if int(id) < len(w.where) {
		prefetch.Line(unsafe.Pointer(&w.where[id]))
		prefetch.Line(unsafe.Pointer(&w.lastBc[id]))
	}
}

// regionOfID returns the region of live entity id, or -1, from the dense
// copy: without reading the entity.
func (w *World) regionOfID(id ID) int32 {
	if int(id) >= len(w.where) {
		return -1
	}
	return w.where[id]
}

// setRegion records live entity e in region r, in the entity and its
// dense copy.
func (w *World) setRegion(e *entity, r int32) {
	e.reg = r
	w.where[e.id] = r
}

func (w *World) startMoving(e *entity) {
	if e.mover < 0 {
		e.mover = int32(len(w.movers))
		w.movers = append(w.movers, e)
	}
}

func (w *World) stopMoving(e *entity) {
	if e.mover < 0 {
		return
	}
	last := w.movers[len(w.movers)-1]
	w.movers[e.mover] = last
	last.mover = e.mover
	w.movers[len(w.movers)-1] = nil
	w.movers = w.movers[:len(w.movers)-1]
	e.mover = -1
}

func (w *World) markDirty(e *entity) {
	e.dirty = true
	if e.dirtyAt < 0 {
		e.dirtyAt = int32(len(w.dirty))
		w.dirty = append(w.dirty, e.id)
	}
}

func (w *World) clean(e *entity) {
	e.dirty = false
	if e.dirtyAt < 0 {
		return
	}
	last := w.dirty[len(w.dirty)-1]
	w.dirty[e.dirtyAt] = last
	w.ent(last).dirtyAt = e.dirtyAt
	w.dirty = w.dirty[:len(w.dirty)-1]
	e.dirtyAt = -1
}

// absolute encodes e's logic with its absolute position for this frame,
// once however many packets carry it.
func (w *World) absolute(e *entity) {
	if w.cached(e, e.absFrame) {
		return
	}
	e.absFrame = w.frame
	w.w.Reset(e.abs.b[:0])
	e.absVit = uint8(w.lay.writeLogic(&w.w, e.kind, &e.lg, e.dver, nil))
	w.w.WriteBits(uint64(e.ep), epochBits)
	e.abs.n, e.abs.b = w.w.Len(), w.w.Bytes()
}

// relative encodes e's logic with its position inside its region, for
// region lists, once a frame.
func (w *World) relative(e *entity) {
	if w.cached(e, e.relFrame) {
		return
	}
	e.relFrame = w.frame
	rg := w.regionAt(e.reg)
	w.w.Reset(e.rel.b[:0])
	w.lay.writeLogic(&w.w, e.kind, &e.lg, e.dver, &rg)
	w.w.WriteBits(uint64(e.ep), epochBits)
	e.rel.n, e.rel.b = w.w.Len(), w.w.Bytes()
}

func (w *World) invalidate(e *entity) { e.absFrame, e.relFrame = -1, -1 }

// cached reports whether an encoding of e made at frame f (-1: since
// invalidated) is current. The encoding depends only on e's logic, display
// version and region: every change to those invalidates but the movement
// loop's step along a path, so an encoding of a moving entity is current
// only in the frame it was made, and one of an entity standing since
// until something changes. (The movement loop invalidates an entity it
// stops.)
func (w *World) cached(e *entity, f int) bool {
	return f == w.frame || (f >= 0 && e.mover < 0)
}

// vitalsBits returns the bits of e's vitals, from its absolute encoding,
// which must be current.
func (e *entity) vitalsBits() int { return int(e.absVit) - logicKindBits }

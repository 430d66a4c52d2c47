package interest

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest/internal/prefetch"
)

// Sender is how a world reaches its clients: the engine implements it over
// transport connections, a test over anything. msg is only valid during
// the call. A send may fail (a full queue, a closed connection); the world
// counts it and carries on.
type Sender interface {
	SendUnreliable(player ID, msg []byte) error
	SendReliable(player ID, msg []byte) error
}

// Drop reasons, counted in Stats.Dropped.
const (
	DropMalformed  = iota // the packet did not decode
	DropStale             // a command stamped before the movement history
	DropFuture            // a command stamped too far ahead of the world
	DropOffMap            // a position off the map
	DropMoveRange         // a destination too far from its source
	DropUnknown           // a request for an entity the world does not hold
	DropOutOfRange        // a request for an entity outside the client's range
	DropRate              // a discovery or display request over the client's rate
	DropAck               // an acknowledgement of a packet never sent
	DropSendFailed        // the Sender refused a packet
	numDrops
)

var dropNames = [numDrops]string{"malformed", "stale", "future", "off_map", "move_range",
	"unknown", "out_of_range", "rate", "ack", "send_failed"}

// DropName returns the name of a drop reason, for logs and metrics.
func DropName(reason int) string {
	if reason < 0 || reason >= numDrops {
		return "unknown"
	}
	return dropNames[reason]
}

// Stats counts what a world did since it was made.
type Stats struct {
	Frames        int   // frames run
	SkippedFrames int   // frames skipped because Tick was called too late
	Entities      int   // entities now
	Observers     int   // clients now
	PacketsOut    int64 // unreliable packets sent
	BytesOut      int64 // bytes of those packets
	ReliableOut   int64 // bytes sent on the reliable channel (display data)
	PacketsIn     int64 // uplink packets delivered
	BytesIn       int64
	Commands      int64 // commands broadcast
	Crossings     int64 // region borders crossed
	Enters        int64 // entity announcements to newly covering regions
	ForcedSyncs   int64 // entities sent by forced sync
	Echoes        int64 // entities of forced syncs, discovery answers and repairs sent again on a lossy link
	Discoveries   int64 // entities sent in answer to discovery
	StateSyncs    int64 // entities sent by state sync
	Repairs       int64 // entities resent because a packet about them was lost
	Leaves        int64 // explicit leave and repair-removal messages
	Corrections   int64 // corrections sent to clients
	Deferred      int64 // queued sends put off to a later frame by the byte budget
	Dropped       [numDrops]int64
}

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
	crossed  int32           // region it was in when it first crossed a border this frame, -1 if it did not

	// The third: the absolute encoding (announcements, discovery, repairs),
	// likewise, and what a state change touches.
	absFrame int // frame the cached absolute encoding was made, -1 if invalidated
	abs      bitString
	absBuf   [encInline]byte
	dirtyAt  int32 // index in World.dirty, -1 when clean
	absVit   uint8 // the bit where abs's vitals end; they start after its kind (writeLogic)

	obs *observer
	_   [56]byte // to entitySize, so that entities in a slab keep to cache lines
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

// msgBuf collects one frame's messages for a region: the encoded bits, where
// each message ends, and the entity each is about.
type msgBuf struct {
	w    codec.Writer
	buf  []byte
	ends []int32
	ids  []ID
}

func (m *msgBuf) reset() {
	m.buf = m.w.Bytes()[:0] // keep the grown buffer: no allocation per frame
	m.w.Reset(m.buf)
	m.ends, m.ids = m.ends[:0], m.ids[:0]
}

func (m *msgBuf) mark(id ID) {
	m.ends = append(m.ends, int32(m.w.Len()))
	m.ids = append(m.ids, id)
}

type region struct {
	ents    []ID
	obs     []*observer
	obsIDs  []ID     // obs's entities, in the same order: read without reading the observers
	bc      msgBuf   // commands of entities here, for every observer within range
	direct  msgBuf   // announcements for observers located here
	syncs   []ID     // entities here due for state sync this frame
	leavers []leaver // observers that left this region lately, oldest first
	waiting int32    // how many of obs wait for a forced sync (World.waiting)
}

// leaver is an observer that left a region, and the frame it did.
type leaver struct {
	o  *observer
	at int
}

// pending is a command waiting for the frame's flush, when it is encoded
// once into the region its entity is in by then.
type pending struct {
	id    ID
	reg   int32 // where the entity was when the command was given
	frame int
	c     command
	tag   int
}

// World is the server half of interest mode: a grid of regions holding
// entities, each client kept in sync with the 3x3 regions around its
// character. One goroutine owns a World: call its methods from it only.
type World struct {
	cfg   Config
	lay   layout
	out   Sender
	start time.Time
	frame int

	ids      int         // IDs handed out, plus one: entities 1 .. ids-1 are in the slabs (ent)
	slab     []entity    // entities allocated, not yet used
	disps    []dispCache // display data, by ID
	looks    map[Display]*look
	nextLook uint32
	dormant  []Display // shared looks left with no entity, once each (maxDormantLooks)
	free     []ID      // freed IDs, oldest first
	freeAt   int
	regions  []region
	movers   []*entity // the moving entities, each at its index mover
	slabs    []*entity // the first entity of each slab, for prefetchEntity
	dirty    []ID
	touched  []int32
	busy     []bool // by region: touched this frame (a dense copy, cheap to scan)
	city     []bool // by region: a city (a dense copy)
	periods  [8]int // state-sync periods in frames, by periodTarget|periodCombat|periodCity
	// Dense copies by ID of what scans over many entities read, so that a
	// scan reads a few cache lines rather than one per entity: the region
	// of each live entity (-1: none), and the frame of the last broadcast
	// carrying its position (seed m_nLastBroadcastFrame).
	where  []int32
	lastBc []int
	// lateFrames is how long a discovery takes: a broadcast this recent
	// may not yet have brought the client's request and its answer.
	lateFrames int
	// By ID: the entity's observer waits for some region's forced sync
	// (observer.open), so that a crossing passes over the observers
	// around it that wait for none without reading them.
	waiting []bool
	pend    []pending
	obs     []*observer
	cross   []ID // entities that crossed a border this frame

	w codec.Writer // entity encodings
	// The packet being built, for one observer at a time: a packet is
	// built and handed to the Sender (which does not keep it) in one
	// call, so one writer and buffer serve every observer and stay in
	// cache.
	pw    codec.Writer
	up    uplink // the uplink packet being handled, decoded
	pbuf  []byte
	stats Stats
}

// NewWorld makes a world that starts at frame 0 at start and sends through
// out.
func NewWorld(cfg Config, start time.Time, out Sender) (*World, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{cfg: cfg, lay: newLayout(cfg), out: out, start: start, lateFrames: cfg.frames(lateBroadcast)}
	w.regions = make([]region, cfg.Width*cfg.Height)
	w.busy = make([]bool, len(w.regions))
	w.city = make([]bool, len(w.regions))
	if cfg.City != nil {
		for i := range w.regions {
			w.city[i] = cfg.City(w.regionAt(int32(i)))
		}
	}
	for c := range w.periods {
		w.periods[c] = cfg.period(c&periodTarget != 0, c&periodCombat != 0, c&periodCity != 0)
	}
	w.ids = 1 // ID 0 is no entity
	w.where, w.lastBc, w.waiting = []int32{-1}, []int{0}, []bool{false}
	return w, nil
}

// Config returns the world's configuration, defaults filled in.
func (w *World) Config() Config { return w.cfg }

// Frame returns the number of the last frame run.
func (w *World) Frame() int { return w.frame }

// Stats returns the world's counters.
func (w *World) Stats() Stats {
	s := w.stats
	s.Entities = w.ids - 1 - (len(w.free) - w.freeAt)
	s.Observers = len(w.obs)
	return s
}

func (w *World) regionAt(i int32) Region { return Region{int(i) % w.cfg.Width, int(i) / w.cfg.Width} }

func (w *World) regionIndex(r Region) int32 { return int32(r.Y*w.cfg.Width + r.X) }

func (w *World) regionOfPos(p Vec) int32 { return w.regionIndex(w.lay.regionOf(p)) }

// around calls f for each region of the 3x3 range centred on r.
func (w *World) around(r int32, f func(int32)) {
	c := w.regionAt(r)
	for y := max(c.Y-1, 0); y <= min(c.Y+1, w.cfg.Height-1); y++ {
		for x := max(c.X-1, 0); x <= min(c.X+1, w.cfg.Width-1); x++ {
			f(int32(y*w.cfg.Width + x))
		}
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

func (w *World) get(id ID) *entity {
	if id == 0 || int(id) >= w.ids {
		return nil
	}
	if e := w.ent(id); e.alive {
		return e
	}
	return nil
}

// ent returns the storage of entity id, live or not, which must be 1 ..
// w.ids-1 (see entityAddr).
func (w *World) ent(id ID) *entity { return (*entity)(w.entityAddr(id)) }

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

// lookup returns the live entity id, or ErrUnknown.
func (w *World) lookup(id ID) (*entity, error) {
	if e := w.get(id); e != nil {
		return e, nil
	}
	return nil, fmt.Errorf("%w: %d", ErrUnknown, id)
}

// InRange reports whether entity id is within the 3x3 range of player's
// region: what the world may tell player's client about it.
func (w *World) InRange(player, id ID) bool {
	p, e := w.get(player), w.get(id)
	return p != nil && e != nil && near(w.regionAt(p.reg), w.regionAt(e.reg))
}

// Logic returns an entity's logic data as the world holds it now.
func (w *World) Logic(id ID) (Logic, bool) {
	if e := w.get(id); e != nil {
		return e.lg, true
	}
	return Logic{}, false
}

// Kind returns an entity's kind.
func (w *World) Kind(id ID) (Kind, bool) {
	if e := w.get(id); e != nil {
		return e.kind, true
	}
	return 0, false
}

// Each calls f for every entity in the 3x3 range of region r, the set a
// client there is kept in sync with.
func (w *World) Each(r Region, f func(id ID, kind Kind, lg *Logic)) {
	if r.X < 0 || r.Y < 0 || r.X >= w.cfg.Width || r.Y >= w.cfg.Height {
		return
	}
	w.around(w.regionIndex(r), func(ri int32) {
		for _, id := range w.regions[ri].ents {
			e := w.ent(id)
			f(id, e.kind, &e.lg)
		}
	})
}

// RegionOf returns the region holding position p.
func (w *World) RegionOf(p Vec) Region { return w.lay.regionOf(p) }

func (w *World) checkLogic(lg *Logic) error {
	if !w.lay.onMap(lg.Pos) || !w.lay.onMap(lg.Dest) {
		return fmt.Errorf("%w: %v -> %v", ErrOffMap, lg.Pos, lg.Dest)
	}
	if lg.Speed < 0 || lg.Speed > int32(w.cfg.MaxSpeed) || lg.State > 31 || lg.Life > 100 || lg.Mana > 100 || lg.Rage > 100 ||
		(w.cfg.MagicBits < 32 && lg.Magic>>w.cfg.MagicBits != 0) {
		return fmt.Errorf("%w: logic field out of range: %+v", ErrConfig, *lg)
	}
	if d := int64(w.cfg.MaxMove); lg.Pos.DistSq(lg.Dest) > 2*d*d {
		return fmt.Errorf("%w: destination %v too far from %v", ErrConfig, lg.Dest, lg.Pos)
	}
	return nil
}

// Spawn adds an entity and announces it to every client in range. An
// entity with Speed 0 stands at Pos whatever Dest says.
func (w *World) Spawn(kind Kind, lg Logic, d Display) (ID, error) {
	if kind >= numKinds {
		return 0, fmt.Errorf("%w: kind %d", ErrConfig, kind)
	}
	if lg.Speed == 0 {
		lg.Dest = lg.Pos // standing: Dest is not needed
	}
	if err := w.checkLogic(&lg); err != nil {
		return 0, err
	}
	if len(d.Name) > MaxName {
		return 0, fmt.Errorf("%w: name over %d bytes", ErrConfig, MaxName)
	}
	var e *entity
	switch {
	case w.freeAt < len(w.free):
		id := w.free[w.freeAt]
		w.freeAt++
		if w.freeAt == len(w.free) {
			w.free, w.freeAt = w.free[:0], 0
		}
		e = w.ent(id)
		*e = entity{id: id, dver: e.dver + 1, abs: e.abs, rel: e.rel}
	case w.ids < w.cfg.MaxEntities:
		if len(w.slab) == 0 {
			w.slab = make([]entity, entitySlab)
			w.slabs = append(w.slabs, &w.slab[0])
		}
		e = &w.slab[0]
		w.slab = w.slab[1:]
		e.id = ID(w.ids)
		w.ids++
		e.rel.b, e.abs.b = e.relBuf[:0], e.absBuf[:0]
		w.where, w.lastBc, w.waiting = append(w.where, -1), append(w.lastBc, 0), append(w.waiting, false)
	default:
		return 0, ErrFull
	}
	e.kind, e.lg, e.alive = kind, lg, true
	w.setDisplay(e.id, d)
	e.mover, e.dirtyAt, e.absFrame, e.relFrame, e.crossed = -1, -1, -1, -1, -1
	w.lastBc[e.id], e.lastSyn = w.frame, w.frame
	w.setRegion(e, w.regionOfPos(lg.Pos))
	w.addTo(e, e.reg)
	if lg.Moving() {
		w.startMoving(e)
	}
	w.announce(e, -1, e.reg)
	return e.id, nil
}

// Despawn removes an entity; clients in range are told.
func (w *World) Despawn(id ID) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	if e.obs != nil {
		w.Leave(id)
	}
	w.pend = append(w.pend, pending{id: id, reg: e.reg, tag: tagRemove, frame: w.frame})
	w.removeFrom(e, e.reg)
	w.stopMoving(e)
	w.clean(e)
	w.dropLook(w.dispEnc(id))
	e.alive = false
	w.where[id] = -1
	w.free = append(w.free, id)
	return nil
}

func (w *World) addTo(e *entity, r int32) {
	reg := &w.regions[r]
	e.slot = int32(len(reg.ents))
	reg.ents = append(reg.ents, e.id)
}

func (w *World) removeFrom(e *entity, r int32) {
	reg := &w.regions[r]
	last := reg.ents[len(reg.ents)-1]
	reg.ents[e.slot] = last
	w.ent(last).slot = e.slot
	reg.ents = reg.ents[:len(reg.ents)-1]
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

func (w *World) touch(ri int32) {
	if !w.busy[ri] {
		w.busy[ri] = true
		w.touched = append(w.touched, ri)
	}
}

// writeLogicMsg writes a logic message for e, whose absolute encoding is
// current.
func (w *World) writeLogicMsg(wr *codec.Writer, e *entity) {
	writeTag(wr, tagLogic)
	w.lay.writeID(wr, e.id)
	wr.WriteBitString(e.abs.b, e.abs.n)
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

// vitalsBits returns the bits of e's vitals, from its absolute encoding,
// which must be current.
func (e *entity) vitalsBits() int { return int(e.absVit) - logicKindBits }

// writeRemoveMsg writes a removal of id.
func (w *World) writeRemoveMsg(wr *codec.Writer, id ID) {
	writeTag(wr, tagRemove)
	w.lay.writeID(wr, id)
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
	e.abs.n, e.abs.b = w.w.Len(), w.w.Bytes()
}

// dispCache is an entity's display data and its look, kept beside the
// entities, not in them, to keep what every frame's loops read small.
type dispCache struct {
	d    Display
	lk   *look
	look uint32 // lk.id, read here to prefetch a connection's dictionary slot before lk arrives
}

// look is a distinct Display in the world, shared by every entity that
// looks the same (every wolf of a template): connections' look
// dictionaries refer to it by id.
type look struct {
	id     uint32
	refs   int  // entities with this look now
	shared bool // two entities or more have had it at once: connections keep it
	listed bool // on World.dormant; dormant (shared, with no entity) while refs is 0
}

// maxDormantLooks bounds the shared looks the world remembers with no
// entity left (a pack all killed, to rise again): they keep their ids,
// which the connections' dictionaries hold. Past the bound, all of them
// are forgotten at once.
const maxDormantLooks = 4096

// dispEnc returns the display cache of entity id.
func (w *World) dispEnc(id ID) *dispCache {
	for int(id) >= len(w.disps) {
		w.disps = append(w.disps, dispCache{})
	}
	return &w.disps[id]
}

// setDisplay gives entity id display d, counting its look's users. The
// new look is taken before the old one is let go, so that a purge the
// letting go sets off keeps it; an entity given the display it has keeps
// its look as it is.
func (w *World) setDisplay(id ID, d Display) {
	dc := w.dispEnc(id)
	if dc.lk != nil && dc.d == d {
		return
	}
	lk := w.looks[d]
	if lk == nil {
		if w.looks == nil {
			w.looks = make(map[Display]*look)
		}
		w.nextLook++
		lk = &look{id: w.nextLook}
		w.looks[d] = lk
	}
	if lk.refs++; lk.refs > 1 {
		lk.shared = true
	}
	// A dormant look taken again stays on World.dormant until the next
	// purge, which keeps it: it has an entity.
	w.dropLook(dc)
	dc.d, dc.lk, dc.look = d, lk, lk.id
}

// dropLook releases an entity's look. A look no entity has any more is
// forgotten, unless it was shared: that one stays, dormant, so that its
// entities coming back (a respawn) keep the id the connections hold.
func (w *World) dropLook(dc *dispCache) {
	if dc.lk == nil {
		return
	}
	lk := dc.lk
	if lk.refs--; lk.refs == 0 {
		if !lk.shared {
			delete(w.looks, dc.d)
		} else if !lk.listed {
			lk.listed = true
			if w.dormant = append(w.dormant, dc.d); len(w.dormant) > maxDormantLooks {
				w.purgeDormant()
			}
		}
	}
	dc.lk = nil
}

// purgeDormant forgets the dormant looks: those on World.dormant with no
// entity. It also names the looks that have had entities again since they
// were listed, which stay.
func (w *World) purgeDormant() {
	for _, d := range w.dormant {
		lk := w.looks[d]
		if lk.listed = false; lk.refs == 0 {
			delete(w.looks, d)
		}
	}
	clear(w.dormant)
	w.dormant = w.dormant[:0]
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

// Move sends an entity toward dest at speed units per frame, starting now,
// and broadcasts the move to every client in range. It is how the game
// moves NPCs (and players, for knock-backs).
func (w *World) Move(id ID, dest Vec, speed int32) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	lg := e.lg
	lg.Dest, lg.Speed = dest, speed
	if err := w.checkLogic(&lg); err != nil {
		return err
	}
	w.setPath(e, e.lg.Pos, dest, speed, w.frame)
	w.moved(e)
	return nil
}

// Place puts an entity at pos, standing (a teleport, a respawn), and
// broadcasts it.
func (w *World) Place(id ID, pos Vec) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	if !w.lay.onMap(pos) {
		return fmt.Errorf("%w: %v", ErrOffMap, pos)
	}
	w.setPath(e, pos, pos, 0, w.frame)
	w.reregion(e)
	w.moved(e)
	return nil
}

// moved tells a player's client that the game moved its entity: its
// history takes the new path from now, and the client adopts it.
func (w *World) moved(e *entity) {
	if e.obs != nil {
		e.obs.rewriteFrom(w, w.frame, e.lg.Pos, e.lg.Dest, e.lg.Speed)
		e.obs.push(w)
	}
}

// setPath starts e on a path from src at frame f, steps it to the world's
// frame and queues the broadcast.
func (w *World) setPath(e *entity, src, dest Vec, speed int32, f int) {
	e.lg.Pos, e.lg.Dest, e.lg.Speed = src, dest, speed
	w.pend = append(w.pend, pending{id: e.id, tag: tagMove, frame: f, reg: e.reg,
		c: command{src: src, dest: dest, speed: speed}})
	e.lg.Pos = StepN(src, dest, speed, max(w.frame-f, 0))
	e.start = f // a move stamped ahead of the world waits at its source
	if e.lg.Moving() {
		w.startMoving(e)
	} else {
		w.stopMoving(e)
	}
	w.invalidate(e)
}

// Jump broadcasts a jump by an entity.
func (w *World) Jump(id ID) error { return w.act(id, pending{tag: tagJump}) }

// Skill broadcasts an entity's use of a skill, with an optional target.
func (w *World) Skill(id ID, skill uint16, target ID) error {
	if target != 0 && w.get(target) == nil {
		return fmt.Errorf("%w: target %d", ErrUnknown, target)
	}
	return w.act(id, pending{tag: tagSkill, c: command{skill: skill, target: target}})
}

// Custom broadcasts a game-defined command: a tag and up to MaxCustom bytes
// the engine does not read.
func (w *World) Custom(id ID, tag uint8, data []byte) error {
	if len(data) > w.cfg.MaxCustom {
		return fmt.Errorf("%w: custom payload of %d bytes", ErrConfig, len(data))
	}
	return w.act(id, pending{tag: tagCustom, c: command{ctag: tag, data: append([]byte(nil), data...)}})
}

func (w *World) act(id ID, p pending) error {
	if _, err := w.lookup(id); err != nil {
		return err
	}
	p.id, p.frame = id, w.frame
	w.pend = append(w.pend, p)
	return nil
}

// Update changes an entity's logic data other than its movement (life,
// mana, rage, state, combat, magic): f gets a copy; Pos, Dest and Speed
// changes are ignored (use Move and Place). Clients learn the change by
// state sync, at the policy's rate.
func (w *World) Update(id ID, f func(lg *Logic)) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	lg := e.lg
	f(&lg)
	lg.Pos, lg.Dest, lg.Speed = e.lg.Pos, e.lg.Dest, e.lg.Speed
	if err := w.checkLogic(&lg); err != nil {
		return err
	}
	if lg != e.lg {
		e.lg = lg
		w.invalidate(e)
		w.markDirty(e)
	}
	return nil
}

// SetDisplay changes an entity's display data; clients fetch the new
// version when they next hear of the entity.
func (w *World) SetDisplay(id ID, d Display) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	if len(d.Name) > MaxName {
		return fmt.Errorf("%w: name over %d bytes", ErrConfig, MaxName)
	}
	w.setDisplay(e.id, d)
	e.dver++
	w.invalidate(e)
	w.markDirty(e)
	return nil
}

// SetTarget records player's current target, which the policy may sync
// more often to that player.
func (w *World) SetTarget(player, target ID) error {
	e := w.get(player)
	if e == nil || e.obs == nil {
		return fmt.Errorf("%w: %d", ErrNotObserver, player)
	}
	e.obs.target = target
	return nil
}

// reregion moves e to the region of its position, recording a crossing.
func (w *World) reregion(e *entity) {
	r := w.regionOfPos(e.lg.Pos)
	if r == e.reg {
		return
	}
	if e.crossed < 0 {
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
	for _, ri := range w.touched {
		reg := &w.regions[ri]
		reg.bc.reset()
		reg.direct.reset()
		reg.syncs = reg.syncs[:0]
		w.busy[ri] = false
	}
	w.touched = w.touched[:0]
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
		if e == nil || e.crossed < 0 {
			continue
		}
		if e.crossed != e.reg {
			w.stats.Crossings++
			w.announce(e, e.crossed, e.reg)
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
		e.crossed = -1
	}
	w.cross = w.cross[:0]
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
	window := 2 * w.cfg.frames(removeGrace)
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

// left records that observer o left region from, forgetting the region's
// leavers older than missed looks.
func (w *World) left(o *observer, from int32) {
	reg := &w.regions[from]
	window := 2 * w.cfg.frames(removeGrace)
	n := 0
	for n < len(reg.leavers) && w.frame-reg.leavers[n].at > window {
		n++
	}
	if n > 0 {
		reg.leavers = append(reg.leavers[:0], reg.leavers[n:]...)
	}
	reg.leavers = append(reg.leavers, leaver{o: o, at: w.frame})
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

func (w *World) hasObservers(r int32) bool {
	found := false
	w.around(r, func(ri int32) { found = found || len(w.regions[ri].obs) > 0 })
	return found
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
			w.lay.writePos(&m.w, p.c.src)
			w.lay.writePath(&m.w, p.c.src, p.c.dest, p.c.speed)
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

// Join attaches a client to an entity (usually a Player): from now on the
// world sends it packets through the Sender under the entity's ID, and
// accepts its uplink through Deliver.
func (w *World) Join(id ID) error {
	e, err := w.lookup(id)
	if err != nil {
		return err
	}
	if e.obs != nil {
		return nil
	}
	o := newObserver(w, e)
	e.obs = o
	w.obs = append(w.obs, o)
	w.addObserver(o, e.reg)
	return nil
}

// Leave detaches the client from an entity; the entity stays.
func (w *World) Leave(id ID) {
	e := w.get(id)
	if e == nil || e.obs == nil {
		return
	}
	w.dropObserver(e.obs, e.reg)
	for i, o := range w.obs {
		if o == e.obs {
			w.obs = append(w.obs[:i], w.obs[i+1:]...)
			break
		}
	}
	e.obs = nil
	w.waiting[id] = false
}

// addObserver lists o in region r, where its entity now is.
func (w *World) addObserver(o *observer, r int32) {
	reg := &w.regions[r]
	reg.obs = append(reg.obs, o)
	reg.obsIDs = append(reg.obsIDs, o.id)
	o.listed = r
	if w.waiting[o.id] {
		reg.waiting++
	}
}

// dropObserver takes o off region r's list.
func (w *World) dropObserver(o *observer, r int32) {
	reg := &w.regions[r]
	o.listed = -1
	if w.waiting[o.id] {
		reg.waiting--
	}
	for i, x := range reg.obs {
		if x == o {
			last := len(reg.obs) - 1
			reg.obs[i], reg.obsIDs[i] = reg.obs[last], reg.obsIDs[last]
			reg.obs, reg.obsIDs = reg.obs[:last], reg.obsIDs[:last]
			return
		}
	}
}

func (w *World) moveObserver(o *observer, from, to int32) {
	w.dropObserver(o, from)
	w.addObserver(o, to)
	w.left(o, from)
	o.crossed(w, from, to)
}

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

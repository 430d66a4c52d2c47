package interest

import (
	"time"

	"github.com/tongbu/tongbu/codec"
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
	DropSpeed             // a move faster than the player's speed limit at its frame
	numDrops
)

var dropNames = [numDrops]string{"malformed", "stale", "future", "off_map", "move_range",
	"unknown", "out_of_range", "rate", "ack", "send_failed", "speed"}

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
	Rewinds       int64 // actions whose view was before their stamp (lag compensation)
	RewindLimited int64 // actions whose view Config.MaxRewind moved later
	GroupChanges  int64 // field group changes sent (to every client in range: once each)
	GroupBits     int64 // bits of group records written, in the display messages (ReliableOut)
	Dropped       [numDrops]int64
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
	// past, by ID: the entity's recent paths, for lag compensation
	// (PositionAt).
	past []pathLog
	// rewindFrames is Config.MaxRewind in frames; turnFrames turnWithin.
	rewindFrames, turnFrames int
	// lastCross, by ID: the entity's last two region crossings, for the
	// clients whose range it left (leftBehind).
	lastCross [][2]crossRec
	// ghost, by ID: the entity mirrors another cell's (Border); ghosts
	// records through which border, for the ghosts.
	ghost   []bool
	ghosts  map[ID]*ghostOf
	carried map[ID]*carried // handed-over players' command state, until their clients join
	orphans int             // ghosts whose owner handed them to a third cell (Border)
	// lateFrames is how long a discovery takes: a broadcast this recent
	// may not yet have brought the client's request and its answer.
	lateFrames int
	// Frame counts of the configuration's durations, which every border
	// crossing reads: Config.ForcedSync, Config.Lead, and how long a
	// region remembers the observers that left it (twice removeGrace:
	// missed).
	forcedFrames, leadFrames, leaverFrames int
	// By ID: the entity's observer waits for some region's forced sync
	// (observer.open), so that a crossing passes over the observers
	// around it that wait for none without reading them.
	waiting  []bool
	pend     []pending
	onAction func(Action) // World.OnAction
	actions  []Action     // the packet's, for onAction after it
	obs      []*observer
	cross    []ID // entities that crossed a border this frame
	// Field groups (Config.Groups): each entity's values, by ID (nil: none
	// set), each group's Every in frames, the changes due by frame, and
	// the observers with records to send this frame.
	fields     []*fieldSet
	groupEvery []int
	groupDue   map[int][]gkey
	groupSpare []gkey // a due bucket emptied, for the next one made
	groupObs   []*observer
	gpush      msgBuf // the frame's pushed group records, one an entity

	w codec.Writer // entity encodings
	// The packet being built, for one observer at a time: a packet is
	// built and handed to the Sender (which does not keep it) in one
	// call, so one writer and buffer serve every observer and stay in
	// cache.
	pw    codec.Writer
	up    uplink // the uplink packet being handled, decoded
	pbuf  []byte
	mw    codec.Writer // a repair's move (repairTurn)
	mbuf  []byte
	stats Stats
}

// NewWorld makes a world that starts at frame 0 at start and sends through
// out.
func NewWorld(cfg Config, start time.Time, out Sender) (*World, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	w := &World{cfg: cfg, lay: newLayout(cfg), out: out, start: start, lateFrames: cfg.frames(lateBroadcast),
		forcedFrames: cfg.frames(cfg.ForcedSync), leadFrames: cfg.frames(cfg.Lead), leaverFrames: 2 * cfg.frames(removeGrace),
		rewindFrames: cfg.frames(cfg.MaxRewind), turnFrames: cfg.frames(turnWithin)}
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
	w.where, w.lastBc, w.waiting, w.ghost = []int32{-1}, []int{0}, []bool{false}, []bool{false}
	w.past = []pathLog{{}}
	w.lastCross = [][2]crossRec{noCross}
	w.fields = []*fieldSet{nil}
	w.groupDue = map[int][]gkey{}
	for _, g := range cfg.Groups {
		w.groupEvery = append(w.groupEvery, max(1, cfg.frames(g.Every)))
	}
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

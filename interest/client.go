package interest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// ErrNotReady is returned by a Client's commands before it knows where its
// own entity is (before the world's first packets arrive).
var ErrNotReady = errors.New("interest: client not in sync yet")

// ErrBacklog is returned by a Client's commands when too many await the
// world's acknowledgement: the uplink is down.
var ErrBacklog = errors.New("interest: too many unacknowledged commands")

// View is what a client knows of an entity.
type View struct {
	Kind  Kind
	Logic Logic // Pos extrapolated to the client's frame
	// Display is the entity's display data, once fetched (HasDisplay).
	Display    Display
	HasDisplay bool
}

// Event is a command a client heard: a jump, a skill or a game-defined
// command of an entity in range, stamped with its frame.
type Event struct {
	Tag    EventTag
	ID     ID
	Frame  int
	Skill  uint16
	Target ID
	Custom uint8
	Data   []byte
}

// EventTag says what an Event is.
type EventTag uint8

// Event tags.
const (
	EventJump EventTag = iota + 1
	EventSkill
	EventCustom
)

// ClientStats counts what a client saw.
type ClientStats struct {
	PacketsIn    int64
	BytesIn      int64
	PacketsOut   int64
	BytesOut     int64
	Malformed    int64 // packets that did not decode
	Corrections  int64 // corrections of its own entity
	Discovered   int64 // entities learned by discovery requests
	Requests     int64 // discovery requests sent
	Removed      int64 // entities dropped by the removal rules or a leave
	LostPackets  int64 // downlink packets never received (gaps in sequence)
	EventsMissed int64 // events dropped because the game did not drain them
	Replays      int64 // moves sent again on top of a correction (Client reconciles)
	GroupRecords int64 // field group values heard (Config.Groups)
	// MovesUnresolved counts moves that went on from a path this client
	// did not hold (it missed the move before, under loss): each asks the
	// world for the entity instead.
	MovesUnresolved int64
}

type known struct {
	kind Kind
	lg   Logic
	dver uint8
	doom int // frames since it was found outside the range; 0: not doomed
	// active: in Client.active, checked every frame (moving, doomed, or
	// just heard of); the others stand in range and wait for the player
	// to change region.
	active bool
	tr     *track // its paths, once the game renders (Render)
	// last is the path of its last move or logic heard, from its frame,
	// and ep that move's number: what a move that goes on from it needs
	// (Client.resolve). Not lastOK: none heard from this world.
	last   pathSeg
	ep     uint8
	lastOK bool
}

type activeEntry struct {
	id ID
	k  *known // stale once c.ents[id] is another (the ID was dropped and reused)
}

// cachedDisplay is a display entry and the client frame it was last
// wanted, for eviction.
type cachedDisplay struct {
	displayEntry
	used int
}

type ask struct {
	at     time.Time
	tries  int
	echoed bool // this try was sent again (a discovery request on a lossy link)
}

const (
	maxEvents  = 1024
	retryAfter = 500 * time.Millisecond
	maxTries   = 4
	ackEvery   = 8 // frames between acknowledgements when nothing else is sent
	// fastAckPackets is how many packets after a gap are acknowledged at
	// once: enough for the world to count three newer ones (its reorder
	// allowance) and declare the missing one lost.
	fastAckPackets = 4
	dispEvery      = 4 // frames between display requests when nothing else is sent
	removeGrace    = 500 * time.Millisecond
	// catchUpGraces is how many removal graces' worth of frames a client
	// steps one by one before it catches up in bulk (Client.stepTo): 4 s,
	// 64 frames at 16 Hz. Jitter and late ticks are stepped exactly, frame
	// by frame; a longer gap means the client stalled (a background tab)
	// or was sent a hostile frame, and the world's forced sync and state
	// sync correct it within seconds anyway. It must be at least 2, so
	// that the gap outlasts the grace of whatever was doomed before it
	// (catchUp relies on it) and a client lagging by about a grace, where
	// what the grace keeps matters, is stepped exactly.
	catchUpGraces = 8
	maxDisplays   = 4096 // display entries cached before the least recently wanted are dropped
)

// Client is the player's half of interest mode, native or in the browser:
// it applies the world's commands and logic, extrapolates moves frame by
// frame with the world's own integer rule, asks for entities it hears of
// but does not know (discovery) and for display data it has not cached,
// drops entities that leave its 3x3 range,
// sends the player's own commands stamped with their frame, and adopts the
// world's corrections.
//
// The game calls Deliver for every packet, Advance once per render tick,
// and Packet to get the uplink to send.
type Client struct {
	lay  layout
	self ID

	synced bool
	base   int // newest header frame
	baseAt time.Time
	frame  int
	me     Logic
	meKind Kind
	haveMe bool
	region Region // the player's region, as of the last frame

	ents     map[ID]*known
	msg      downMsg // a downlink message being decoded (decodeDown)
	active   []activeEntry
	full     bool // the next frame checks every entity, not only the active ones
	displays map[ID]cachedDisplay
	names    names     // the connection's name dictionary
	looks    []Display // the connection's look dictionary
	discover map[ID]ask
	wantDisp map[ID]ask
	events   []Event
	// Field groups (Config.Groups): the values heard, by entity and
	// group (an entity is in groups once its groups were fetched), the
	// requests of Client.RequestGroup, and a display message's records.
	groups  map[ID][][]int64
	wantGrp map[gkey]ask
	grecs   []groupRec

	nextCmd  uint16
	firstCmd uint16
	unacked  []command

	recvSeq  int
	recvMask uint32
	haveRecv bool
	ackDue   bool
	lastAck  int
	fastAcks int // acknowledgements still to send at once after a gap
	lossy    int // frame until which the link counts as lossy: discovery requests are echoed
	lastDisp int // frame of the last display request

	rd       renderer
	rdHeard  bool       // the packet being applied has told the renderer its frame
	corr     correction // heard in the packet being applied
	noReplay bool       // SetReplay(false)

	up    uplink
	w     codec.Writer
	buf   []byte
	stats ClientStats
}

// NewClient returns the client half for player self in a world of the
// given configuration (the same Config the world was made with).
func NewClient(cfg Config, self ID) (*Client, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if self == 0 || int(self) >= cfg.MaxEntities {
		return nil, fmt.Errorf("%w: player id %d", ErrConfig, self)
	}
	c := &Client{
		lay: newLayout(cfg), self: self,
		ents: make(map[ID]*known), displays: make(map[ID]cachedDisplay),
		discover: make(map[ID]ask), wantDisp: make(map[ID]ask),
		groups: make(map[ID][][]int64), wantGrp: make(map[gkey]ask),
	}
	c.rd.init(c.lay.cfg)
	return c, nil
}

// Frame returns the client's estimate of the world's frame.
func (c *Client) Frame() int { return c.frame }

// Config returns the world's configuration as the client holds it: the
// part the world's clients get (an engine client's, from the welcome:
// the map, the rates and bounds, the field groups), defaults elsewhere.
func (c *Client) Config() Config { return c.lay.cfg }

// ID returns the player's own entity's ID.
func (c *Client) ID() ID { return c.self }

// Self returns the player's own entity as the client predicts it.
func (c *Client) Self() (Logic, bool) { return c.me, c.haveMe }

// Len returns how many other entities the client knows.
func (c *Client) Len() int { return len(c.ents) }

// Entity returns what the client knows of an entity.
func (c *Client) Entity(id ID) (View, bool) {
	k, ok := c.ents[id]
	if !ok {
		return View{}, false
	}
	v := View{Kind: k.kind, Logic: k.lg}
	if d, ok := c.displays[id]; ok && d.ver == k.dver {
		v.Display, v.HasDisplay = d.d, true
	}
	return v, true
}

// Each calls f for every entity the client knows, in no particular order.
func (c *Client) Each(f func(id ID, v View)) {
	for id := range c.ents {
		v, _ := c.Entity(id)
		f(id, v)
	}
}

// Known appends the IDs of every entity the client knows to dst, sorted.
func (c *Client) Known(dst []ID) []ID {
	for id := range c.ents {
		dst = append(dst, id)
	}
	slices.Sort(dst)
	return dst
}

// Events returns the commands heard since the last call and forgets them.
func (c *Client) Events() []Event {
	ev := c.events
	c.events = nil
	return ev
}

// Stats returns the client's counters.
func (c *Client) Stats() ClientStats { return c.stats }

// Advance moves the client's clock to now: entities step along their
// paths frame by frame (in bulk after a long pause, see stepTo), and
// entities outside the 3x3 range are dropped.
func (c *Client) Advance(now time.Time) {
	if !c.synced {
		return
	}
	c.stepTo(c.base + int(now.Sub(c.baseAt)/c.lay.cfg.Period()))
}

// stepTo steps every entity to frame target and applies the removal
// rules: an entity found outside the 3x3 range
// around the player's own region, because the player moved or because the
// entity did, is doomed, and dropped removeGrace later unless the world
// speaks of it again or the player's own move brings it back in range.
// The grace keeps what the world sent while its view of the player runs a
// few frames ahead of the client's; coming back in range along its own
// path does not save a doomed entity, since the world may have moved it
// elsewhere with a command the client, out of range, never heard.
//
// A jump of more than catchUpGraces graces (a stalled client, or a hostile
// header's frame) is caught up in bulk, at a cost in entities rather than
// frames x entities: what was doomed before the gap is dropped, the
// player and every other entity go straight to the frame before target
// (StepN), and the last frame is stepped as usual, checking every entity:
// what is out of range at the gap's end is doomed then, and dropped a
// grace later. Two approximations: an entity doomed before the gap is
// dropped even if the player's move brought it back in range within its
// grace, and one that leaves the range and comes back within the gap is
// kept; both are what the world's forced sync and state sync correct
// after a gap.
func (c *Client) stepTo(target int) {
	grace := graceFrames(c.lay.cfg)
	if skip := target - 1 - c.frame; skip >= catchUpGraces*grace {
		c.catchUp(skip)
	}
	for ; c.frame < target; c.frame++ {
		if c.haveMe {
			c.me.Pos = Step(c.me.Pos, c.me.Dest, c.me.Speed)
		} else {
			c.full = true // the first frame that knows where the player is checks everything
		}
		me := c.lay.regionOf(c.me.Pos)
		moved := me != c.region
		c.region = me
		if c.haveMe && (moved || c.full) {
			c.full = false
			c.active = c.active[:0]
			for id, k := range c.ents {
				if k.active = c.check(id, k, me, moved, grace); k.active {
					c.active = append(c.active, activeEntry{id, k})
				}
			}
			continue
		}
		keep := c.active[:0]
		for _, a := range c.active {
			if c.ents[a.id] != a.k {
				continue // dropped
			}
			if c.check(a.id, a.k, me, false, grace) {
				keep = append(keep, a)
			} else {
				a.k.active = false
			}
		}
		clear(c.active[len(keep):])
		c.active = keep
	}
}

// graceFrames is removeGrace in frames, at least one.
func graceFrames(cfg Config) int { return max(1, int(removeGrace/cfg.Period())) }

// catchUp drops the doomed entities, whose grace the gap outlasts, and
// steps the player and every other entity skip frames at once, for
// stepTo, leaving the next frame to check every entity. The player's
// region is left as it was before the gap, so that the next frame sees the
// player's move across it.
func (c *Client) catchUp(skip int) {
	if c.haveMe {
		c.me.Pos = StepN(c.me.Pos, c.me.Dest, c.me.Speed, skip)
	}
	for id, k := range c.ents {
		if k.doom > 0 {
			c.forget(id)
			continue
		}
		k.lg.Pos = StepN(k.lg.Pos, k.lg.Dest, k.lg.Speed, skip)
	}
	c.frame += skip
	c.full = true
}

// check steps one entity a frame and applies the removal rules; it
// reports whether the entity must be checked again next frame.
func (c *Client) check(id ID, k *known, me Region, moved bool, grace int) bool {
	k.lg.Pos = Step(k.lg.Pos, k.lg.Dest, k.lg.Speed)
	if !c.haveMe {
		return k.lg.Moving()
	}
	in := near(me, c.lay.regionOf(k.lg.Pos))
	switch {
	case moved && in:
		k.doom = 0
	case !in && k.doom == 0:
		k.doom = 1
	}
	if k.doom > 0 {
		if k.doom++; k.doom > grace {
			c.forget(id)
			return false
		}
		return true
	}
	return k.lg.Moving()
}

// forget drops an entity that left the range, and any request for its
// display data: the world answers only for entities in range.
func (c *Client) forget(id ID) {
	if k := c.ents[id]; k != nil && k.tr != nil {
		c.rd.spare = append(c.rd.spare, k.tr)
		k.tr = nil
	}
	delete(c.ents, id)
	delete(c.wantDisp, id)
	delete(c.groups, id) // not pushed out of range: fetched again on its return
	c.stats.Removed++
}

// activate puts an entity the world just spoke of on the list checked
// every frame.
func (c *Client) activate(id ID, k *known) {
	if !k.active {
		k.active = true
		c.active = append(c.active, activeEntry{id, k})
	}
}

func (c *Client) inRange(p Vec) bool {
	return !c.haveMe || near(c.lay.regionOf(c.me.Pos), c.lay.regionOf(p))
}

func (c *Client) acked(seq uint16) {
	// The world sends the low 8 bits: the client has at most
	// maxUpCommands unacknowledged.
	n := int(int8(uint8(seq) - uint8(c.firstCmd) + 1))
	if n <= 0 || n > len(c.unacked) {
		return
	}
	c.unacked = c.unacked[n:]
	c.firstCmd += uint16(n)
}

func (c *Client) queue(cmd command) error {
	if !c.haveMe {
		return ErrNotReady
	}
	if len(c.unacked) >= maxUpCommands {
		return ErrBacklog
	}
	if len(c.unacked) == 0 {
		c.firstCmd = c.nextCmd
	}
	cmd.frame = c.frame
	if cmd.tag != cmdMove && cmd.view == 0 && c.rd.on {
		// What the player saw: the frame others were drawn at.
		cmd.view = int(math.Round((float64(c.frame) - c.rd.drawnAt) * viewSteps))
	}
	cmd.view = max(0, min(cmd.view, maxViewBack))
	c.unacked = append(c.unacked, cmd)
	c.nextCmd++
	return nil
}

// Move starts the player toward dest at speed units per frame, at once on
// the client (a move is never held back for the server), and
// tells the world, which validates it.
func (c *Client) Move(dest Vec, speed int32) error {
	if !c.lay.onMap(dest) {
		return fmt.Errorf("%w: %v", ErrOffMap, dest)
	}
	if err := c.queue(command{tag: cmdMove, src: c.me.Pos, dest: dest, speed: speed}); err != nil {
		return err
	}
	c.me.Dest, c.me.Speed = dest, speed
	c.rd.selfT.set(pathSeg{c.frame, c.me.Pos, dest, speed, 0})
	return nil
}

// Jump sends a jump.
func (c *Client) Jump() error { return c.queue(command{tag: cmdJump}) }

// Skill sends the use of a skill, with an optional target.
func (c *Client) Skill(skill uint16, target ID) error {
	return c.queue(command{tag: cmdSkill, skill: skill, target: target})
}

// Custom sends a game-defined command.
func (c *Client) Custom(tag uint8, data []byte) error {
	if len(data) > c.lay.cfg.MaxCustom {
		return fmt.Errorf("%w: custom payload of %d bytes", ErrConfig, len(data))
	}
	return c.queue(command{tag: cmdCustom, ctag: tag, data: append([]byte(nil), data...)})
}

// Packet returns the uplink packet to send now, or nil when there is
// nothing to say: unacknowledged commands, discovery and display
// requests, and the acknowledgement of what arrived. The slice is valid
// until the next call.
func (c *Client) Packet(now time.Time) []byte {
	u := &c.up
	u.discover = pick(u.discover[:0], c.discover, now, maxUpDiscover, c.frame < c.lossy, &c.stats.Requests)
	u.cmds, u.firstSeq = c.unacked, c.firstCmd
	// Display requests can wait a little (the entity shows at once, its
	// name a few frames later): they ride with anything else, or go on
	// their own every dispEvery frames, in fewer, fuller batches.
	u.display = u.display[:0]
	if len(u.cmds) > 0 || len(u.discover) > 0 || c.frame-c.lastDisp >= dispEvery || len(c.wantDisp) >= maxUpDisplay {
		u.display = pick(u.display, c.wantDisp, now, maxUpDisplay, false, nil)
		if len(u.display) > 0 {
			c.lastDisp = c.frame
		}
	}
	u.groups = u.groups[:0]
	if len(c.wantGrp) > 0 {
		u.groups = c.pickGroups(u.groups, now)
	}
	ack := c.ackDue && (len(u.cmds) > 0 || len(u.discover) > 0 || len(u.display) > 0 || len(u.groups) > 0 || c.fastAcks > 0 || c.frame-c.lastAck >= ackEvery)
	if !ack && len(u.cmds) == 0 && len(u.discover) == 0 && len(u.display) == 0 && len(u.groups) == 0 {
		return nil
	}
	u.hasAck = c.haveRecv
	u.ackSeq, u.ackMask = c.recvSeq&seqMask, c.recvMask
	if ack {
		c.ackDue, c.lastAck = false, c.frame
		c.fastAcks = max(c.fastAcks-1, 0)
	}
	c.w.Reset(c.buf[:0])
	u.encode(&c.lay, &c.w)
	c.buf = c.w.Bytes()
	c.stats.PacketsOut++
	c.stats.BytesOut += int64(len(c.buf))
	return c.buf
}

// pick takes up to n IDs due for (re)asking, lowest first, and gives up
// on IDs asked too often. With echo (a lossy link), an ask is sent again
// the next time too: a lost request costs a frame, not retryAfter.
func pick(dst []uint32, m map[ID]ask, now time.Time, n int, echo bool, count *int64) []uint32 {
	for id, a := range m {
		if a.tries >= maxTries && now.Sub(a.at) >= retryAfter {
			delete(m, id)
			continue
		}
		if a.tries == 0 || now.Sub(a.at) >= retryAfter || (echo && !a.echoed && now.After(a.at)) {
			dst = append(dst, uint32(id))
		}
	}
	slices.Sort(dst)
	if len(dst) > n {
		dst = dst[:n]
	}
	for _, id := range dst {
		a := m[ID(id)]
		if a.tries > 0 && now.Sub(a.at) < retryAfter {
			a.echoed = true // the echo: the try keeps its time
		} else {
			a = ask{at: now, tries: a.tries + 1}
		}
		m[ID(id)] = a
		if count != nil {
			*count++
		}
	}
	return dst
}

package interest

import (
	"fmt"
	"hash/maphash"
	"math/bits"

	"github.com/tongbu/tongbu/codec"
)

// Packet kinds: the first 3 bits of every interest-mode packet (SPEC.md,
// "Interest mode"). Lockstep uses 0..2.
const (
	kindDown    = 4 // world to client, unreliable
	kindUp      = 5 // client to world, unreliable
	kindDisplay = 6 // world to client, reliable: display data
	kindBits    = 3
)

// Downlink message tags; on the wire, the prefix codes of tagCodes.
const (
	tagEnd        = 0
	tagMove       = 1
	tagJump       = 2
	tagSkill      = 3
	tagCustom     = 4
	tagLogic      = 5
	tagRegion     = 6
	tagRemove     = 7
	tagCorrection = 8
	tagVitals     = 9
)

// tagCodes is each message tag's prefix code, first bit first: the most
// common messages (moves, whole logic) take two bits, state syncs and
// region lists three, the rest four or five. Every code but the end's
// has a 1 in its first four bits, so zero padding reads as the end.
var tagCodes = [...]string{
	tagEnd:        "0000",
	tagMove:       "10",
	tagLogic:      "11",
	tagVitals:     "010",
	tagRegion:     "011",
	tagSkill:      "00100",
	tagJump:       "00101",
	tagCustom:     "00110",
	tagRemove:     "00111",
	tagCorrection: "0001",
}

// tagWords is tagCodes as WriteBits takes them: the code's first bit
// lowest, as the Writer sends its bits.
var tagWords = func() (t [len(tagCodes)]uint64) {
	for tag, code := range tagCodes {
		for i, c := range code {
			if c == '1' {
				t[tag] |= 1 << i
			}
		}
	}
	return t
}()

// tagLen returns the bits of tag's code.
func tagLen(tag int) int { return len(tagCodes[tag]) }

// writeTag writes tag's code.
func writeTag(w *codec.Writer, tag int) { w.WriteBits(tagWords[tag], len(tagCodes[tag])) }

// maxTagBits is the longest tag code's length.
const maxTagBits = 5

// tagDecode is tagCodes for readTag: indexed by the next maxTagBits bits
// of a packet, first bit lowest, the tag whose code they begin with and
// the code's length. The code is complete: every index begins with one.
var tagDecode = func() (t [1 << maxTagBits]struct{ tag, n uint8 }) {
	for tag, code := range tagCodes {
		for rest := uint64(0); rest < 1<<(maxTagBits-len(code)); rest++ {
			t[tagWords[tag]|rest<<len(code)] = struct{ tag, n uint8 }{uint8(tag), uint8(len(code))}
		}
	}
	return t
}()

// readTag reads a message tag; a packet's last bits, fewer than a byte
// and all zero, are padding and read as the end. A code cut short by the
// packet's end fails as truncated.
func readTag(r *codec.Reader) int {
	next := r.Peek() // bits past the end read as zero
	if n := r.Remaining(); n < 8 && next&(1<<n-1) == 0 {
		return tagEnd
	}
	d := tagDecode[next&(1<<maxTagBits-1)]
	r.Skip(int(d.n))
	return int(d.tag)
}

// Uplink command tags, 3 bits.
const (
	cmdMove   = 1
	cmdJump   = 2
	cmdSkill  = 3
	cmdCustom = 4
	cmdBits   = 3
)

const (
	seqBits         = 10 // downlink packet sequence numbers
	seqMask         = 1<<seqBits - 1
	frameBits       = 12 // frame numbers on the wire: low bits, unwrapped by the receiver
	ackMaskBits     = 32
	maxUpCommands   = 8  // commands an uplink packet repeats
	maxUpDiscover   = 32 // discovery requests per uplink packet
	maxUpDisplay    = 16 // display requests per uplink packet
	maxRegionList   = 255
	maxDisplayBatch = 16
)

// layout is the bit widths a world's configuration implies; the world and
// its clients derive the same one from the same Config.
type layout struct {
	cfg        Config
	idBits     int
	xBits      int
	yBits      int
	rxMax      uint64
	ryMax      uint64
	offMax     uint64
	history    int // frames of movement history, the furthest back a stamp may be
	maxX, maxY int32
	shortMove  int64 // a move's short offsets: -shortMove..shortMove-1 each way
}

func newLayout(c Config) layout {
	hi := c.Bounds()
	return layout{
		cfg:     c,
		idBits:  bits.Len(uint(c.MaxEntities - 1)),
		xBits:   bits.Len(uint(c.Width*c.RegionSize - 1)),
		yBits:   bits.Len(uint(c.Height*c.RegionSize - 1)),
		rxMax:   uint64(c.Width - 1),
		ryMax:   uint64(c.Height - 1),
		offMax:  uint64(c.RegionSize - 1),
		history: c.frames(c.History),
		maxX:    hi.X,
		maxY:    hi.Y,
		// A move's short offsets reach half a region each way.
		shortMove: int64(min(c.RegionSize/2, c.MaxMove)),
	}
}

func (l *layout) onMap(p Vec) bool { return p.X >= 0 && p.Y >= 0 && p.X <= l.maxX && p.Y <= l.maxY }

func (l *layout) regionOf(p Vec) Region {
	return Region{int(p.X) / l.cfg.RegionSize, int(p.Y) / l.cfg.RegionSize}
}

func (l *layout) writeID(w *codec.Writer, id ID) { w.WriteBits(uint64(id), l.idBits) }

func (l *layout) readID(r *codec.Reader) ID {
	id := ID(r.ReadBits(l.idBits))
	if id == 0 || int(id) >= l.cfg.MaxEntities {
		r.Fail(fmt.Errorf("%w: entity id %d", ErrMalformed, id))
	}
	return id
}

func (l *layout) writePos(w *codec.Writer, p Vec) {
	w.WriteBits(uint64(p.X), l.xBits)
	w.WriteBits(uint64(p.Y), l.yBits)
}

func (l *layout) readPos(r *codec.Reader) Vec {
	p := l.readRawPos(r)
	if !l.onMap(p) {
		r.Fail(fmt.Errorf("%w: position %v off the map", ErrMalformed, p))
	}
	return p
}

// readRawPos reads a position that may be off the map (a map narrower
// than its coordinate bits): the caller checks it.
func (l *layout) readRawPos(r *codec.Reader) Vec {
	return Vec{int32(r.ReadBits(l.xBits)), int32(r.ReadBits(l.yBits))}
}

// writePath writes where an entity is heading relative to pos: one bit for
// standing, else the destination's offset and the speed.
func (l *layout) writePath(w *codec.Writer, pos, dest Vec, speed int32) {
	moving := pos != dest && speed > 0
	w.WriteBool(moving)
	if !moving {
		return
	}
	m := int64(l.cfg.MaxMove)
	w.WriteInt(min(max(int64(dest.X)-int64(pos.X), -m), m), -m, m)
	w.WriteInt(min(max(int64(dest.Y)-int64(pos.Y), -m), m), -m, m)
	w.WriteUint(uint64(min(max(speed, 1), int32(l.cfg.MaxSpeed))-1), uint64(l.cfg.MaxSpeed-1))
}

func (l *layout) readPath(r *codec.Reader, pos Vec) (Vec, int32) {
	dest, speed := l.readRawPath(r, pos)
	if !l.onMap(dest) {
		r.Fail(fmt.Errorf("%w: destination %v off the map", ErrMalformed, dest))
	}
	return dest, speed
}

// readRawPath reads a path whose destination may be off the map. The
// speed goes as speed-1, so a moving path's is at least 1; one over the
// maximum cannot be written: it fails as out of range.
func (l *layout) readRawPath(r *codec.Reader, pos Vec) (Vec, int32) {
	if !r.ReadBool() {
		return pos, 0
	}
	m := int64(l.cfg.MaxMove)
	dest := Vec{pos.X + int32(r.ReadInt(-m, m)), pos.Y + int32(r.ReadInt(-m, m))}
	speed := int32(r.ReadUint(uint64(l.cfg.MaxSpeed-1))) + 1
	return dest, speed
}

// logicKindBits is the kind's width at the start of logic data; the
// vitals follow it.
const logicKindBits = 2

// writeLogic writes an entity's kind, logic data and display version. With
// a region, the position is an offset in it (the seed's
// G2C_ALL_CHARACTER_IN_REGION); without, absolute. It returns where the
// vitals end, in bits from where it began: they are bits
// [logicKindBits, end) of what it wrote, exactly what writeVitals writes,
// so a state sync can splice them from a logic encoding.
func (l *layout) writeLogic(w *codec.Writer, kind Kind, lg *Logic, dver uint8, rel *Region) (vitalsEnd int) {
	start := w.Len()
	w.WriteBits(uint64(kind), logicKindBits)
	l.writeVitals(w, lg, dver)
	vitalsEnd = w.Len() - start
	if rel != nil {
		s := int32(l.cfg.RegionSize)
		w.WriteUint(uint64(lg.Pos.X-int32(rel.X)*s), l.offMax)
		w.WriteUint(uint64(lg.Pos.Y-int32(rel.Y)*s), l.offMax)
	} else {
		l.writePos(w, lg.Pos)
	}
	l.writePath(w, lg.Pos, lg.Dest, lg.Speed)
	return vitalsEnd
}

// writeVitals writes the part of an entity's logic data that changes
// without a broadcast (state, combat, life, mana, rage, magic state) and
// its display version: what a state sync corrects.
func (l *layout) writeVitals(w *codec.Writer, lg *Logic, dver uint8) {
	usual := usualVitals(lg)
	w.WriteBool(!usual)
	if !usual {
		writeUsual(w, uint64(lg.State), 0, 31)
		w.WriteBool(lg.Combat)
		writeUsual(w, uint64(min(lg.Life, 100)), 100, 100)
		writeUsual(w, uint64(min(lg.Mana, 100)), 100, 100)
		writeUsual(w, uint64(min(lg.Rage, 100)), 0, 100)
		if l.cfg.MagicBits > 0 {
			w.WriteBool(lg.Magic != 0)
			if lg.Magic != 0 {
				w.WriteBits(uint64(lg.Magic), l.cfg.MagicBits)
			}
		}
	}
	w.WriteBool(dver != 0)
	if dver != 0 {
		w.WriteBits(uint64(dver), 8)
	}
}

// usualVitals reports whether an entity's vitals are the usual ones (state
// 0, out of combat, full life and mana, no rage, no magic state), as most
// are: they then take one bit.
func usualVitals(lg *Logic) bool {
	return lg.State == 0 && !lg.Combat && lg.Life >= 100 && lg.Mana >= 100 && lg.Rage == 0 && lg.Magic == 0
}

// readVitals reads what writeVitals wrote into lg, and returns the
// display version.
func (l *layout) readVitals(r *codec.Reader, lg *Logic) uint8 {
	lg.State, lg.Combat, lg.Life, lg.Mana, lg.Rage, lg.Magic = 0, false, 100, 100, 0, 0
	if r.ReadBool() {
		lg.State = uint8(readUsual(r, 0, 31))
		lg.Combat = r.ReadBool()
		lg.Life = uint8(readUsual(r, 100, 100))
		lg.Mana = uint8(readUsual(r, 100, 100))
		lg.Rage = uint8(readUsual(r, 0, 100))
		if l.cfg.MagicBits > 0 && r.ReadBool() {
			lg.Magic = uint32(r.ReadBits(l.cfg.MagicBits))
		}
	}
	var dver uint8
	if r.ReadBool() {
		dver = uint8(r.ReadBits(8))
	}
	return dver
}

// writeUsual writes v in 0..max as one bit when it is the usual value (a
// full life bar, no rage), else the bit and WriteUint(v, max).
func writeUsual(w *codec.Writer, v, usual, max uint64) {
	w.WriteBool(v != usual)
	if v != usual {
		w.WriteUint(v, max)
	}
}

func readUsual(r *codec.Reader, usual, max uint64) uint64 {
	if !r.ReadBool() {
		return usual
	}
	return r.ReadUint(max)
}

func (l *layout) readLogic(r *codec.Reader, lg *Logic, rel *Region) (Kind, uint8) {
	kind := Kind(r.ReadBits(logicKindBits))
	dver := l.readVitals(r, lg)
	if rel != nil {
		s := int32(l.cfg.RegionSize)
		lg.Pos = Vec{int32(rel.X)*s + int32(r.ReadUint(l.offMax)), int32(rel.Y)*s + int32(r.ReadUint(l.offMax))}
		if !l.onMap(lg.Pos) {
			r.Fail(fmt.Errorf("%w: position %v off the map", ErrMalformed, lg.Pos))
		}
	} else {
		lg.Pos = l.readPos(r)
	}
	lg.Dest, lg.Speed = l.readPath(r, lg.Pos)
	return kind, dver
}

// writeStamp writes a command's frame as how many frames before the
// packet's it happened, in a prefix code for the usual cases: the world
// broadcasts a command on the frame after it applies it, so one frame back
// is the most common, then two (a frame of uplink delay), then none.
//
//	back 1: 0    back 2: 10    back 0: 110    else: 111, WriteUint(back-3, H-3)
func (l *layout) writeStamp(w *codec.Writer, frame, ref int) {
	back := min(max(ref-frame, 0), l.history)
	w.WriteBool(back != 1)
	if back == 1 {
		return
	}
	w.WriteBool(back != 2)
	if back == 2 {
		return
	}
	w.WriteBool(back != 0)
	if back > 0 {
		w.WriteUint(uint64(back-3), uint64(l.history-3))
	}
}

func (l *layout) readStamp(r *codec.Reader, ref int) int {
	if !r.ReadBool() {
		return ref - 1
	}
	if !r.ReadBool() {
		return ref - 2
	}
	if !r.ReadBool() {
		return ref
	}
	return ref - 3 - int(r.ReadUint(uint64(max(l.history-3, 0))))
}

// unwrap returns the frame nearest ref whose low frameBits bits are low.
func unwrap(low uint64, ref int) int { return unwrapBits(low, frameBits, ref) }

// unwrapSeq returns the sequence number nearest ref with the given low
// seqBits bits.
func unwrapSeq(low uint64, ref int) int { return unwrapBits(low, seqBits, ref) }

// unwrapBits returns the number nearest ref whose low n bits are low.
func unwrapBits(low uint64, n int, ref int) int {
	d := (int(low) - ref) & (1<<n - 1)
	if d >= 1<<(n-1) {
		d -= 1 << n
	}
	return ref + d
}

// downHeader starts a downlink packet.
type downHeader struct {
	seq    int  // packet sequence number (low seqBits on the wire)
	full   bool // the frame goes in full (32 bits), not its low shortFrameBits
	frame  int  // the world's frame
	hasAck bool
	cmdAck uint16 // highest command sequence number applied (low 8 bits on the wire)
}

// shortFrameBits is how many low bits of the frame a downlink packet
// carries once the client has one in full: 16 s at 16 Hz, so a client
// whose estimate is within 8 s unwraps it right.
const shortFrameBits = 8

func (h *downHeader) encode(w *codec.Writer) {
	w.WriteBits(kindDown, kindBits)
	w.WriteBits(uint64(h.seq), seqBits)
	w.WriteBool(h.full)
	if h.full {
		w.WriteBits(uint64(uint32(h.frame)), 32)
	} else {
		w.WriteBits(uint64(h.frame)&(1<<shortFrameBits-1), shortFrameBits)
	}
	w.WriteBool(h.hasAck)
	if h.hasAck {
		w.WriteBits(uint64(h.cmdAck&0xff), 8)
	}
}

// decode reads a header; a short frame is unwrapped against ref.
func (h *downHeader) decode(r *codec.Reader, ref int) {
	if k := r.ReadBits(kindBits); k != kindDown && r.Err() == nil {
		r.Fail(fmt.Errorf("%w: packet kind %d, want world packet", ErrMalformed, k))
	}
	h.seq = int(r.ReadBits(seqBits))
	h.full = r.ReadBool()
	if h.full {
		h.frame = int(r.ReadBits(32))
	} else {
		h.frame = unwrapBits(r.ReadBits(shortFrameBits), shortFrameBits, ref)
	}
	h.hasAck = r.ReadBool()
	if h.hasAck {
		h.cmdAck = uint16(r.ReadBits(8))
	}
}

// displayEntry is one entity's display data in a display reply.
type displayEntry struct {
	id  ID
	ver uint8
	d   Display
}

// maxNames and maxLooks bound a connection's name and look dictionaries
// (display data, SPEC 8.3): the names and whole looks a world has sent a
// client to keep, which later display entries refer to by index.
const (
	maxNames = 1024
	maxLooks = 1024
)

// writeLook writes a display entry's look: a reference to the connection's
// look dictionary when the client holds it, else the look in full, kept
// by both sides when it is shared (another entity in the world looks, or
// looked, the same), as long as the dictionaries have room.
func writeLook(w *codec.Writer, ld *lookDict, nd *names, id uint32, shared bool, d *Display) {
	// Only a shared look is kept, so only one is looked for (a look stays
	// shared once it is).
	if shared {
		if i := ld.find(id); i >= 0 {
			w.WriteBool(true)
			w.WriteUint(uint64(i), maxLooks-1)
			return
		}
	}
	w.WriteBool(false)
	w.WriteBits(uint64(d.Appearance), 32)
	w.WriteBits(uint64(d.Camp), 8)
	keep := shared && ld.len() < maxLooks
	w.WriteBool(keep)
	nd.writeName(w, d.Name, keep)
	if keep {
		ld.insert(id)
	}
}

// lookDict is the world's side of a connection's look dictionary: the
// world's look numbers it holds, by index, kept in the table alone (each
// entry's hash holds its number, lookHash).
type lookDict struct {
	tbl indexTable
}

// lookHash is look id's hash in the table: the id itself in the top 32
// bits, which the table keeps in the slot, and a mix of it below, which
// places it. A slot's top bits equal to the id's are therefore the entry,
// with no other look.
func lookHash(id uint32) uint64 {
	return uint64(id)<<32 | uint64(id)*0x9E3779B97F4A7C15>>32
}

// len returns how many looks the dictionary holds.
func (d *lookDict) len() int { return len(d.tbl.hashes) }

// at returns the look number at index i.
func (d *lookDict) at(i int) uint32 { return uint32(d.tbl.hashes[i] >> 32) }

// slot returns where look id's probe starts, for a prefetch.
func (d *lookDict) slot(id uint32) *uint64 {
	if len(d.tbl.slots) == 0 {
		return nil
	}
	return &d.tbl.slots[int(lookHash(id))&(len(d.tbl.slots)-1)]
}

// find returns the index of look id, or -1.
func (d *lookDict) find(id uint32) int {
	return d.tbl.find(lookHash(id), func(int) bool { return true }) // the slot holds the id (lookHash)
}

// insert adds look id under the next index.
func (d *lookDict) insert(id uint32) { d.tbl.add(lookHash(id)) }

// truncate forgets the looks from index n on, the last added.
func (d *lookDict) truncate(n int) { d.tbl.truncate(n) }

// names is one side's copy of a connection's name dictionary. Both sides
// add every non-empty name sent in full and kept while it holds fewer
// than maxNames, in the order sent, so they agree: display data travels
// on the reliable, ordered channel.
type names struct {
	list []string   // the names by index
	tbl  indexTable // the world's side: index by name
}

// nameSeed hashes names for the world's side of the dictionaries.
var nameSeed = maphash.MakeSeed()

// find returns the index of name, hashed h, or -1.
func (n *names) find(name string, h uint64) int {
	return n.tbl.find(h, func(i int) bool { return n.list[i] == name })
}

// insert adds name, hashed h, to the world's side, under the next index.
func (n *names) insert(name string, h uint64) {
	n.list = append(n.list, name)
	n.tbl.add(h)
}

// indexTable finds a dictionary's entries by hash, by open addressing:
// each slot is 0 (empty) or the top 32 bits of an entry's hash above its
// index+1. A Go map costs a few cache misses a lookup, and a world looks
// up thousands a frame.
type indexTable struct {
	slots  []uint64
	hashes []uint64 // by index, to place them again when the table grows
}

// find returns the index of the entry hashed h for which same holds, or
// -1.
func (t *indexTable) find(h uint64, same func(i int) bool) int {
	if len(t.slots) == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for j := int(h) & mask; ; j = (j + 1) & mask {
		s := t.slots[j]
		if s == 0 {
			return -1
		}
		if s>>32 == h>>32 && same(int(uint32(s))-1) {
			return int(uint32(s)) - 1
		}
	}
}

// add records the next index under hash h.
func (t *indexTable) add(h uint64) {
	t.hashes = append(t.hashes, h)
	if 2*len(t.hashes) > len(t.slots) { // at most half full: short probes
		t.slots = make([]uint64, max(64, 2*len(t.slots)))
		for i, h := range t.hashes[:len(t.hashes)-1] {
			t.place(h, i)
		}
	}
	t.place(h, len(t.hashes)-1)
}

// truncate forgets the entries from index n on. Removing the last added
// leaves every other entry's probe intact: the slots an entry's probe
// passes over were filled, when it was placed, by entries added before it.
func (t *indexTable) truncate(n int) {
	mask := len(t.slots) - 1
	for i := len(t.hashes) - 1; i >= n; i-- {
		for j := int(t.hashes[i]) & mask; ; j = (j + 1) & mask {
			if int(uint32(t.slots[j])) == i+1 {
				t.slots[j] = 0
				break
			}
		}
	}
	t.hashes = t.hashes[:n]
}

func (t *indexTable) place(h uint64, i int) {
	mask := len(t.slots) - 1
	j := int(h) & mask
	for t.slots[j] != 0 {
		j = (j + 1) & mask
	}
	t.slots[j] = h>>32<<32 | uint64(i+1)
}

// truncate forgets the names from index k on, the last added (the
// world's side: the client's holds no table).
func (n *names) truncate(k int) {
	clear(n.list[k:])
	n.list = n.list[:k]
	n.tbl.truncate(k)
}

// writeName writes a display entry's name: a reference to the dictionary
// when the client has it, else the name in full, which joins the
// dictionary if kept.
func (n *names) writeName(w *codec.Writer, name string, keep bool) {
	h := maphash.String(nameSeed, name)
	if i := n.find(name, h); i >= 0 {
		w.WriteBool(true)
		w.WriteUint(uint64(i), maxNames-1)
		return
	}
	w.WriteBool(false)
	w.WriteString(name, MaxName)
	if keep && name != "" && len(n.list) < maxNames {
		n.insert(name, h)
	}
}

// writeDisplay writes a display entry: entity id's display version ver
// and display d, whose look is the world's look number look, shared or
// not, against the connection's dictionaries ld and nd (writeLook).
// readDisplay reads it.
func (l *layout) writeDisplay(w *codec.Writer, id ID, ver uint8, ld *lookDict, nd *names, look uint32, shared bool, d *Display) {
	l.writeID(w, id)
	writeUsual(w, uint64(ver), 0, 255)
	writeLook(w, ld, nd, look, shared, d)
}

// readDisplay reads a display entry, resolving its look and name against
// the client's dictionaries (adding what the entry keeps). The caller
// truncates the dictionaries back if the message as a whole does not
// decode.
func (l *layout) readDisplay(r *codec.Reader, e *displayEntry, n *names, looks *[]Display) {
	e.id = l.readID(r)
	e.ver = uint8(readUsual(r, 0, 255))
	if r.ReadBool() {
		if i, ok := readRef(r, maxLooks, len(*looks), "look"); ok {
			e.d = (*looks)[i]
		}
		return
	}
	e.d.Appearance = uint32(r.ReadBits(32))
	e.d.Camp = uint8(r.ReadBits(8))
	keep := r.ReadBool()
	if r.ReadBool() {
		if i, ok := readRef(r, maxNames, len(n.list), "name"); ok {
			e.d.Name = n.list[i]
		}
	} else {
		e.d.Name = r.ReadString(MaxName)
		if r.Err() == nil && keep && e.d.Name != "" && len(n.list) < maxNames {
			n.list = append(n.list, e.d.Name)
		}
	}
	if r.Err() == nil && keep && len(*looks) < maxLooks {
		*looks = append(*looks, e.d)
	}
}

// readRef reads a reference to one of the n entries a dictionary of at
// most max holds; ok is false, and r failed, when it is not one of them.
func readRef(r *codec.Reader, max, n int, what string) (i int, ok bool) {
	v := r.ReadUint(uint64(max - 1))
	if r.Err() != nil {
		return 0, false
	}
	if v >= uint64(n) {
		r.Fail(fmt.Errorf("%w: %s %d of a dictionary of %d", ErrMalformed, what, v, n))
		return 0, false
	}
	return int(v), true
}

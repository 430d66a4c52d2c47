package interest

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// A Group is a set of an entity's fields that the game declares (seed
// 000 §5.1.4: field sets that share the entity's ID, each sent at its
// own pace): a guild name's ID and rank, a mount, a title, buffs, what a
// game's world holds of its entities beyond their logic (position, path,
// vitals) and display data (look, camp, name), which stay as they are.
// The world sends a group's values to every client in range of the
// entity: when they change (Every 0), at most once per Every (a change
// waits for the group's next turn, so that fields that change often cost
// no more than one update a period), or only when a client asks
// (Request: Client.RequestGroup). A client that learns an entity (a
// forced sync, discovery, a crossing into its range) asks for its groups
// with its display data, and has them a round trip later.
type Group struct {
	// Name names the group, for the game's own use (1 to 32 bytes).
	Name string
	// Fields are the group's values, in order: at most 32, of at most
	// 512 bits together.
	Fields []Field
	// Every is how often at most the group's changes are sent; 0: the
	// frame after each change. Rounded up to whole frames.
	Every time.Duration
	// Request sends the group only to a client that asks for it
	// (Client.RequestGroup): what a player looks at now and then (an
	// inspect window).
	Request bool
}

// Field is one value of a Group: an integer of Bits bits (1 to 64),
// signed (two's complement) when Signed. A game packs what it needs in
// it: an ID, a count, a fixed-point number, flags.
type Field struct {
	Name   string
	Bits   int
	Signed bool
}

// Limits of Config.Groups.
const (
	MaxGroups      = 16
	MaxGroupFields = 32
	MaxGroupBits   = 512
)

// fits reports whether v is a value of f.
func (f Field) fits(v int64) bool {
	if f.Bits == 64 {
		return f.Signed || v >= 0
	}
	if f.Signed {
		return v >= -(1<<(f.Bits-1)) && v < 1<<(f.Bits-1)
	}
	return v >= 0 && v < 1<<f.Bits
}

// validateGroups reports groups that cannot work.
func validateGroups(c *Config) error {
	if len(c.Groups) == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if len(c.Groups) > MaxGroups {
		return bad("%d field groups, over %d", len(c.Groups), MaxGroups)
	}
	for i, g := range c.Groups {
		if len(g.Name) == 0 || len(g.Name) > 32 {
			return bad("group %d: name %q of %d bytes, want 1 to 32", i, g.Name, len(g.Name))
		}
		if len(g.Fields) == 0 || len(g.Fields) > MaxGroupFields {
			return bad("group %q: %d fields, want 1 to %d", g.Name, len(g.Fields), MaxGroupFields)
		}
		if g.Every < 0 || g.Every > time.Hour || g.Request && g.Every != 0 {
			return bad("group %q: every %v (a group sent on request has no period)", g.Name, g.Every)
		}
		total := 0
		for _, f := range g.Fields {
			if f.Bits < 1 || f.Bits > 64 || len(f.Name) > 32 {
				return bad("group %q: field %q of %d bits, want 1 to 64", g.Name, f.Name, f.Bits)
			}
			total += f.Bits
		}
		if total > MaxGroupBits {
			return bad("group %q: %d bits, over %d", g.Name, total, MaxGroupBits)
		}
	}
	return nil
}

// fieldSet is an entity's group values, those set (World.SetGroup).
type fieldSet struct {
	vals [][]int64 // by group; nil: never set
	last []int     // by group: the frame its values were last sent, for Every
	due  []bool    // by group: a change is waiting to be sent
	// The record a newcomer gets, after the ID (the mask of the groups set
	// but those sent on request, and their values), encoded once until
	// the values change: every client that learns the entity is sent it.
	newcomer     []byte
	newcomerBits int
	newcomerMask uint64
	ver          uint32 // counts the changes, for the border messages (Border.gsent)
}

// gkey names one group of one entity.
type gkey struct {
	id ID
	g  int
}

// SetGroup sets entity id's group g (an index into Config.Groups) to
// vals, one a field in the group's order. Clients in range hear of it as
// the group says; values equal to the last ones send nothing.
func (w *World) SetGroup(id ID, g int, vals ...int64) error {
	if _, err := w.owned(id); err != nil {
		return err
	}
	if g < 0 || g >= len(w.cfg.Groups) {
		return fmt.Errorf("%w: group %d of %d", ErrConfig, g, len(w.cfg.Groups))
	}
	gr := &w.cfg.Groups[g]
	if len(vals) != len(gr.Fields) {
		return fmt.Errorf("%w: %d values for group %q of %d fields", ErrConfig, len(vals), gr.Name, len(gr.Fields))
	}
	for i, v := range vals {
		if !gr.Fields[i].fits(v) {
			return fmt.Errorf("%w: %d out of field %q of group %q (%d bits)", ErrConfig, v, gr.Fields[i].Name, gr.Name, gr.Fields[i].Bits)
		}
	}
	w.setGroup(id, g, vals)
	return nil
}

// setGroup sets entity id's group g to vals, checked, owned or a ghost
// (a border message's), and schedules the change for the clients in
// range.
func (w *World) setGroup(id ID, g int, vals []int64) {
	gr := &w.cfg.Groups[g]
	fs := w.fields[id]
	if fs == nil {
		n := len(w.cfg.Groups)
		fs = &fieldSet{vals: make([][]int64, n), last: make([]int, n), due: make([]bool, n)}
		for i := range fs.last {
			fs.last[i] = -1 << 30
		}
		w.fields[id] = fs
	}
	if cur := fs.vals[g]; cur != nil && equalVals(cur, vals) {
		return
	}
	fs.vals[g] = append(fs.vals[g][:0], vals...)
	fs.newcomerBits = 0
	fs.ver++
	if gr.Request || fs.due[g] {
		return
	}
	fs.due[g] = true
	at := max(w.frame+1, fs.last[g]+w.groupEvery[g])
	bucket, ok := w.groupDue[at]
	if !ok && w.groupSpare != nil {
		bucket, w.groupSpare = w.groupSpare, nil // last frame's, emptied
	}
	w.groupDue[at] = append(bucket, gkey{id, g})
}

func equalVals(a, b []int64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// Group returns entity id's group g as the world holds it, and whether
// it was ever set.
func (w *World) Group(id ID, g int) ([]int64, bool) {
	if w.get(id) == nil || g < 0 || g >= len(w.cfg.Groups) || int(id) >= len(w.fields) || w.fields[id] == nil {
		return nil, false
	}
	v := w.fields[id].vals[g]
	return v, v != nil
}

// writeGroupValues writes the values of group g, each field in its bits.
func (l *layout) writeGroupValues(wr *codec.Writer, g int, vals []int64) {
	for i, f := range l.cfg.Groups[g].Fields {
		wr.WriteBits(uint64(vals[i]), f.Bits)
	}
}

// readGroupValues reads what writeGroupValues wrote into vals (reused).
func (l *layout) readGroupValues(r *codec.Reader, g int, vals []int64) []int64 {
	vals = vals[:0]
	for _, f := range l.cfg.Groups[g].Fields {
		v := r.ReadBits(f.Bits)
		if f.Signed && f.Bits < 64 && v&(1<<(f.Bits-1)) != 0 {
			v |= ^uint64(0) << f.Bits // sign-extend
		}
		vals = append(vals, int64(v))
	}
	return vals
}

// maxGroupRecords bounds the entities of one display message's group
// records.
const maxGroupRecords = 4096

// pushGroups sends the frame's due group changes to the clients in range
// of their entities, and what clients asked for, on the reliable channel:
// one display message per client with anything to hear (more when it is
// over maxGroupRecords entities). Each entity's record of the frame (its
// due groups under its ID) is encoded once, in w.gpush, and copied into
// the message of every client in range.
func (w *World) pushGroups() {
	due := w.groupDue[w.frame]
	delete(w.groupDue, w.frame)
	slices.SortFunc(due, func(a, b gkey) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.g, b.g)) })
	w.gpush.reset()
	ng := len(w.cfg.Groups)
	for i := 0; i < len(due); {
		id := due[i].id
		j := i
		for j < len(due) && due[j].id == id {
			j++
		}
		fs, e := w.fields[id], w.get(id)
		var mask uint64
		for _, k := range due[i:j] {
			if fs != nil && e != nil && fs.due[k.g] {
				fs.due[k.g], fs.last[k.g] = false, w.frame
				mask |= 1 << k.g
			}
		}
		i = j
		if mask == 0 {
			continue
		}
		w.stats.GroupChanges += int64(bits.OnesCount64(mask))
		w.lay.writeID(&w.gpush.w, id)
		w.gpush.w.WriteBits(mask, ng)
		for g := range ng {
			if mask&(1<<g) != 0 {
				w.lay.writeGroupValues(&w.gpush.w, g, fs.vals[g])
			}
		}
		w.gpush.mark(id)
		rec := int32(len(w.gpush.ends) - 1)
		w.around(e.reg, func(r int32) {
			for _, o := range w.regions[r].obs {
				o.gpush = append(o.gpush, rec)
				w.listGroups(o)
			}
		})
	}
	w.groupSpare = due[:0]
	pushed := w.gpush.w.Bytes()
	for _, o := range w.groupObs {
		o.groupListed = false
		if e := w.get(o.id); e == nil || e.obs != o {
			o.gpush, o.groupOut = o.gpush[:0], o.groupOut[:0] // its client left
			continue
		}
		push := o.gpush
		for len(push) > 0 || len(o.groupOut) > 0 {
			w.pw.Reset(w.pbuf[:0])
			w.pw.WriteBits(kindDisplay, kindBits)
			w.pw.WriteUint(0, maxDisplayBatch)
			np := min(len(push), maxGroupRecords)
			nreq, end := w.requested(o, maxGroupRecords-np)
			bits0 := w.pw.Len()
			w.pw.WriteUint(uint64(np+nreq), maxGroupRecords)
			for _, rec := range push[:np] {
				from := 0
				if rec > 0 {
					from = int(w.gpush.ends[rec-1])
				}
				copyBits(&w.pw, pushed, from, int(w.gpush.ends[rec]))
			}
			w.writeRequested(o, end)
			w.stats.GroupBits += int64(w.pw.Len() - bits0)
			push = push[np:]
			w.sendDisplay(o)
		}
		o.gpush = o.gpush[:0]
	}
	w.groupObs = w.groupObs[:0]
}

// skipGroups moves the group changes due in the n frames the world is
// about to skip (World.Tick, far behind) to the frame after them, so that
// none is lost.
func (w *World) skipGroups(n int) {
	to := w.frame + n + 1
	move := func(f int) {
		if b, ok := w.groupDue[f]; ok {
			w.groupDue[to] = append(w.groupDue[to], b...)
			delete(w.groupDue, f)
		}
	}
	if len(w.groupDue) < n {
		for f := range w.groupDue {
			if f > w.frame && f < to {
				move(f)
			}
		}
		return
	}
	for f := w.frame + 1; f < to; f++ {
		move(f)
	}
}

// listGroups makes sure o's due records go in this frame's pushGroups.
func (w *World) listGroups(o *observer) {
	if !o.groupListed {
		o.groupListed = true
		w.groupObs = append(w.groupObs, o)
	}
}

// requested sorts the groups o asked for (o.groupOut) by entity and
// returns how many entities of them fit in room, and where they end.
func (w *World) requested(o *observer, room int) (n, end int) {
	out := o.groupOut
	if len(out) == 0 {
		return 0, 0
	}
	slices.SortFunc(out, func(a, b gkey) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.g, b.g)) })
	o.groupOut = slices.Compact(out)
	out = o.groupOut
	for end < len(out) && n < room {
		n++
		for id := out[end].id; end < len(out) && out[end].id == id; end++ {
		}
	}
	return n, end
}

// writeRequested writes the group records of o.groupOut[:end], an
// entity's groups together under its one ID (SPEC.md §8.5), and takes
// them off o.groupOut.
func (w *World) writeRequested(o *observer, end int) {
	out, ng := o.groupOut, len(w.cfg.Groups)
	for i := 0; i < end; {
		id := out[i].id
		fs := w.fields[id]
		var mask uint64
		j := i
		for ; j < end && out[j].id == id; j++ {
			if out[j].g == newcomerKey {
				mask |= w.newcomer(fs)
			} else {
				mask |= 1 << out[j].g
			}
		}
		i = j
		w.lay.writeID(&w.pw, id)
		if mask == w.newcomer(fs) {
			w.pw.WriteBitString(fs.newcomer, fs.newcomerBits)
			continue
		}
		w.pw.WriteBits(mask, ng)
		for g := range ng {
			if mask&(1<<g) != 0 {
				w.lay.writeGroupValues(&w.pw, g, fs.vals[g])
			}
		}
	}
	o.groupOut = append(o.groupOut[:0], out[end:]...)
}

// newcomer returns the mask of fs's newcomer record, encoding the record
// (the mask and the values) when its values changed since.
func (w *World) newcomer(fs *fieldSet) uint64 {
	if fs.newcomerBits > 0 {
		return fs.newcomerMask
	}
	var mask uint64
	for g, v := range fs.vals {
		if v != nil && !w.cfg.Groups[g].Request {
			mask |= 1 << g
		}
	}
	wr := codec.NewWriter(fs.newcomer[:0])
	wr.WriteBits(mask, len(w.cfg.Groups))
	for g, v := range fs.vals {
		if mask&(1<<g) != 0 {
			w.lay.writeGroupValues(wr, g, v)
		}
	}
	fs.newcomerBits, fs.newcomerMask = wr.Len(), mask
	fs.newcomer = wr.Bytes()
	return mask
}

// writeGroupRecords writes the group records of a display message that
// answers display requests: those o asked for, up to maxGroupRecords
// entities; what does not fit goes in this frame's pushGroups.
func (w *World) writeGroupRecords(o *observer) {
	n, end := w.requested(o, maxGroupRecords)
	bits0 := w.pw.Len()
	w.pw.WriteUint(uint64(n), maxGroupRecords)
	w.writeRequested(o, end)
	w.stats.GroupBits += int64(w.pw.Len() - bits0)
	if len(o.groupOut) > 0 {
		w.listGroups(o)
	}
}

// sendDisplay sends the display message in w.pw to o, reliably; it
// reports false when the channel refused it.
func (w *World) sendDisplay(o *observer) bool {
	b := w.pw.Bytes()
	w.pbuf = b[:0]
	w.stats.ReliableOut += int64(len(b))
	if err := w.out.SendReliable(o.id, b); err != nil {
		w.stats.Dropped[DropSendFailed]++
		return false
	}
	return true
}

// wantGroups queues for o entity id's groups: every one set and pushed
// (g < 0, a newcomer's: with its display data), or group g.
func (o *observer) wantGroups(w *World, id ID, g int) {
	if int(id) >= len(w.fields) || w.fields[id] == nil {
		return
	}
	if g < 0 {
		if w.newcomer(w.fields[id]) != 0 { // none when it has only groups sent on request
			o.groupOut = append(o.groupOut, gkey{id, newcomerKey}) // its newcomer record (writeRequested)
		}
		return
	}
	if w.fields[id].vals[g] != nil {
		o.groupOut = append(o.groupOut, gkey{id, g})
	}
}

// newcomerKey, as a gkey's group, asks for the entity's newcomer record:
// every group set that is not sent on request.
const newcomerKey = -1

// writeBorderGroups writes the border message's groups trailer: for each
// update and handover op, in order, 1 bit and, when set, every group the
// entity has set (a bit mask, then their values), when they changed since
// this border last sent them, or the entity is handed over.
func (b *Border) writeBorderGroups() {
	w := b.w
	b.wr.WriteBool(true)
	if b.gsent == nil {
		b.gsent = map[ID]uint32{}
	}
	for _, op := range b.gops {
		fs := w.fields[op.id]
		send := fs != nil && (op.handed || b.gsent[op.id] != fs.ver+1)
		b.wr.WriteBool(send)
		if !send {
			continue
		}
		var mask uint64
		for g, v := range fs.vals {
			if v != nil {
				mask |= 1 << g
			}
		}
		b.wr.WriteBits(mask, len(w.cfg.Groups))
		for g, v := range fs.vals {
			if v != nil {
				w.lay.writeGroupValues(&b.wr, g, v)
			}
		}
		if op.handed {
			delete(b.gsent, op.id)
		} else {
			b.gsent[op.id] = fs.ver + 1
		}
	}
}

// readBorderGroups reads what writeBorderGroups wrote into the ops.
func (b *Border) readBorderGroups(r *codec.Reader, ops []borderOp) {
	ng := len(b.w.cfg.Groups)
	for i := range ops {
		o := &ops[i]
		if o.op != borderUpdate && o.op != borderHandover || r.Err() != nil || !r.ReadBool() {
			continue
		}
		mask := r.ReadBits(ng)
		o.groups = make([][]int64, ng)
		for g := range ng {
			if mask&(1<<g) != 0 && r.Err() == nil {
				o.groups[g] = b.w.lay.readGroupValues(r, g, nil)
			}
		}
	}
}

// groupsChanged reports whether entity id's groups changed since b last
// sent them to its neighbour.
func (b *Border) groupsChanged(id ID) bool {
	fs := b.w.fields[id]
	return fs != nil && b.gsent[id] != fs.ver+1
}

// mirrorGroups takes the groups a border message carried for entity id.
func (w *World) mirrorGroups(id ID, groups [][]int64) {
	for g, v := range groups {
		if v != nil {
			w.setGroup(id, g, v)
		}
	}
}

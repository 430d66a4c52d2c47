package interest

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// A world's snapshot (SPEC.md §9.7) is what a world that moves to
// another process, or comes back from a checkpoint after a crash, starts
// from: its frame, the entity IDs it gave out and freed, and every entity
// it owns (a cell's ghosts are its neighbours' and come back with their
// border messages), each with its ID, kind, logic data, the frame its
// path starts at and its display data. What the world keeps of its
// clients (observers, their movement histories) is not in it: the
// clients join the restored world afresh or as a seamless move.

// snapshotVersion is the first field of a snapshot: 1, or 2 for a world
// with field groups (Config.Groups), whose values follow the entities.
const (
	snapshotVersion       = 1
	snapshotVersionGroups = 2
)

// AppendSnapshot appends the world's snapshot to dst. Call it between two
// ticks, on the world's goroutine.
func (w *World) AppendSnapshot(dst []byte) []byte {
	wr := codec.NewWriter(dst)
	c := &w.cfg
	if len(c.Groups) > 0 {
		wr.WriteUvarint(snapshotVersionGroups)
	} else {
		wr.WriteUvarint(snapshotVersion)
	}
	for _, v := range [...]int{c.Width, c.Height, c.RegionSize, c.MaxEntities, c.Hz, c.IDStride, c.IDOffset} {
		wr.WriteUvarint(uint64(v))
	}
	wr.WriteUvarint(uint64(w.frame))
	wr.WriteUvarint(uint64(w.ids))
	free := w.free[w.freeAt:]
	wr.WriteUvarint(uint64(len(free)))
	for _, id := range free {
		wr.WriteUvarint(uint64(id))
	}
	n := 0
	for id := ID(1); int(id) < w.ids; id++ {
		if e := w.ent(id); e.alive && !w.ghost[id] {
			n++
		}
	}
	wr.WriteUvarint(uint64(n))
	for id := ID(1); int(id) < w.ids; id++ {
		e := w.ent(id)
		if !e.alive || w.ghost[id] {
			continue
		}
		lg, d := &e.lg, &w.dispEnc(id).d
		wr.WriteUvarint(uint64(id))
		wr.WriteBits(uint64(e.kind), 8)
		wr.WriteBits(uint64(e.dver), 8)
		wr.WriteVarint(int64(lg.Pos.X))
		wr.WriteVarint(int64(lg.Pos.Y))
		wr.WriteVarint(int64(lg.Dest.X))
		wr.WriteVarint(int64(lg.Dest.Y))
		wr.WriteUvarint(uint64(lg.Speed))
		wr.WriteBits(uint64(lg.State), 8)
		wr.WriteBool(lg.Combat)
		wr.WriteBits(uint64(lg.Life), 8)
		wr.WriteBits(uint64(lg.Mana), 8)
		wr.WriteBits(uint64(lg.Rage), 8)
		wr.WriteUvarint(uint64(lg.Magic))
		wr.WriteUvarint(uint64(max(e.start-w.frame, 0)))
		wr.WriteUvarint(uint64(d.Appearance))
		wr.WriteString(d.Name, MaxName)
		wr.WriteBits(uint64(d.Camp), 8)
	}
	// Version 2: the field groups (Config.Groups), their count, then the
	// entities with any set, each with a bit mask of its groups set and
	// their values.
	if len(c.Groups) > 0 {
		wr.WriteUvarint(uint64(len(c.Groups)))
		var with []ID
		for id := ID(1); int(id) < w.ids; id++ {
			if e := w.ent(id); e.alive && !w.ghost[id] && w.fields[id] != nil {
				with = append(with, id)
			}
		}
		wr.WriteUvarint(uint64(len(with)))
		for _, id := range with {
			fs := w.fields[id]
			var mask uint64
			for g, v := range fs.vals {
				if v != nil {
					mask |= 1 << g
				}
			}
			wr.WriteUvarint(uint64(id))
			wr.WriteBits(mask, len(c.Groups))
			for g, v := range fs.vals {
				if v != nil {
					w.lay.writeGroupValues(wr, g, v)
				}
			}
		}
	}
	return wr.Bytes()
}

// SnapshotFrame returns the frame a snapshot was taken at, without
// loading it.
func SnapshotFrame(b []byte) (int, error) {
	r := codec.NewReader(b)
	if v := r.ReadUvarint(); v != snapshotVersion && v != snapshotVersionGroups {
		return 0, fmt.Errorf("%w: snapshot version %d", ErrMalformed, v)
	}
	for range 7 {
		r.ReadUvarint()
	}
	f := r.ReadUvarint()
	if err := r.Err(); err != nil || f > 1<<40 {
		return 0, fmt.Errorf("%w: snapshot: %v", ErrMalformed, err)
	}
	return int(f), nil
}

// RestoreSnapshot loads a snapshot (AppendSnapshot) into w, a world just
// made (NewWorld) with the configuration of the world it was taken from,
// before any entity is spawned or frame run: the world goes on from the
// snapshot's frame, with its entities and IDs, as soon as it ticks. It
// fails whole, leaving w as it was, on a snapshot of another
// configuration or one that does not decode.
func (w *World) RestoreSnapshot(b []byte) error {
	if w.frame != 0 || w.ids != 1 || len(w.obs) != 0 {
		return fmt.Errorf("%w: a snapshot goes into a fresh world", ErrConfig)
	}
	s, err := w.readSnapshot(b)
	if err != nil {
		return err
	}
	w.frame = s.frame
	for w.ids < s.ids {
		w.grow()
	}
	for i := range s.ents {
		se := &s.ents[i]
		e := w.ent(se.id)
		e.dver = se.dver - 1 // spawnAt makes it dver
		w.spawnAt(se.id, se.kind, se.lg, se.d, false)
		e.start = w.frame + se.ahead
	}
	for id, vals := range s.fields {
		fs := &fieldSet{vals: vals, last: make([]int, len(vals)), due: make([]bool, len(vals))}
		for g := range fs.last {
			fs.last[g] = -1 << 30
		}
		w.fields[id] = fs
	}
	w.free, w.freeAt = s.free, 0
	return nil
}

type snapEntity struct {
	id    ID
	kind  Kind
	dver  uint8
	lg    Logic
	ahead int
	d     Display
}

type snapshot struct {
	frame, ids int
	free       []ID
	ents       []snapEntity
	fields     map[ID][][]int64 // the field groups set, by entity
}

// readSnapshot decodes and checks a snapshot against w's configuration.
func (w *World) readSnapshot(b []byte) (*snapshot, error) {
	r := codec.NewReader(b)
	want := uint64(snapshotVersion)
	if len(w.cfg.Groups) > 0 {
		want = snapshotVersionGroups
	}
	if v := r.ReadUvarint(); v != want {
		return nil, fmt.Errorf("%w: snapshot version %d, a world of %d field groups reads %d", ErrMalformed, v, len(w.cfg.Groups), want)
	}
	c := &w.cfg
	for i, v := range [...]int{c.Width, c.Height, c.RegionSize, c.MaxEntities, c.Hz, c.IDStride, c.IDOffset} {
		if got := r.ReadUvarint(); got != uint64(v) && r.Err() == nil {
			return nil, fmt.Errorf("%w: the snapshot is of another world configuration (field %d: %d, this world's %d)", ErrConfig, i, got, v)
		}
	}
	s := &snapshot{}
	frame, ids := r.ReadUvarint(), r.ReadUvarint()
	if r.Err() == nil && (frame > 1<<40 || ids < 1 || ids > uint64(c.MaxEntities)) {
		return nil, fmt.Errorf("%w: snapshot: frame %d, %d IDs of at most %d", ErrMalformed, frame, ids, c.MaxEntities)
	}
	s.frame, s.ids = int(frame), int(ids)
	seen := make(map[ID]bool)
	nfree := r.ReadUvarint()
	if nfree > ids {
		return nil, fmt.Errorf("%w: snapshot: %d free IDs of %d", ErrMalformed, nfree, ids)
	}
	for range nfree {
		id := ID(r.ReadUvarint())
		if r.Err() != nil {
			break
		}
		if id == 0 || int(id) >= s.ids || seen[id] || !w.ownID(id) {
			return nil, fmt.Errorf("%w: snapshot: free ID %d", ErrMalformed, id)
		}
		seen[id] = true
		s.free = append(s.free, id)
	}
	n := r.ReadUvarint()
	if n > ids {
		return nil, fmt.Errorf("%w: snapshot: %d entities of %d IDs", ErrMalformed, n, ids)
	}
	for range n {
		var e snapEntity
		e.id = ID(r.ReadUvarint())
		e.kind = Kind(r.ReadBits(8))
		e.dver = uint8(r.ReadBits(8))
		lg := &e.lg
		lg.Pos.X, lg.Pos.Y = readInt32(r), readInt32(r)
		lg.Dest.X, lg.Dest.Y = readInt32(r), readInt32(r)
		lg.Speed = int32(min(r.ReadUvarint(), 1<<31-1))
		lg.State = uint8(r.ReadBits(8))
		lg.Combat = r.ReadBool()
		lg.Life, lg.Mana, lg.Rage = uint8(r.ReadBits(8)), uint8(r.ReadBits(8)), uint8(r.ReadBits(8))
		lg.Magic = uint32(min(r.ReadUvarint(), 1<<32-1))
		ahead := r.ReadUvarint()
		e.d.Appearance = uint32(min(r.ReadUvarint(), 1<<32-1))
		e.d.Name = r.ReadString(MaxName)
		e.d.Camp = uint8(r.ReadBits(8))
		if r.Err() != nil {
			break
		}
		switch {
		case e.id == 0 || int(e.id) >= s.ids || seen[e.id]:
			return nil, fmt.Errorf("%w: snapshot: entity ID %d", ErrMalformed, e.id)
		case e.kind >= numKinds:
			return nil, fmt.Errorf("%w: snapshot: entity %d of kind %d", ErrMalformed, e.id, e.kind)
		case ahead > uint64(c.Hz)*60:
			return nil, fmt.Errorf("%w: snapshot: entity %d starts %d frames ahead", ErrMalformed, e.id, ahead)
		}
		if lg.Speed == 0 {
			lg.Dest = lg.Pos
		}
		if err := w.checkLogic(lg); err != nil {
			return nil, fmt.Errorf("%w: snapshot: entity %d: %v", ErrMalformed, e.id, err)
		}
		e.ahead = int(ahead)
		seen[e.id] = true
		s.ents = append(s.ents, e)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: snapshot: %v", ErrMalformed, err)
	}
	if len(w.cfg.Groups) > 0 {
		if err := w.readSnapshotGroups(r, s, seen); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// readSnapshotGroups reads a snapshot's field groups into s.fields.
func (w *World) readSnapshotGroups(r *codec.Reader, s *snapshot, alive map[ID]bool) error {
	groups := w.cfg.Groups
	if n := r.ReadUvarint(); r.Err() == nil && n != uint64(len(groups)) {
		return fmt.Errorf("%w: the snapshot is of a world of %d field groups, this world's has %d", ErrConfig, n, len(groups))
	}
	n := r.ReadUvarint()
	if n > uint64(len(s.ents)) {
		return fmt.Errorf("%w: snapshot: field groups of %d entities, of %d", ErrMalformed, n, len(s.ents))
	}
	s.fields = make(map[ID][][]int64, n)
	for range n {
		id := ID(r.ReadUvarint())
		mask := r.ReadBits(len(groups))
		if r.Err() != nil {
			break
		}
		if !alive[id] || s.fields[id] != nil || mask == 0 {
			return fmt.Errorf("%w: snapshot: field groups of entity %d", ErrMalformed, id)
		}
		vals := make([][]int64, len(groups))
		for g := range groups {
			if mask&(1<<g) != 0 {
				vals[g] = w.lay.readGroupValues(r, g, nil)
			}
		}
		s.fields[id] = vals
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: snapshot: %v", ErrMalformed, err)
	}
	return nil
}

// readInt32 reads a varint, clamped to an int32 (a position off the map
// is refused after).
func readInt32(r *codec.Reader) int32 {
	return int32(min(max(r.ReadVarint(), -1<<31), 1<<31-1))
}

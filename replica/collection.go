package replica

import (
	"fmt"
	"hash/fnv"
	"reflect"
	"slices"

	"github.com/tongbu/tongbu/codec"
)

// Record bodies (SPEC.md, "Replica protocol"), bit-packed with codec and
// padded to a byte:
//
//	full:  count uvarint, then per record in ascending ID order
//	       idGap uvarint, the record's EncodeFull
//	delta: count uvarint, then per record in ascending ID order
//	       idGap uvarint, deleted bit, and unless deleted the record's
//	       Encode against the receiver's copy (none for a new record)
//
// idGap is the first ID itself, then the difference from the previous ID
// minus one.

// sourceTable is the publisher side of one typed collection, seen through
// the non-generic methods the Publisher needs.
type sourceTable interface {
	hasPending() bool
	// closeDelta writes the pending changes as a delta body against the
	// records at the current version, applies them, and reports whether
	// any record changed.
	closeDelta(w *codec.Writer) bool
	// encodeFull writes the records at the current version as a full body.
	encodeFull(w *codec.Writer)
	// loadFull replaces the records with a full body (from the file).
	loadFull(r *codec.Reader, maxRecords int) error
}

// mirrorTable is the subscriber side of one typed collection.
type mirrorTable interface {
	encodeFull(w *codec.Writer)
	// loadFull replaces every record with the full body; on error nothing
	// changes.
	loadFull(r *codec.Reader, maxRecords int) error
	// applyDelta applies a delta body; on error nothing changes.
	applyDelta(r *codec.Reader, maxRecords int) error
}

// recordMap holds one collection's records, and encodes and decodes them.
type recordMap[T any, P codec.Record[T]] struct {
	recs map[uint64]*T
	ids  []uint64 // scratch for sorting
}

func (m *recordMap[T, P]) sortedIDs() []uint64 {
	m.ids = m.ids[:0]
	for id := range m.recs {
		m.ids = append(m.ids, id)
	}
	slices.Sort(m.ids)
	return m.ids
}

func (m *recordMap[T, P]) encodeFull(w *codec.Writer) {
	ids := m.sortedIDs()
	w.WriteUvarint(uint64(len(ids)))
	var prev uint64
	for i, id := range ids {
		writeGap(w, i, prev, id)
		P(m.recs[id]).EncodeFull(w)
		prev = id
	}
	w.AlignByte()
}

func writeGap(w *codec.Writer, i int, prev, id uint64) {
	if i == 0 {
		w.WriteUvarint(id)
	} else {
		w.WriteUvarint(id - prev - 1)
	}
}

// readID reads the i-th ID of a body, checking that IDs ascend.
func readID(r *codec.Reader, i int, prev uint64) (uint64, error) {
	g := r.ReadUvarint()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("record %d id: %w", i, err)
	}
	if i == 0 {
		return g, nil
	}
	if g >= ^uint64(0)-prev {
		return 0, fmt.Errorf("%w: record %d id gap %d after %d overflows", ErrMalformed, i, g, prev)
	}
	return prev + g + 1, nil
}

// readCount reads a record count and checks it against the cap and against
// the bits left (every record takes at least one bit).
func readCount(r *codec.Reader, maxRecords int) (int, error) {
	n := r.ReadUvarint()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("record count: %w", err)
	}
	if n > uint64(maxRecords) || n > uint64(r.Remaining()) {
		return 0, fmt.Errorf("%w: %d records (cap %d, %d bits left)", ErrMalformed, n, maxRecords, r.Remaining())
	}
	return int(n), nil
}

// finishBody reads the padding after a body and checks it is zero.
func finishBody(r *codec.Reader) error {
	r.AlignByte()
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: body: %v", ErrMalformed, err)
	}
	return nil
}

func (m *recordMap[T, P]) loadFull(r *codec.Reader, maxRecords int) error {
	n, err := readCount(r, maxRecords)
	if err != nil {
		return err
	}
	recs := make(map[uint64]*T, min(n, 1024))
	var prev uint64
	for i := range n {
		id, err := readID(r, i, prev)
		if err != nil {
			return err
		}
		v := new(T)
		if err := P(v).DecodeFull(r); err != nil {
			return fmt.Errorf("%w: record %d (id %d): %v", ErrMalformed, i, id, err)
		}
		recs[id] = v
		prev = id
	}
	if err := finishBody(r); err != nil {
		return err
	}
	m.recs = recs
	return nil
}

// deltaOp is one decoded change of a delta, held until the whole delta has
// decoded.
type deltaOp[T any] struct {
	id  uint64
	del bool
	v   *T
}

func (m *recordMap[T, P]) applyDelta(r *codec.Reader, maxRecords int) error {
	n, err := readCount(r, maxRecords)
	if err != nil {
		return err
	}
	ops := make([]deltaOp[T], 0, min(n, 1024))
	var prev uint64
	added := 0
	for i := range n {
		id, err := readID(r, i, prev)
		if err != nil {
			return err
		}
		prev = id
		base := m.recs[id]
		if r.ReadBool() {
			if base == nil {
				return fmt.Errorf("%w: delete of id %d, which the copy does not hold", codec.ErrNoBaseline, id)
			}
			ops = append(ops, deltaOp[T]{id: id, del: true})
			continue
		}
		v := new(T)
		if err := P(v).Decode(r, base); err != nil {
			if base == nil {
				return fmt.Errorf("record %d (id %d): %w", i, id, err)
			}
			return fmt.Errorf("%w: record %d (id %d): %v", ErrMalformed, i, id, err)
		}
		if base == nil {
			added++
		}
		ops = append(ops, deltaOp[T]{id: id, v: v})
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: delta: %v", ErrMalformed, err)
	}
	if err := finishBody(r); err != nil {
		return err
	}
	if len(m.recs)+added > maxRecords {
		return fmt.Errorf("%w: delta takes the copy to %d records, cap %d", ErrMalformed, len(m.recs)+added, maxRecords)
	}
	for _, op := range ops {
		if op.del {
			delete(m.recs, op.id)
		} else {
			m.recs[op.id] = op.v
		}
	}
	return nil
}

// schemaOf fingerprints a record type: its name and, for a struct, every
// field's name, type and tag, so that a peer built with another layout is
// told apart before it decodes garbage.
func schemaOf(t reflect.Type) string {
	s := t.String()
	if t.Kind() == reflect.Struct {
		for i := range t.NumField() {
			f := t.Field(i)
			s += fmt.Sprintf("|%s %s %q", f.Name, f.Type, f.Tag)
		}
	}
	return s
}

// schemaHash hashes the names and record fingerprints of collections in
// registration order.
func schemaHash(names, schemas []string) uint32 {
	h := fnv.New32a()
	for i := range names {
		fmt.Fprintf(h, "%s=%s;", names[i], schemas[i])
	}
	return h.Sum32()
}

// mayRegister says why a collection named name may not join colls (a
// publisher's or a subscriber's, named by nameOf), or nil: a bad name,
// after Start, over maxCollections, or a name taken.
func mayRegister[C any](name string, started bool, colls []C, nameOf func(C) string) error {
	if err := checkName("collection", name); err != nil {
		return err
	}
	switch {
	case started:
		return fmt.Errorf("%w: collection %q registered after Start", ErrConfig, name)
	case len(colls) >= maxCollections:
		return fmt.Errorf("%w: more than %d collections", ErrConfig, maxCollections)
	}
	for _, c := range colls {
		if nameOf(c) == name {
			return fmt.Errorf("%w: collection %q registered twice", ErrConfig, name)
		}
	}
	return nil
}

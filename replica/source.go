package replica

import (
	"fmt"
	"reflect"
	"slices"

	"github.com/tongbu/tongbu/codec"
)

// Source is one typed collection of a Publisher (the seed's guilds, or
// teams): records of type T keyed by uint64 IDs. Changes are pending until
// the next commit closes them into a delta.
type Source[T any, P codec.Record[T]] struct {
	p       *Publisher
	c       *pubColl
	m       recordMap[T, P]
	pending map[uint64]*T // nil value: deleted
}

// NewSource registers a collection named name (1 to 64 of [A-Za-z0-9_-])
// with the publisher. Collections are numbered in registration order, and
// subscribers must register the same names, with the same record types, in
// the same order. Register every collection before Start.
func NewSource[T any, P codec.Record[T]](p *Publisher, name string) (*Source[T, P], error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := mayRegister(name, p.started, p.colls, func(c *pubColl) string { return c.name }); err != nil {
		return nil, err
	}
	s := &Source[T, P]{p: p, m: recordMap[T, P]{recs: make(map[uint64]*T)}, pending: make(map[uint64]*T)}
	s.c = &pubColl{name: name, schema: schemaOf(reflect.TypeFor[T]()), t: s, ring: make([]ringSlot, p.cfg.Ring)}
	p.colls = append(p.colls, s.c)
	return s, nil
}

// Set makes v the record id holds, from the next commit on. It fails, and
// changes nothing, when a field of v lies outside the range its codec tag
// declares. The publisher keeps v: do not modify its slices afterwards.
func (s *Source[T, P]) Set(id uint64, v T) error {
	var w codec.Writer
	w.Measure()
	P(&v).EncodeFull(&w)
	if err := w.Err(); err != nil {
		return fmt.Errorf("replica: collection %q id %d: %w", s.c.name, id, err)
	}
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.pending[id] = &v
	return nil
}

// Delete removes record id from the next commit on (a guild disbanded).
func (s *Source[T, P]) Delete(id uint64) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	s.pending[id] = nil
}

// Get returns the record id holds, pending changes included.
func (s *Source[T, P]) Get(id uint64) (T, bool) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	v, ok := s.pending[id]
	if !ok {
		v = s.m.recs[id]
	}
	if v == nil {
		var zero T
		return zero, false
	}
	return *v, true
}

// Len returns the number of records, pending changes included.
func (s *Source[T, P]) Len() int {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	n := len(s.m.recs)
	for id, v := range s.pending {
		_, had := s.m.recs[id]
		switch {
		case v == nil && had:
			n--
		case v != nil && !had:
			n++
		}
	}
	return n
}

// Range calls fn for every record, pending changes included, in no
// particular order, until fn returns false. fn must not call into the
// publisher.
func (s *Source[T, P]) Range(fn func(id uint64, v T) bool) {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	for id, v := range s.m.recs {
		if pv, ok := s.pending[id]; ok {
			if pv == nil {
				continue
			}
			v = pv
		}
		if !fn(id, *v) {
			return
		}
	}
	for id, v := range s.pending {
		if _, had := s.m.recs[id]; had || v == nil {
			continue
		}
		if !fn(id, *v) {
			return
		}
	}
}

// Version returns the collection's version: the number of the last delta
// closed (0 before the first).
func (s *Source[T, P]) Version() uint64 {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.c.ver
}

func (s *Source[T, P]) hasPending() bool { return len(s.pending) > 0 }

func (s *Source[T, P]) closeDelta(w *codec.Writer) bool {
	ids := make([]uint64, 0, len(s.pending))
	for id, v := range s.pending {
		old := s.m.recs[id]
		if v == nil && old == nil || v != nil && old != nil && P(v).DirtyMask(old) == 0 {
			continue // no change
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	w.WriteUvarint(uint64(len(ids)))
	var prev uint64
	for i, id := range ids {
		writeGap(w, i, prev, id)
		prev = id
		v, old := s.pending[id], s.m.recs[id]
		w.WriteBool(v == nil)
		if v != nil {
			P(v).Encode(w, old)
		}
	}
	w.AlignByte()
	for id, v := range s.pending {
		if v == nil {
			delete(s.m.recs, id)
		} else {
			s.m.recs[id] = v
		}
	}
	clear(s.pending)
	return len(ids) > 0
}

func (s *Source[T, P]) encodeFull(w *codec.Writer) { s.m.encodeFull(w) }

func (s *Source[T, P]) loadFull(r *codec.Reader, maxRecords int) error {
	return s.m.loadFull(r, maxRecords)
}

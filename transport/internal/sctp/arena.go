package sctp

// The reliable messages' bytes: SendOrdered keeps the copy that
// retransmission needs, and only that one, in slabs that are used again
// once every byte in them is acknowledged, so that a steady stream of
// reliable messages allocates nothing.

// slabSize is a slab's size; a larger message gets a slab of its own.
const slabSize = 4 << 10

// maxFreeSlabs bounds the slabs kept for reuse.
const maxFreeSlabs = 4

// slab holds messages' bytes; live counts those not yet acknowledged.
type slab struct {
	buf  []byte
	live int
}

// arena hands out room for messages from its current slab.
type arena struct {
	cur  *slab
	free []*slab
}

// put copies msg into the arena and returns the copy and its slab.
func (r *arena) put(msg []byte) ([]byte, *slab) {
	if r.cur == nil || cap(r.cur.buf)-len(r.cur.buf) < len(msg) {
		switch {
		case r.cur != nil && r.cur.live == 0 && cap(r.cur.buf) >= len(msg):
			r.cur.buf = r.cur.buf[:0]
		default:
			r.cur = r.take(len(msg))
		}
	}
	s := r.cur
	start := len(s.buf)
	s.buf = append(s.buf, msg...)
	s.live += len(msg)
	return s.buf[start:len(s.buf):len(s.buf)], s
}

// take returns an empty slab with room for n bytes.
func (r *arena) take(n int) *slab {
	for i := len(r.free) - 1; i >= 0; i-- {
		if s := r.free[i]; cap(s.buf) >= n {
			r.free[i] = r.free[len(r.free)-1]
			r.free[len(r.free)-1] = nil
			r.free = r.free[:len(r.free)-1]
			return s
		}
	}
	return &slab{buf: make([]byte, 0, max(slabSize, n))}
}

// release gives back n acknowledged bytes of s; a slab whose bytes are
// all acknowledged is kept for reuse (the current one stays current).
func (r *arena) release(s *slab, n int) {
	if s == nil {
		return
	}
	s.live -= n
	if s.live > 0 || s == r.cur {
		return
	}
	s.buf = s.buf[:0]
	if len(r.free) < maxFreeSlabs {
		r.free = append(r.free, s)
	}
}

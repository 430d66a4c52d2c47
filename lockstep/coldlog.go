package lockstep

import (
	"github.com/tongbu/tongbu/codec"
)

// hotFrames is how many of the newest frames a room keeps whole (the
// Frame, its slots and both encoded bodies): between hotFrames and twice
// as many, 17 to 34 s at 15 Hz. Older frames keep only their body in
// full, back to back, a few bytes each: a long match's log grows by
// kilobytes a minute rather than megabytes an hour (bench room-idle).
// Live play, redundancy and retransmission touch hot frames; a catch-up,
// a late replay or a server simulation that fell far behind decodes cold
// ones on demand.
const hotFrames = 256

// coldLog holds the room's frames older than the hot window as their
// full bodies, back to back in fixed-size chunks (no slice doubling, so no
// capacity held beyond the last chunk), with each body's length in bits
// and, every coldIndexEvery frames, where its body starts: about 2 bytes
// a frame besides the body.
type coldLog struct {
	chunks [][]byte   // coldChunk bytes each; a body never spans two
	bits   [][]uint16 // coldChunk/2 lengths each
	index  []coldPos  // where frame i*coldIndexEvery starts
	n      int
}

const (
	coldChunk      = 64 << 10
	coldIndexEvery = 64
)

type coldPos struct{ chunk, off uint32 }

func (c *coldLog) len() int { return c.n }

func (c *coldLog) add(body []byte, bits int) {
	if len(c.chunks) == 0 || len(c.chunks[len(c.chunks)-1])+len(body) > coldChunk {
		c.chunks = append(c.chunks, make([]byte, 0, max(coldChunk, len(body))))
	}
	last := len(c.chunks) - 1
	if c.n%coldIndexEvery == 0 {
		// Where the walk in body starts: this body's chunk, or the one
		// before when it opened a new one (the walk moves on by itself).
		c.index = append(c.index, coldPos{uint32(last), uint32(len(c.chunks[last]))})
	}
	c.chunks[last] = append(c.chunks[last], body...)
	if c.n%(coldChunk/2) == 0 {
		c.bits = append(c.bits, make([]uint16, 0, coldChunk/2))
	}
	c.bits[len(c.bits)-1] = append(c.bits[len(c.bits)-1], uint16(bits))
	c.n++
}

func (c *coldLog) bitsOf(n int) int { return int(c.bits[n/(coldChunk/2)][n%(coldChunk/2)]) }

// body returns frame n's full body. It walks from the index entry before
// n, placing each body as add did: in the current chunk, or at the start
// of the next when it would not fit.
func (c *coldLog) body(n int) ([]byte, int) {
	i := n / coldIndexEvery
	chunk, off := int(c.index[i].chunk), int(c.index[i].off)
	for k := i * coldIndexEvery; ; k++ {
		bits := c.bitsOf(k)
		size := (bits + 7) / 8
		if off+size > coldChunk {
			chunk, off = chunk+1, 0
		}
		if k == n {
			return c.chunks[chunk][off : off+size], bits
		}
		off += size
	}
}

// bytes returns what the log holds, for tests and benchmarks.
func (c *coldLog) bytes() int {
	n := 0
	for _, ch := range c.chunks {
		n += cap(ch)
	}
	return n + 2*c.n + 8*len(c.index)
}

// hot returns the cut frame n when it is in the hot window, else nil.
func (r *Room) hot(n int) *cutFrame {
	if n < r.cold.len() || n >= r.next {
		return nil
	}
	return &r.frames[n-r.cold.len()]
}

// frameAt returns frame n: the hot frame itself, or a cold one decoded
// (a new Frame each call).
func (r *Room) frameAt(n int) *Frame {
	if cf := r.hot(n); cf != nil {
		return &cf.Frame
	}
	body, bits := r.cold.body(n)
	rd := codec.NewReader(body)
	f, err := decodeFrameBody(rd, n, len(r.players), nil)
	if err != nil || rd.Pos() > bits {
		// The room encoded it: this cannot happen short of memory
		// corruption.
		panic("lockstep: a cold frame does not decode: " + errString(err))
	}
	return &f
}

func errString(err error) string {
	if err == nil {
		return "bit count"
	}
	return err.Error()
}

// coldBody returns cold frame n's body, in full or relative to the frame
// before (encoded now, into a buffer reused by the next call).
func (r *Room) coldBody(n int, full bool) ([]byte, int) {
	if full || n == 0 {
		return r.cold.body(n)
	}
	cur, prev := r.frameAt(n), r.frameAt(n-1)
	w := &r.w2
	w.Reset(r.buf2[:0])
	encodeFrameBody(w, cur, prev)
	r.buf2 = w.Bytes()[:0]
	return w.Bytes(), w.Len()
}

// cool moves the oldest hot frames to the cold log once the hot window is
// twice its size, and lets their slots, inputs and encoded bodies go.
func (r *Room) cool() {
	if len(r.frames) < 2*hotFrames {
		return
	}
	for i := range hotFrames {
		cf := &r.frames[i]
		r.cold.add(cf.full, cf.fullBits)
	}
	n := copy(r.frames, r.frames[hotFrames:])
	clear(r.frames[n:])
	// A new backing array: the old one's head would keep its size.
	r.frames = append(make([]cutFrame, 0, 2*hotFrames), r.frames[:n]...)
}

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

// frameLog is the match's frame log, which the room keeps whole: the
// newest frames hot (whole, with both encoded bodies), the older ones in
// the cold log (full bodies only).
type frameLog struct {
	frames  []cutFrame // the hot window: frames cold.len() .. cold.len()+len(frames)-1
	cold    coldLog    // frames 0 .. cold.len()-1, bodies only
	players int        // slots per frame, to decode cold frames
	mem     *arena     // the room's arena, where relative bodies are kept

	w2   codec.Writer // relative encodings, made while the room's writer holds a packet
	buf2 []byte
}

// newFrameLog returns an empty log of frames of players slots, keeping
// its encodings in mem.
func newFrameLog(players int, mem *arena) frameLog {
	return frameLog{players: players, mem: mem}
}

// add appends a frame just cut, the log's next.
func (l *frameLog) add(f cutFrame) {
	l.frames = append(l.frames, f)
}

// hot returns the cut frame n when it is in the hot window, else nil.
func (l *frameLog) hot(n int) *cutFrame {
	i := n - l.cold.len()
	if i < 0 || i >= len(l.frames) {
		return nil
	}
	return &l.frames[i]
}

// frameAt returns frame n: the hot frame itself, or a cold one decoded
// (a new Frame each call).
func (l *frameLog) frameAt(n int) *Frame {
	if cf := l.hot(n); cf != nil {
		return &cf.Frame
	}
	body, bits := l.cold.body(n)
	rd := codec.NewReader(body)
	f, err := ReadFrame(rd, n, l.players, nil)
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

// body returns frame n's body, in full or relative to the frame before.
func (l *frameLog) body(n int, full bool) ([]byte, int) {
	cf := l.hot(n)
	if cf == nil {
		return l.coldBody(n, full)
	}
	if full {
		return cf.full, cf.fullBits
	}
	l.ensureRel(cf)
	return cf.rel, cf.relBits
}

// ensureRel encodes a cut frame relative to the frame before, unless that
// is done already.
func (l *frameLog) ensureRel(cf *cutFrame) {
	if cf.relBits != 0 {
		return
	}
	var prev *Frame
	if n := cf.Number; n > 0 {
		prev = l.frameAt(n - 1)
	}
	w := &l.w2
	w.Reset(l.buf2[:0])
	encodeFrameBody(w, &cf.Frame, prev)
	cf.relBits = w.Len()
	cf.rel = l.mem.keep(w.Bytes())
	l.buf2 = w.Bytes()[:0]
}

// coldBody returns cold frame n's body, in full or relative to the frame
// before (encoded now, into a buffer reused by the next call).
func (l *frameLog) coldBody(n int, full bool) ([]byte, int) {
	if full || n == 0 {
		return l.cold.body(n)
	}
	cur, prev := l.frameAt(n), l.frameAt(n-1)
	w := &l.w2
	w.Reset(l.buf2[:0])
	encodeFrameBody(w, cur, prev)
	l.buf2 = w.Bytes()[:0]
	return w.Bytes(), w.Len()
}

// encoded returns frame n with both its bodies encoded: the hot frame
// itself, or for a cold one tmp filled with its bodies (the relative one
// valid until the log's next encoding).
func (l *frameLog) encoded(n int, tmp *cutFrame) *cutFrame {
	cf := l.hot(n)
	if cf == nil {
		*tmp = cutFrame{Frame: Frame{Number: n}}
		tmp.full, tmp.fullBits = l.cold.body(n)
		tmp.rel, tmp.relBits = l.coldBody(n, false)
		return tmp
	}
	l.ensureRel(cf)
	return cf
}

// cool moves the oldest hot frames to the cold log once the hot window is
// twice its size, and lets their slots, inputs and encoded bodies go.
func (l *frameLog) cool() {
	if len(l.frames) < 2*hotFrames {
		return
	}
	for i := range hotFrames {
		cf := &l.frames[i]
		l.cold.add(cf.full, cf.fullBits)
	}
	n := copy(l.frames, l.frames[hotFrames:])
	clear(l.frames[n:])
	// A new backing array: the old one's head would keep its size.
	l.frames = append(make([]cutFrame, 0, 2*hotFrames), l.frames[:n]...)
}

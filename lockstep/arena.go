package lockstep

import "github.com/tongbu/tongbu/codec"

// arenaChunk is the largest of the byte slabs inputs and frame encodings
// are kept in; the first is firstArenaChunk, and each after it twice the
// one before.
const (
	arenaChunk      = 64 << 10
	firstArenaChunk = 2 << 10
)

// Slab sizes, in frames: the first, and the largest (each slab after the
// first is twice the one before).
const (
	firstSlabFrames = 64
	maxSlabFrames   = 1024
)

// arena is where a room keeps its match: the inputs and frame encodings
// in byte slabs, the frames' slots and input lists in slabs of their own.
// The match's frames live in slabs, allocated a few thousand frames at
// a time (fewer at first, doubling), so cutting a frame allocates
// nothing in the steady state and a short match holds little memory.
type arena struct {
	bytes    []byte
	slotSlab []Slot
	inSlab   [][]byte
}

// keep copies b into the arena and returns the copy.
func (a *arena) keep(b []byte) []byte {
	a.room(len(b))
	start := len(a.bytes)
	a.bytes = append(a.bytes, b...)
	return a.bytes[start:len(a.bytes):len(a.bytes)]
}

// read reads a byte string of at most maxLen bytes (codec's WriteBytes)
// from r into the arena and returns it.
func (a *arena) read(r *codec.Reader, maxLen int) []byte {
	a.room(maxLen)
	start := len(a.bytes)
	a.bytes = r.ReadBytes(a.bytes, maxLen)
	return a.bytes[start:len(a.bytes):len(a.bytes)]
}

// room makes sure the byte slab has n bytes free.
func (a *arena) room(n int) {
	if cap(a.bytes)-len(a.bytes) < n {
		size := firstArenaChunk
		if a.bytes != nil {
			size = min(2*cap(a.bytes), arenaChunk)
		}
		a.bytes = make([]byte, 0, max(size, n))
	}
}

// slabFrames returns how many frames the next slab holds when the room is
// about to cut frame next: firstSlabFrames at first, twice as many with
// each slab, at most maxSlabFrames.
func slabFrames(next int) int {
	return min(max(firstSlabFrames, next), maxSlabFrames)
}

// slots returns n zeroed slots from the slab, for frame next.
func (a *arena) slots(n, next int) []Slot {
	if len(a.slotSlab) < n {
		a.slotSlab = make([]Slot, slabFrames(next)*n)
	}
	s := a.slotSlab[:n:n]
	a.slotSlab = a.slotSlab[n:]
	return s
}

// inputSlice returns a slice for n inputs from the slab, for frame next.
func (a *arena) inputSlice(n, next int) [][]byte {
	if len(a.inSlab) < n {
		a.inSlab = make([][]byte, max(4*slabFrames(next), n))
	}
	s := a.inSlab[:n:n]
	a.inSlab = a.inSlab[n:]
	return s
}

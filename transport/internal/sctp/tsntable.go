package sctp

import (
	"crypto/rand"
	"encoding/binary"
)

// tsnTable finds a held chunk's index in the slab by its TSN: open
// addressing with linear probing, and deletion by shifting the entries
// after a removed one back (no tombstones), so that a peer whose chunks
// come and go forever never makes a lookup, an insertion or a removal
// longer, and no operation rebuilds the table. Slots are placed by a
// hash with a random key of the association's, so a peer cannot choose
// TSNs that pile into one run of slots.
type tsnTable struct {
	slots []tsnSlot // a power of two long, at most half full
	shift uint8     // 32 - log2(len(slots))
	key   uint32
}

// tsnSlot is one slot: a TSN and its index in the slab plus one (0: the
// slot is empty).
type tsnSlot struct {
	tsn uint32
	idx int32
}

// tsnTableMax is the table's size when it holds the most chunks allowed:
// twice that, rounded up to a power of two.
const tsnTableMax = 1024

func (t *tsnTable) init(size int) {
	t.slots = make([]tsnSlot, size)
	t.shift = 32
	for n := size; n > 1; n >>= 1 {
		t.shift--
	}
	if t.key == 0 {
		var b [4]byte
		rand.Read(b[:])
		t.key = binary.LittleEndian.Uint32(b[:]) | 1 // never 0: 0 is "not drawn"
	}
}

// home is tsn's first slot: the key mixed in, then MurmurHash3's
// finalizer, so that neighbouring TSNs land anywhere.
func (t *tsnTable) home(tsn uint32) int {
	x := tsn ^ t.key
	x ^= x >> 16
	x *= 0x85ebca6b
	x ^= x >> 13
	x *= 0xc2b2ae35
	x ^= x >> 16
	return int(x >> t.shift)
}

// get returns the index stored for tsn and the probes it took.
func (t *tsnTable) get(tsn uint32) (int32, bool, int) {
	if len(t.slots) == 0 {
		return 0, false, 0
	}
	mask := len(t.slots) - 1
	for i, n := t.home(tsn), 1; ; i, n = (i+1)&mask, n+1 {
		s := t.slots[i]
		if s.idx == 0 {
			return 0, false, n
		}
		if s.tsn == tsn {
			return s.idx - 1, true, n
		}
	}
}

// put stores idx for tsn, which is not in the table; the caller keeps
// the table at most half full.
func (t *tsnTable) put(tsn uint32, idx int32) int {
	mask := len(t.slots) - 1
	for i, n := t.home(tsn), 1; ; i, n = (i+1)&mask, n+1 {
		if t.slots[i].idx == 0 {
			t.slots[i] = tsnSlot{tsn, idx + 1}
			return n
		}
	}
}

// del removes tsn and returns the probes it took.
func (t *tsnTable) del(tsn uint32) int {
	if len(t.slots) == 0 {
		return 0
	}
	mask := len(t.slots) - 1
	i, n := t.home(tsn), 1
	for ; t.slots[i].tsn != tsn || t.slots[i].idx == 0; i, n = (i+1)&mask, n+1 {
		if t.slots[i].idx == 0 {
			return n
		}
	}
	// Shift back the entries of the run after i that may not stay past
	// the hole (their home is at or before it, cyclically).
	for j := (i + 1) & mask; t.slots[j].idx != 0; j, n = (j+1)&mask, n+1 {
		h := t.home(t.slots[j].tsn)
		if (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = tsnSlot{}
	return n
}

// grow moves the entries into a table of size slots.
func (t *tsnTable) grow(size int) {
	old := t.slots
	t.init(size)
	for _, s := range old {
		if s.idx != 0 {
			t.put(s.tsn, s.idx-1)
		}
	}
}

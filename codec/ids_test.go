package codec_test

import (
	"errors"
	"math"
	"math/bits"
	"slices"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

// sortedIDs returns n distinct IDs below limit (or the full uint32 range
// when limit is 0), sorted.
func sortedIDs(seed uint64, n int, limit uint32) []uint32 {
	rng := newRand(seed)
	set := make(map[uint32]bool, n)
	for len(set) < n {
		if limit == 0 {
			set[rng.Uint32()] = true
		} else {
			set[rng.Uint32N(limit)] = true
		}
	}
	ids := make([]uint32, 0, n)
	for id := range set {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func seq(from uint32, n int, step uint32) []uint32 {
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = from + uint32(i)*step
	}
	return ids
}

// golombLen is the length of x in Exp-Golomb code of order k, computed
// independently of the package.
func golombLen(x uint64, k uint) int {
	// y = x + 2^k has n bits; the code is n-1-k zeros, a one, and n-1 bits.
	n := bits.Len64(x + 1<<k)
	return (n - 1 - int(k)) + 1 + (n - 1)
}

// bestGapBits is the cheapest encoding of the gaps of ids over every
// order the format can carry.
func bestGapBits(ids []uint32) int {
	best := -1
	for k := uint(0); k <= 31; k++ {
		c := 0
		for i := 1; i < len(ids); i++ {
			c += golombLen(uint64(ids[i]-ids[i-1]-1), k)
		}
		if best < 0 || c < best {
			best = c
		}
	}
	return best
}

func idLists() map[string][]uint32 {
	return map[string][]uint32{
		"empty":        {},
		"single zero":  {0},
		"single":       {12345},
		"single max":   {math.MaxUint32},
		"pair extreme": {0, math.MaxUint32},
		"top three":    {math.MaxUint32 - 2, math.MaxUint32 - 1, math.MaxUint32},
		"dense":        seq(0, 1000, 1),
		"dense offset": seq(1<<31, 500, 1),
		"step 2":       seq(7, 300, 2),
		"sparse":       seq(3, 100, 40_000_003),
		"random small": sortedIDs(10, 200, 1000),
		"random wide":  sortedIDs(11, 300, 0),
		"random mid":   sortedIDs(12, 1000, 1<<20),
		"clustered":    append(append(seq(100, 50, 1), seq(1_000_000, 50, 1)...), seq(3_000_000_000, 50, 3)...),
	}
}

func TestIDsRoundTrip(t *testing.T) {
	for name, ids := range idLists() {
		for _, off := range []int{0, 3} {
			for _, maxCount := range []int{len(ids), len(ids) + 1, 4096} {
				w := codec.NewWriter(nil)
				w.WriteBits(0, off)
				w.WriteIDs(ids, maxCount)
				w.WriteBits(0x2a, 7) // a marker after the list
				if err := w.Err(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if got, want := w.Len()-off-7, codec.IDsBits(ids, maxCount); got != want {
					t.Fatalf("%s (max %d): wrote %d bits, IDsBits says %d", name, maxCount, got, want)
				}
				var m codec.Writer
				m.Measure()
				m.WriteIDs(ids, maxCount)
				if m.Len() != codec.IDsBits(ids, maxCount) {
					t.Fatalf("%s: measured %d bits, IDsBits %d", name, m.Len(), codec.IDsBits(ids, maxCount))
				}
				r := codec.NewReader(w.Bytes())
				r.ReadBits(off)
				prefix := []uint32{42}
				got := r.ReadIDs(prefix, maxCount)
				if got[0] != 42 || !slices.Equal(got[1:], ids) {
					t.Fatalf("%s: read %v, want [42] + %v", name, got, ids)
				}
				if r.ReadBits(7) != 0x2a {
					t.Fatalf("%s: marker after the list is wrong", name)
				}
				if err := r.Done(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			}
		}
	}
}

func TestIDsRandomRoundTrip(t *testing.T) {
	rng := newRand(13)
	for i := range 500 {
		n := rng.IntN(300)
		var limit uint32
		if rng.IntN(4) > 0 {
			limit = uint32(n) + rng.Uint32N(1<<uint(rng.IntN(31)+1))
		}
		ids := sortedIDs(uint64(100+i), n, limit)
		w := codec.NewWriter(nil)
		w.WriteIDs(ids, 300)
		if w.Err() != nil || w.Len() != codec.IDsBits(ids, 300) {
			t.Fatalf("list %d: err %v, %d bits, IDsBits %d", i, w.Err(), w.Len(), codec.IDsBits(ids, 300))
		}
		r := codec.NewReader(w.Bytes())
		if got := r.ReadIDs(nil, 300); !slices.Equal(got, ids) || r.Done() != nil {
			t.Fatalf("list %d: read %v (%v), want %v", i, got, r.Err(), ids)
		}
	}
}

func TestIDsEmptyCostsOnlyTheCount(t *testing.T) {
	for _, maxCount := range []int{0, 1, 7, 8, 1000} {
		w := codec.NewWriter(nil)
		w.WriteIDs(nil, maxCount)
		if w.Len() != bits.Len(uint(maxCount)) || codec.IDsBits(nil, maxCount) != w.Len() {
			t.Fatalf("max %d: empty list took %d bits", maxCount, w.Len())
		}
		r := codec.NewReader(w.Bytes())
		if got := r.ReadIDs(nil, maxCount); got != nil || r.Done() != nil {
			t.Fatalf("max %d: read %v, %v", maxCount, got, r.Err())
		}
	}
}

func TestIDsDenseCostAtMostTwoBitsEach(t *testing.T) {
	for _, tc := range []struct {
		from uint32
		n    int
	}{{0, 2}, {0, 100}, {5000, 1000}, {math.MaxUint32 - 4999, 5000}} {
		ids := seq(tc.from, tc.n, 1)
		overhead := bits.Len(uint(tc.n)) + 5 + codec.UvarintBits(uint64(tc.from))
		got := codec.IDsBits(ids, tc.n)
		if per := got - overhead; per > 2*(tc.n-1) {
			t.Errorf("%d consecutive IDs from %d: %d bits after the first, over 2 per ID", tc.n, tc.from, per)
		}
	}
	// Mostly dense with holes: still at most 2 bits an ID after the first.
	ids := seq(0, 2000, 1)
	ids = slices.DeleteFunc(ids, func(id uint32) bool { return id%10 == 3 })
	overhead := bits.Len(4096) + 5 + 8
	if per := codec.IDsBits(ids, 4096) - overhead; per > 2*(len(ids)-1) {
		t.Errorf("90%% dense list: %d bits for %d gaps", per, len(ids)-1)
	}
}

// TestIDsOrderNearOptimal checks the encoder's choice of Exp-Golomb order
// against every order, for lists whose gaps are uniformly spread.
func TestIDsOrderNearOptimal(t *testing.T) {
	rng := newRand(14)
	for i := range 300 {
		n := 2 + rng.IntN(500)
		limit := uint32(n) * (1 + rng.Uint32N(1<<uint(rng.IntN(20))))
		ids := sortedIDs(uint64(1000+i), n, limit)
		overhead := bits.Len(1024) + 5 + codec.UvarintBits(uint64(ids[0]))
		got := codec.IDsBits(ids, 1024) - overhead
		best := bestGapBits(ids)
		if got < best {
			t.Fatalf("list %d: IDsBits reports %d gap bits, below the optimum %d", i, got, best)
		}
		if float64(got) > 1.03*float64(best)+2 {
			t.Errorf("list %d (%d IDs below %d): %d gap bits, best order gives %d", i, n, limit, got, best)
		}
	}
}

func TestWriteIDsRejectsUnsorted(t *testing.T) {
	for _, ids := range [][]uint32{{2, 1}, {1, 1}, {1, 2, 3, 3}, {5, 9, 7}, {math.MaxUint32, 0}} {
		w := codec.NewWriter(nil)
		w.WriteIDs(ids, 16)
		wantErr(t, w.Err(), codec.ErrOutOfRange)
		if w.Len() != bits.Len(16) {
			t.Fatalf("%v: wrote %d bits, want an empty list (%d)", ids, w.Len(), bits.Len(16))
		}
		r := codec.NewReader(w.Bytes())
		if got := r.ReadIDs(nil, 16); len(got) != 0 || r.Done() != nil {
			t.Fatalf("%v: read back %v, %v", ids, got, r.Err())
		}
	}
}

func TestIDsOverMaxCount(t *testing.T) {
	w := codec.NewWriter(nil)
	w.WriteIDs([]uint32{1, 2, 3, 4, 5}, 4)
	wantErr(t, w.Err(), codec.ErrTooLong)
	if w.Len() != bits.Len(4) {
		t.Fatalf("wrote %d bits, want an empty list", w.Len())
	}
	w = codec.NewWriter(nil)
	w.WriteIDs(nil, -1)
	wantErr(t, w.Err(), codec.ErrInvalid)

	// A count above maxCount on the wire.
	w = codec.NewWriter(nil)
	w.WriteBits(9, bits.Len(8))
	w.WriteBits(0, 64)
	r := codec.NewReader(w.Bytes())
	if got := r.ReadIDs(nil, 8); got != nil {
		t.Fatalf("read %v", got)
	}
	wantErr(t, r.Err(), codec.ErrTooLong)

	r = codec.NewReader([]byte{0})
	r.ReadIDs(nil, -1)
	wantErr(t, r.Err(), codec.ErrInvalid)
}

// idsHeader writes an ID list header by hand: count, order, first ID.
func idsHeader(count uint64, maxCount int, k uint64, first uint64) *codec.Writer {
	w := codec.NewWriter(nil)
	w.WriteBits(count, bits.Len(uint(maxCount)))
	w.WriteBits(k, 5)
	w.WriteUvarint(first)
	return w
}

func TestReadIDsHostileCount(t *testing.T) {
	const maxCount = 1 << 24
	in := idsHeader(maxCount, maxCount, 0, 1).Bytes()
	in = append(in, 0xff, 0xff) // 16 more one-bit gaps, then nothing
	small := idsHeader(1000, maxCount, 0, 1).Bytes()
	small = append(small, 0xff, 0xff)
	var r codec.Reader
	read := func(b []byte) func() {
		return func() {
			r.Reset(b)
			if got := r.ReadIDs(nil, maxCount); got != nil {
				panic("ReadIDs returned IDs for a truncated list")
			}
			if !errors.Is(r.Err(), codec.ErrTruncated) {
				panic(r.Err())
			}
		}
	}
	read(in)()
	big := testing.AllocsPerRun(100, read(in))
	base := testing.AllocsPerRun(100, read(small))
	if big > base+2 || big > 20 { // a little slack for sync.Pool under -race
		t.Errorf("count %d made %v allocations, count 1000 made %v", maxCount, big, base)
	}
	if total := allocBytes(100, read(in)); total > 256<<10 {
		t.Errorf("100 hostile ReadIDs allocated %d bytes", total)
	}
}

func TestReadIDsGapOverflow(t *testing.T) {
	// First ID at the top, then a gap of 0: the next ID would be 2^32.
	w := idsHeader(2, 4, 0, math.MaxUint32)
	w.WriteBits(1, 1) // Exp-Golomb 0 in order 0
	r := codec.NewReader(w.Bytes())
	got := r.ReadIDs(nil, 4)
	wantErr(t, r.Err(), codec.ErrOutOfRange)
	if len(got) > 1 || (len(got) == 1 && got[0] != math.MaxUint32) {
		t.Fatalf("read %v", got)
	}

	// A first ID that does not fit in 32 bits.
	w = idsHeader(1, 4, 0, 1<<32)
	r = codec.NewReader(w.Bytes())
	if got := r.ReadIDs(nil, 4); got != nil {
		t.Fatalf("read %v", got)
	}
	wantErr(t, r.Err(), codec.ErrOutOfRange)

	// The longest prefix the reader accepts for order 31 (2 zeros) with
	// all-ones value bits: a 34-bit code whose value overflows 32 bits.
	w = idsHeader(2, 4, 31, 0)
	w.WriteBits(0b100, 3)
	w.WriteBits(math.MaxUint64, 33)
	r = codec.NewReader(w.Bytes())
	r.ReadIDs(nil, 4)
	wantErr(t, r.Err(), codec.ErrOutOfRange)

	// The largest gap that fits still decodes.
	w = idsHeader(2, 4, 0, 0)
	// gap-1 = 2^32-2: y = 2^32-1, 32 bits: 31 zeros, a one, 31 ones.
	w.WriteBits(1<<31, 32)
	w.WriteBits(1<<31-1, 31)
	r = codec.NewReader(w.Bytes())
	if got := r.ReadIDs(nil, 4); !slices.Equal(got, []uint32{0, math.MaxUint32}) || r.Done() != nil {
		t.Fatalf("read %v, %v", got, r.Err())
	}
}

func TestReadIDsLongZeroRun(t *testing.T) {
	for _, k := range []uint64{0, 5, 31} {
		w := idsHeader(3, 4, k, 10)
		w.WriteBits(0, 64)
		in := append(w.Bytes(), make([]byte, 1<<20)...) // a megabyte of zeros
		r := codec.NewReader(in)
		got := r.ReadIDs(nil, 4)
		wantErr(t, r.Err(), codec.ErrOutOfRange)
		if len(got) > 1 {
			t.Fatalf("k=%d: read %v from a zero run", k, got)
		}
	}
	// A zero run that reaches the end of the input is a truncation.
	w := idsHeader(3, 4, 0, 10)
	w.WriteBits(0, 20)
	r := codec.NewReader(w.Bytes())
	r.ReadIDs(nil, 4)
	wantErr(t, r.Err(), codec.ErrTruncated)
}

func TestReadIDsStrictlyIncreasingOnGarbage(t *testing.T) {
	rng := newRand(15)
	buf := make([]byte, 256)
	for range 5000 {
		for i := range buf {
			buf[i] = byte(rng.Uint32())
		}
		r := codec.NewReader(buf[:rng.IntN(len(buf))])
		got := r.ReadIDs(nil, 1+rng.IntN(1000))
		for i := 1; i < len(got); i++ {
			if got[i] <= got[i-1] {
				t.Fatalf("IDs not increasing: %v", got)
			}
		}
	}
}

// TestIDsPickBestOrder checks the encoder's order against every order, on
// lists whose mean gap misleads: blocks of consecutive IDs far apart.
func TestIDsPickBestOrder(t *testing.T) {
	var clustered []uint32
	for b := range 20 {
		for i := range 30 {
			clustered = append(clustered, uint32(b*100000+i))
		}
	}
	lists := [][]uint32{clustered, {1, 2, 3, 1000000, 1000001, 1000002}}
	for _, ids := range lists {
		best := -1
		for k := range 32 {
			cost := 0
			for i := 1; i < len(ids); i++ {
				x := uint64(ids[i] - ids[i-1] - 1)
				cost += 2*bits.Len64(x+1<<k) - 1 - k
			}
			if best < 0 || cost < best {
				best = cost
			}
		}
		want := bits.Len(uint(len(ids))) + 5 + codec.UvarintBits(uint64(ids[0])) + best
		if got := codec.IDsBits(ids, len(ids)); got != want {
			t.Errorf("%d IDs: %d bits, the best order gives %d", len(ids), got, want)
		}
	}
}

package codec_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) }

func mask(n int) uint64 {
	if n >= 64 {
		return math.MaxUint64
	}
	return 1<<uint(n) - 1
}

// wantErr fails the test unless err wraps target.
func wantErr(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("error = %v, want %v", err, target)
	}
}

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// allocBytes returns the bytes allocated by calling f n times.
func allocBytes(n int, f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		f()
	}
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestBitsEveryWidthAtEveryOffset(t *testing.T) {
	rng := newRand(1)
	for off := 0; off < 64; off++ {
		for width := 0; width <= 64; width++ {
			for _, v := range []uint64{0, math.MaxUint64, rng.Uint64(), 1, 1 << 63} {
				w := codec.NewWriter(nil)
				prefix := rng.Uint64() & mask(off)
				w.WriteBits(prefix, off)
				w.WriteBits(v, width) // high bits above width are ignored
				w.WriteBits(0x5, 3)   // a marker after the field
				noErr(t, w.Err())
				if got, want := w.Len(), off+width+3; got != want {
					t.Fatalf("off %d width %d: Len = %d, want %d", off, width, got, want)
				}
				b := w.Bytes()
				if len(b) != (off+width+3+7)/8 {
					t.Fatalf("off %d width %d: %d bytes for %d bits", off, width, len(b), off+width+3)
				}
				r := codec.NewReader(b)
				if got := r.ReadBits(off); got != prefix {
					t.Fatalf("off %d: prefix %#x, want %#x", off, got, prefix)
				}
				if got := r.ReadBits(width); got != v&mask(width) {
					t.Fatalf("off %d width %d: read %#x, want %#x", off, width, got, v&mask(width))
				}
				if got := r.ReadBits(3); got != 0x5 {
					t.Fatalf("off %d width %d: marker %#x", off, width, got)
				}
				noErr(t, r.Done())
			}
		}
	}
}

func TestBitsRandomMix(t *testing.T) {
	const fields = 100_000
	rng := newRand(2)
	widths := make([]int, fields)
	vals := make([]uint64, fields)
	w := codec.NewWriter(nil)
	total := 0
	for i := range widths {
		widths[i] = rng.IntN(65)
		// Mix full random values with small ones and extremes.
		switch rng.IntN(4) {
		case 0:
			vals[i] = rng.Uint64()
		case 1:
			vals[i] = math.MaxUint64
		case 2:
			vals[i] = 0
		default:
			vals[i] = rng.Uint64() >> rng.IntN(64)
		}
		w.WriteBits(vals[i], widths[i])
		total += widths[i]
	}
	noErr(t, w.Err())
	if w.Len() != total {
		t.Fatalf("Len = %d, want %d", w.Len(), total)
	}
	b := w.Bytes()
	if len(b) != (total+7)/8 {
		t.Fatalf("%d bytes for %d bits", len(b), total)
	}
	r := codec.NewReader(b)
	for i := range widths {
		if got, want := r.ReadBits(widths[i]), vals[i]&mask(widths[i]); got != want {
			t.Fatalf("field %d (width %d at bit %d): %#x, want %#x", i, widths[i], r.Pos()-widths[i], got, want)
		}
	}
	if r.Remaining() != len(b)*8-total {
		t.Fatalf("Remaining = %d, want %d", r.Remaining(), len(b)*8-total)
	}
	noErr(t, r.Done())
}

func TestBoolRoundTrip(t *testing.T) {
	rng := newRand(3)
	vals := make([]bool, 1000)
	w := codec.NewWriter(nil)
	for i := range vals {
		vals[i] = rng.IntN(2) == 1
		w.WriteBool(vals[i])
	}
	if w.Len() != len(vals) {
		t.Fatalf("Len = %d", w.Len())
	}
	r := codec.NewReader(w.Bytes())
	for i, v := range vals {
		if r.ReadBool() != v {
			t.Fatalf("bool %d", i)
		}
	}
	noErr(t, r.Done())
}

func TestUintRoundTrip(t *testing.T) {
	rng := newRand(4)
	maxes := []uint64{0, 1, 2, 3, 7, 8, 255, 256, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64}
	for range 200 {
		maxes = append(maxes, rng.Uint64()>>rng.IntN(64))
	}
	for _, max := range maxes {
		vals := []uint64{0, max, max / 2}
		for range 20 {
			if max == math.MaxUint64 {
				vals = append(vals, rng.Uint64())
			} else {
				vals = append(vals, rng.Uint64N(max+1))
			}
		}
		w := codec.NewWriter(nil)
		w.WriteBits(1, 1) // shift everything off byte alignment
		for _, v := range vals {
			w.WriteUint(v, max)
		}
		noErr(t, w.Err())
		if want := 1 + len(vals)*bits.Len64(max); w.Len() != want {
			t.Fatalf("max %d: Len = %d, want %d", max, w.Len(), want)
		}
		r := codec.NewReader(w.Bytes())
		r.ReadBits(1)
		for _, v := range vals {
			if got := r.ReadUint(max); got != v {
				t.Fatalf("max %d: read %d, want %d", max, got, v)
			}
		}
		noErr(t, r.Done())
	}
}

func TestUintMaxZeroUsesNoBits(t *testing.T) {
	w := codec.NewWriter(nil)
	for range 100 {
		w.WriteUint(0, 0)
	}
	noErr(t, w.Err())
	if w.Len() != 0 || len(w.Bytes()) != 0 {
		t.Fatalf("max 0 wrote %d bits", w.Len())
	}
	r := codec.NewReader(nil)
	if r.ReadUint(0) != 0 || r.ReadInt(-5, -5) != -5 {
		t.Fatal("zero-width fields must decode to their only value")
	}
	noErr(t, r.Done())
}

func TestIntRoundTrip(t *testing.T) {
	rng := newRand(5)
	type rg struct{ min, max int64 }
	ranges := []rg{
		{0, 0}, {-1, 0}, {-1, 1}, {5, 5}, {-5, -5}, {-128, 127}, {0, 255},
		{math.MinInt64, math.MaxInt64}, {math.MinInt64, 0}, {0, math.MaxInt64},
		{math.MinInt64, math.MinInt64}, {math.MaxInt64, math.MaxInt64},
		{math.MinInt64 + 1, math.MaxInt64}, {-1, math.MaxInt64},
	}
	for range 200 {
		a, b := int64(rng.Uint64()), int64(rng.Uint64())>>rng.IntN(64)
		ranges = append(ranges, rg{min(a, b), max(a, b)})
	}
	for _, g := range ranges {
		span := uint64(g.max) - uint64(g.min)
		vals := []int64{g.min, g.max}
		if g.min <= 0 && g.max >= 0 {
			vals = append(vals, 0)
		}
		for range 20 {
			var off uint64
			if span == math.MaxUint64 {
				off = rng.Uint64()
			} else {
				off = rng.Uint64N(span + 1)
			}
			vals = append(vals, int64(uint64(g.min)+off))
		}
		w := codec.NewWriter(nil)
		w.WriteBits(0, 3)
		for _, v := range vals {
			w.WriteInt(v, g.min, g.max)
		}
		noErr(t, w.Err())
		if want := 3 + len(vals)*bits.Len64(span); w.Len() != want {
			t.Fatalf("[%d, %d]: Len = %d, want %d", g.min, g.max, w.Len(), want)
		}
		r := codec.NewReader(w.Bytes())
		r.ReadBits(3)
		for _, v := range vals {
			if got := r.ReadInt(g.min, g.max); got != v {
				t.Fatalf("[%d, %d]: read %d, want %d", g.min, g.max, got, v)
			}
		}
		noErr(t, r.Done())
	}
}

func TestVarintRoundTrip(t *testing.T) {
	uvals := []uint64{0, 1, 127, 128, 255, 256, 16383, 16384, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, math.MaxUint64 - 1, math.MaxUint64}
	ivals := []int64{0, 1, -1, 63, -64, 64, -65, 127, 128, -128, math.MaxInt32, math.MinInt32, math.MaxInt64, math.MinInt64, math.MinInt64 + 1}
	rng := newRand(6)
	for range 1000 {
		uvals = append(uvals, rng.Uint64()>>rng.IntN(64))
		ivals = append(ivals, int64(rng.Uint64())>>rng.IntN(64))
	}
	for _, unaligned := range []bool{false, true} {
		w := codec.NewWriter(nil)
		if unaligned {
			w.WriteBits(0x1f, 5)
		}
		for _, v := range uvals {
			before := w.Len()
			w.WriteUvarint(v)
			if got := w.Len() - before; got != codec.UvarintBits(v) {
				t.Fatalf("uvarint %d used %d bits, UvarintBits says %d", v, got, codec.UvarintBits(v))
			}
		}
		for _, v := range ivals {
			before := w.Len()
			w.WriteVarint(v)
			if got := w.Len() - before; got != codec.UvarintBits(codec.Zigzag(v)) {
				t.Fatalf("varint %d used %d bits", v, got)
			}
		}
		noErr(t, w.Err())
		r := codec.NewReader(w.Bytes())
		if unaligned {
			r.ReadBits(5)
		}
		for _, v := range uvals {
			if got := r.ReadUvarint(); got != v {
				t.Fatalf("uvarint: read %d, want %d", got, v)
			}
		}
		for _, v := range ivals {
			if got := r.ReadVarint(); got != v {
				t.Fatalf("varint: read %d, want %d", got, v)
			}
		}
		noErr(t, r.Done())
	}
}

func TestVarintEncoding(t *testing.T) {
	tests := []struct {
		v    uint64
		want []byte
	}{
		{0, []byte{0x00}},
		{1, []byte{0x01}},
		{127, []byte{0x7f}},
		{128, []byte{0x80, 0x01}},
		{300, []byte{0xac, 0x02}},
		{math.MaxUint64, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
	}
	for _, tt := range tests {
		w := codec.NewWriter(nil)
		w.WriteUvarint(tt.v)
		if got := w.Bytes(); !bytes.Equal(got, tt.want) {
			t.Errorf("WriteUvarint(%d) = % x, want % x", tt.v, got, tt.want)
		}
		if codec.UvarintBits(tt.v) != 8*len(tt.want) {
			t.Errorf("UvarintBits(%d) = %d, want %d", tt.v, codec.UvarintBits(tt.v), 8*len(tt.want))
		}
	}
}

func TestZigzag(t *testing.T) {
	tests := []struct {
		v int64
		u uint64
	}{
		{0, 0}, {-1, 1}, {1, 2}, {-2, 3}, {2, 4},
		{math.MaxInt64, math.MaxUint64 - 1}, {math.MinInt64, math.MaxUint64},
	}
	for _, tt := range tests {
		if got := codec.Zigzag(tt.v); got != tt.u {
			t.Errorf("Zigzag(%d) = %d, want %d", tt.v, got, tt.u)
		}
		if got := codec.Unzigzag(tt.u); got != tt.v {
			t.Errorf("Unzigzag(%d) = %d, want %d", tt.u, got, tt.v)
		}
	}
	rng := newRand(7)
	for range 10000 {
		v := int64(rng.Uint64())
		if codec.Unzigzag(codec.Zigzag(v)) != v {
			t.Fatalf("zigzag round trip of %d", v)
		}
	}
}

func TestUvarintBitsMatchesLen(t *testing.T) {
	for k := 0; k <= 64; k++ {
		for _, v := range []uint64{mask(k), mask(k) + 1, mask(k) >> 1} {
			w := codec.NewWriter(nil)
			w.WriteUvarint(v)
			want := 8 * max(1, (bits.Len64(v)+6)/7)
			if w.Len() != want || codec.UvarintBits(v) != want {
				t.Fatalf("v=%d: Len %d, UvarintBits %d, want %d", v, w.Len(), codec.UvarintBits(v), want)
			}
		}
	}
}

func TestQuantizerGridExact(t *testing.T) {
	tests := []struct {
		min, max, step float64
		bits           int
		maxIndex       uint64
	}{
		{0, 1, 0.25, 3, 4},
		{-10, 10, 0.5, 6, 40},
		{0, 0, 1, 0, 0},
		{-1, 1, 1.0 / 1024, 12, 2048},
		{0, 360, 0.5, 10, 720},
		{100, 100.9, 0.3, 2, 3}, // max rounded to the grid
	}
	for _, tt := range tests {
		q, err := codec.NewQuantizer(tt.min, tt.max, tt.step)
		noErr(t, err)
		if q.Bits() != tt.bits || q.MaxIndex() != tt.maxIndex || q.Min() != tt.min || q.Step() != tt.step {
			t.Fatalf("%+v: got bits %d maxIndex %d min %g step %g", tt, q.Bits(), q.MaxIndex(), q.Min(), q.Step())
		}
		w := codec.NewWriter(nil)
		for i := uint64(0); i <= q.MaxIndex(); i++ {
			v := q.Value(i)
			if got, ok := q.Index(v); !ok || got != i {
				t.Fatalf("%+v: Index(Value(%d)) = %d, %v", tt, i, got, ok)
			}
			w.WriteQuantized(q, v)
		}
		noErr(t, w.Err())
		if w.Len() != int(q.MaxIndex()+1)*q.Bits() {
			t.Fatalf("%+v: %d bits for %d values", tt, w.Len(), q.MaxIndex()+1)
		}
		r := codec.NewReader(w.Bytes())
		for i := uint64(0); i <= q.MaxIndex(); i++ {
			if got := r.ReadQuantized(q); got != q.Value(i) {
				t.Fatalf("%+v: read %g, want %g", tt, got, q.Value(i))
			}
		}
		noErr(t, r.Done())
		if q.Max() != q.Value(q.MaxIndex()) {
			t.Fatalf("Max %g != Value(MaxIndex) %g", q.Max(), q.Value(q.MaxIndex()))
		}
	}
}

func TestQuantizerRoundsToNearest(t *testing.T) {
	q, err := codec.NewQuantizer(-8, 8, 0.125)
	noErr(t, err)
	rng := newRand(8)
	for range 10000 {
		v := -8 + 16*rng.Float64()
		got := q.Round(v)
		if d := math.Abs(got - v); d > q.Step()/2+1e-12 {
			t.Fatalf("Round(%g) = %g, off by %g > step/2", v, got, d)
		}
		// No other grid point is nearer.
		i, ok := q.Index(v)
		if !ok {
			t.Fatalf("Index(%g) not ok", v)
		}
		for _, j := range []uint64{i - 1, i + 1} {
			if j <= q.MaxIndex() && math.Abs(q.Value(j)-v) < math.Abs(got-v)-1e-12 {
				t.Fatalf("Round(%g) = %g but %g is nearer", v, got, q.Value(j))
			}
		}
		w := codec.NewWriter(nil)
		w.WriteQuantized(q, v)
		noErr(t, w.Err())
		r := codec.NewReader(w.Bytes())
		if back := r.ReadQuantized(q); back != got {
			t.Fatalf("round trip of %g = %g, want %g", v, back, got)
		}
		if !q.Equal(v, got) {
			t.Fatalf("Equal(%g, Round) = false", v)
		}
	}
	if !q.Equal(1.0, 1.05) || q.Equal(1.0, 1.1) {
		t.Fatal("Equal must compare grid points")
	}
}

func TestQuantizerOutOfRange(t *testing.T) {
	q := codec.MustQuantizer(0, 10, 0.5)
	tests := []struct {
		v    float64
		want float64
	}{
		{-1, 0},
		{-0.3, 0}, // rounds below the grid
		{10.3, 10},
		{11, 10},
		{math.Inf(1), 10},
		{math.Inf(-1), 0},
		{math.NaN(), 0},
		{math.MaxFloat64, 10},
		{-math.MaxFloat64, 0},
	}
	for _, tt := range tests {
		if _, ok := q.Index(tt.v); ok {
			t.Errorf("Index(%g) ok", tt.v)
		}
		w := codec.NewWriter(nil)
		w.WriteQuantized(q, tt.v)
		wantErr(t, w.Err(), codec.ErrOutOfRange)
		if w.Len() != q.Bits() {
			t.Errorf("out-of-range value wrote %d bits, want %d", w.Len(), q.Bits())
		}
		r := codec.NewReader(w.Bytes())
		if got := r.ReadQuantized(q); got != tt.want {
			t.Errorf("WriteQuantized(%g) clamped to %g, want %g", tt.v, got, tt.want)
		}
		noErr(t, r.Done())
	}
	// In range but off grid near the ends is not an error.
	for _, v := range []float64{-0.2, 10.2, 0, 10} {
		if _, ok := q.Index(v); !ok {
			t.Errorf("Index(%g) not ok", v)
		}
	}
}

func TestQuantizerIndexOutOfRangeOnRead(t *testing.T) {
	q := codec.MustQuantizer(0, 5, 1) // 3 bits, indices 0..5
	w := codec.NewWriter(nil)
	w.WriteBits(7, 3)
	r := codec.NewReader(w.Bytes())
	if got := r.ReadQuantized(q); got != q.Min() {
		t.Fatalf("out-of-range index read as %g", got)
	}
	wantErr(t, r.Err(), codec.ErrOutOfRange)
}

func TestNewQuantizerInvalid(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct{ min, max, step float64 }{
		{0, 1, 0},
		{0, 1, -0.5},
		{0, 1, nan},
		{0, 1, inf},
		{nan, 1, 0.1},
		{0, nan, 0.1},
		{-inf, 1, 0.1},
		{0, inf, 0.1},
		{1, 0, 0.1},
		{0, 1, 1e-300},                         // far over 2^53 points
		{-math.MaxFloat64, math.MaxFloat64, 1}, // span overflows
		{0, 1 << 54, 1},                        // 2^54 points
		{0, 1, math.SmallestNonzeroFloat64},    // span/step is +Inf
		{-1e300, 1e300, math.SmallestNonzeroFloat64},
	}
	for _, tt := range tests {
		_, err := codec.NewQuantizer(tt.min, tt.max, tt.step)
		if !errors.Is(err, codec.ErrInvalid) {
			t.Errorf("NewQuantizer(%g, %g, %g) error = %v, want ErrInvalid", tt.min, tt.max, tt.step, err)
		}
	}
	// The largest allowed grid.
	q, err := codec.NewQuantizer(0, 1<<53, 1)
	noErr(t, err)
	if q.Bits() != 54 {
		t.Fatalf("2^53+1 points need 54 bits, got %d", q.Bits())
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("MustQuantizer did not panic on an invalid description")
			}
		}()
		codec.MustQuantizer(0, 1, 0)
	}()
}

func TestBytesAndStringsRoundTrip(t *testing.T) {
	rng := newRand(9)
	for off := 0; off < 8; off++ {
		for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 100, 1000} {
			for _, maxLen := range []int{n, n + 1, 2*n + 3, 1 << 16} {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(rng.Uint32())
				}
				str := strings.Repeat("x", n/2) + string(data[n/2:])
				w := codec.NewWriter(nil)
				w.WriteBits(0x55, off)
				w.WriteBytes(data, maxLen)
				w.WriteString(str, maxLen)
				w.WriteString(string(data), maxLen) // read back with ReadBytes: same layout
				noErr(t, w.Err())
				lenBits := bits.Len(uint(maxLen))
				if want := off + 3*(lenBits+8*n); w.Len() != want {
					t.Fatalf("off %d n %d max %d: Len %d, want %d", off, n, maxLen, w.Len(), want)
				}
				r := codec.NewReader(w.Bytes())
				r.ReadBits(off)
				prefix := []byte("keep")
				got := r.ReadBytes(prefix, maxLen)
				if !bytes.Equal(got[:4], []byte("keep")) || !bytes.Equal(got[4:], data) {
					t.Fatalf("off %d n %d: ReadBytes = %x, want keep+%x", off, n, got, data)
				}
				if s := r.ReadString(maxLen); s != str {
					t.Fatalf("off %d n %d: ReadString = %q, want %q", off, n, s, str)
				}
				if b := r.ReadBytes(nil, maxLen); !bytes.Equal(b, data) {
					t.Fatalf("off %d n %d: ReadBytes of a string = %x", off, n, b)
				}
				noErr(t, r.Done())
			}
		}
	}
}

func TestReadBytesDoesNotAliasInput(t *testing.T) {
	w := codec.NewWriter(nil)
	w.WriteBytes([]byte("hello"), 16)
	in := w.Bytes()
	out := codec.NewReader(in).ReadBytes(nil, 16)
	for i := range in {
		in[i] = 0
	}
	if string(out) != "hello" {
		t.Fatalf("ReadBytes aliases its input: %q", out)
	}
}

// TestMeasureMatchesWrite runs every primitive (including ones that record
// an error) against a real Writer and a measuring one, at every bit offset.
func TestMeasureMatchesWrite(t *testing.T) {
	q := codec.MustQuantizer(-100, 100, 0.01)
	long := bytes.Repeat([]byte{0xab}, 300)
	ops := []struct {
		name string
		f    func(w *codec.Writer)
	}{
		{"bits0", func(w *codec.Writer) { w.WriteBits(0, 0) }},
		{"bits13", func(w *codec.Writer) { w.WriteBits(0x1fff, 13) }},
		{"bits64", func(w *codec.Writer) { w.WriteBits(math.MaxUint64, 64) }},
		{"bits65", func(w *codec.Writer) { w.WriteBits(1, 65) }},
		{"bool", func(w *codec.Writer) { w.WriteBool(true) }},
		{"uint", func(w *codec.Writer) { w.WriteUint(1000, 5000) }},
		{"uint0", func(w *codec.Writer) { w.WriteUint(0, 0) }},
		{"uintMax", func(w *codec.Writer) { w.WriteUint(math.MaxUint64, math.MaxUint64) }},
		{"uintOver", func(w *codec.Writer) { w.WriteUint(9, 5) }},
		{"int", func(w *codec.Writer) { w.WriteInt(-3, -100, 100) }},
		{"intFull", func(w *codec.Writer) { w.WriteInt(math.MinInt64, math.MinInt64, math.MaxInt64) }},
		{"intUnder", func(w *codec.Writer) { w.WriteInt(-200, -100, 100) }},
		{"intEmpty", func(w *codec.Writer) { w.WriteInt(0, 10, -10) }},
		{"uvarint", func(w *codec.Writer) { w.WriteUvarint(1 << 40) }},
		{"uvarintMax", func(w *codec.Writer) { w.WriteUvarint(math.MaxUint64) }},
		{"varint", func(w *codec.Writer) { w.WriteVarint(math.MinInt64) }},
		{"quant", func(w *codec.Writer) { w.WriteQuantized(q, 3.14159) }},
		{"quantOut", func(w *codec.Writer) { w.WriteQuantized(q, 1e9) }},
		{"bytes", func(w *codec.Writer) { w.WriteBytes(long[:37], 64) }},
		{"bytesLong", func(w *codec.Writer) { w.WriteBytes(long, 100) }},
		{"bytesNeg", func(w *codec.Writer) { w.WriteBytes(long, -1) }},
		{"string", func(w *codec.Writer) { w.WriteString("héllo", 255) }},
		{"stringLong", func(w *codec.Writer) { w.WriteString(string(long), 10) }},
		{"ids", func(w *codec.Writer) { w.WriteIDs([]uint32{1, 2, 3, 50, 1000, 1 << 31}, 64) }},
		{"idsUnsorted", func(w *codec.Writer) { w.WriteIDs([]uint32{3, 1}, 64) }},
		{"idsLong", func(w *codec.Writer) { w.WriteIDs([]uint32{1, 2, 3}, 2) }},
		{"align", func(w *codec.Writer) { w.AlignByte() }},
	}
	for off := 0; off < 8; off++ {
		for _, op := range ops {
			var wr, meas codec.Writer
			wr.WriteBits(0, off)
			meas.Measure()
			meas.WriteBits(0, off)
			op.f(&wr)
			op.f(&meas)
			if wr.Len() != meas.Len() {
				t.Errorf("%s at offset %d: real %d bits, measured %d", op.name, off, wr.Len(), meas.Len())
			}
			if (wr.Err() == nil) != (meas.Err() == nil) {
				t.Errorf("%s: real error %v, measured error %v", op.name, wr.Err(), meas.Err())
			}
			if meas.Bytes() != nil {
				t.Errorf("%s: Bytes in measure mode = %x, want nil", op.name, meas.Bytes())
			}
		}
	}
	// All of them in one stream.
	var wr, meas codec.Writer
	meas.Measure()
	for _, op := range ops {
		op.f(&wr)
		op.f(&meas)
	}
	if wr.Len() != meas.Len() {
		t.Fatalf("all ops: real %d bits, measured %d", wr.Len(), meas.Len())
	}
	// Reset leaves measure mode.
	meas.Reset(nil)
	meas.WriteBits(1, 1)
	if !bytes.Equal(meas.Bytes(), []byte{1}) {
		t.Fatal("Reset after Measure must write again")
	}
}

func TestBytesPadsWithZeros(t *testing.T) {
	// A buffer full of garbage: the padding must still be zero.
	buf := bytes.Repeat([]byte{0xff}, 32)
	w := codec.NewWriter(buf)
	if len(w.Bytes()) != 0 {
		t.Fatal("NewWriter must start empty")
	}
	w.WriteBits(0b101, 3)
	if got := w.Bytes(); !bytes.Equal(got, []byte{0b101}) {
		t.Fatalf("Bytes = %08b, want 00000101", got)
	}
	w.WriteBits(0, 8)
	w.WriteBits(1, 1)
	if got := w.Bytes(); !bytes.Equal(got, []byte{0b101, 0b1000}) {
		t.Fatalf("Bytes = %08b", got)
	}
	for n := 1; n <= 64; n++ {
		w.Reset(buf)
		w.WriteBits(math.MaxUint64, n)
		got := w.Bytes()
		if len(got) != (n+7)/8 {
			t.Fatalf("%d bits: %d bytes", n, len(got))
		}
		if last := got[len(got)-1]; n%8 != 0 && last != byte(1<<uint(n%8)-1) {
			t.Fatalf("%d ones: last byte %08b has non-zero padding", n, last)
		}
		// Bytes is repeatable and writing continues after it.
		if !bytes.Equal(got, w.Bytes()) {
			t.Fatal("Bytes changed between calls")
		}
	}
	var zero codec.Writer
	if zero.Bytes() != nil || zero.Len() != 0 {
		t.Fatal("zero Writer must be empty")
	}
}

func TestBytesThenContinueWriting(t *testing.T) {
	w := codec.NewWriter(make([]byte, 0, 64))
	w.WriteBits(0x3, 2)
	_ = w.Bytes()
	w.WriteBits(0x3f, 6)
	w.WriteBits(0xaa, 8)
	if got := w.Bytes(); !bytes.Equal(got, []byte{0xff, 0xaa}) {
		t.Fatalf("Bytes = % x, want ff aa", got)
	}
}

func TestWriterRecordsFirstError(t *testing.T) {
	q := codec.MustQuantizer(0, 1, 0.5)
	w := codec.NewWriter(nil)
	w.WriteUint(3, 7)
	noErr(t, w.Err())
	w.WriteUint(9, 7) // clamps to 7
	wantErr(t, w.Err(), codec.ErrOutOfRange)
	first := w.Err()
	w.WriteBits(1, 65) // ErrInvalid, writes nothing
	w.WriteBytes([]byte("toolong"), 3)
	w.WriteInt(-50, -10, 10)
	w.WriteInt(50, -10, 10)
	w.WriteInt(1, 5, -5) // empty range
	w.WriteString("abcdef", 2)
	w.WriteQuantized(q, 7)
	w.WriteIDs([]uint32{5, 5}, 4)
	w.WriteIDs([]uint32{1, 2, 3, 4, 5}, 4)
	w.WriteBytes([]byte("x"), -1) // ErrInvalid, writes nothing
	w.WriteUint(2, 7)
	if w.Err() != first {
		t.Fatalf("first error replaced: %v", w.Err())
	}
	w.Fail(errors.New("later"))
	if w.Err() != first {
		t.Fatal("Fail replaced the first error")
	}

	// The stream is still well-formed: each field holds the nearest valid value.
	r := codec.NewReader(w.Bytes())
	check := func(name string, got, want any) {
		t.Helper()
		if got != want {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}
	check("uint", r.ReadUint(7), uint64(3))
	check("clamped uint", r.ReadUint(7), uint64(7))
	check("cut bytes", string(r.ReadBytes(nil, 3)), "too")
	check("low int", r.ReadInt(-10, 10), int64(-10))
	check("high int", r.ReadInt(-10, 10), int64(10))
	// The empty range [5, -5] is written in the bits of its wrapped span
	// (64), as 0.
	check("empty-range int", r.ReadBits(64), uint64(0))
	check("cut string", r.ReadString(2), "ab")
	check("clamped quantized", r.ReadQuantized(q), 1.0)
	check("unsorted ids", len(r.ReadIDs(nil, 4)), 0)
	check("long ids", len(r.ReadIDs(nil, 4)), 0)
	check("last uint", r.ReadUint(7), uint64(2))
	noErr(t, r.Done())
}

func TestWriterErrors(t *testing.T) {
	tests := []struct {
		name string
		f    func(w *codec.Writer)
		want error
		bits int
	}{
		{"width 65", func(w *codec.Writer) { w.WriteBits(0, 65) }, codec.ErrInvalid, 0},
		{"width -1", func(w *codec.Writer) { w.WriteBits(0, -1) }, codec.ErrInvalid, 0},
		{"uint over", func(w *codec.Writer) { w.WriteUint(8, 7) }, codec.ErrOutOfRange, 3},
		{"uint over max 0", func(w *codec.Writer) { w.WriteUint(1, 0) }, codec.ErrOutOfRange, 0},
		{"int below", func(w *codec.Writer) { w.WriteInt(-1, 0, 3) }, codec.ErrOutOfRange, 2},
		{"int above", func(w *codec.Writer) { w.WriteInt(4, 0, 3) }, codec.ErrOutOfRange, 2},
		{"int empty range", func(w *codec.Writer) { w.WriteInt(0, 1, 0) }, codec.ErrInvalid, 64},
		{"bytes too long", func(w *codec.Writer) { w.WriteBytes([]byte("abc"), 2) }, codec.ErrTooLong, 2 + 16},
		{"bytes negative max", func(w *codec.Writer) { w.WriteBytes(nil, -1) }, codec.ErrInvalid, 0},
		{"string too long", func(w *codec.Writer) { w.WriteString("abc", 1) }, codec.ErrTooLong, 1 + 8},
		{"string negative max", func(w *codec.Writer) { w.WriteString("", -1) }, codec.ErrInvalid, 0},
	}
	for _, tt := range tests {
		w := codec.NewWriter(nil)
		tt.f(w)
		if !errors.Is(w.Err(), tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, w.Err(), tt.want)
		}
		if w.Len() != tt.bits {
			t.Errorf("%s: wrote %d bits, want %d", tt.name, w.Len(), tt.bits)
		}
	}
}

func TestReaderTruncated(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		f    func(r *codec.Reader)
	}{
		{"bits from empty", nil, func(r *codec.Reader) { r.ReadBits(1) }},
		{"64 bits from 7 bytes", make([]byte, 7), func(r *codec.Reader) { r.ReadBits(64) }},
		{"57 bits from 7 bytes", make([]byte, 7), func(r *codec.Reader) { r.ReadBits(57) }},
		{"bool from empty", nil, func(r *codec.Reader) { r.ReadBool() }},
		{"uint", []byte{0xff}, func(r *codec.Reader) { r.ReadUint(1 << 9) }},
		{"int", []byte{0xff}, func(r *codec.Reader) { r.ReadInt(math.MinInt64, math.MaxInt64) }},
		{"uvarint continues past end", []byte{0x80, 0x80}, func(r *codec.Reader) { r.ReadUvarint() }},
		{"varint", []byte{0xff}, func(r *codec.Reader) { r.ReadVarint() }},
		{"bytes length", []byte{0x01}, func(r *codec.Reader) { r.ReadBytes(nil, 1<<20) }},
		{"string length", nil, func(r *codec.Reader) { r.ReadString(5) }},
		{"quantized", []byte{0}, func(r *codec.Reader) { r.ReadQuantized(codec.MustQuantizer(0, 1000, 1)) }},
		{"skip", []byte{0}, func(r *codec.Reader) { r.Skip(9) }},
		{"ids count", nil, func(r *codec.Reader) { r.ReadIDs(nil, 3) }},
		{"after some reads", []byte{1, 2, 3}, func(r *codec.Reader) { r.ReadBits(20); r.ReadBits(5) }},
	}
	for _, tt := range tests {
		r := codec.NewReader(tt.in)
		tt.f(r)
		if !errors.Is(r.Err(), codec.ErrTruncated) {
			t.Errorf("%s: error %v, want ErrTruncated", tt.name, r.Err())
		}
		if r.Remaining() != 0 {
			t.Errorf("%s: %d bits remain after an error", tt.name, r.Remaining())
		}
		if r.Done() != r.Err() {
			t.Errorf("%s: Done must return the first error", tt.name)
		}
	}
}

func TestReaderOutOfRange(t *testing.T) {
	w := codec.NewWriter(nil)
	w.WriteBits(6, 3)
	r := codec.NewReader(w.Bytes())
	if got := r.ReadUint(5); got != 0 {
		t.Fatalf("out-of-range uint returned %d", got)
	}
	wantErr(t, r.Err(), codec.ErrOutOfRange)

	w.Reset(nil)
	w.WriteBits(7, 3)
	r = codec.NewReader(w.Bytes())
	if got := r.ReadInt(-3, 3); got != 0 { // span 6 in 3 bits, offset 7
		t.Fatalf("out-of-range int returned %d", got)
	}
	wantErr(t, r.Err(), codec.ErrOutOfRange)

	r = codec.NewReader([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	r.ReadInt(5, -5)
	wantErr(t, r.Err(), codec.ErrInvalid)

	r = codec.NewReader([]byte{0})
	r.ReadBits(65)
	wantErr(t, r.Err(), codec.ErrInvalid)
	r = codec.NewReader([]byte{0})
	r.ReadBits(-1)
	wantErr(t, r.Err(), codec.ErrInvalid)
	r = codec.NewReader([]byte{0})
	r.ReadBytes(nil, -1)
	wantErr(t, r.Err(), codec.ErrInvalid)
	r = codec.NewReader([]byte{0})
	r.Skip(-1)
	wantErr(t, r.Err(), codec.ErrInvalid)
}

func TestReaderLengthOverMax(t *testing.T) {
	w := codec.NewWriter(nil)
	w.WriteBits(9, 4) // length field for maxLen 8 is 4 bits; 9 > 8
	w.WriteBytes(make([]byte, 16), 16)
	in := w.Bytes()
	r := codec.NewReader(in)
	if got := r.ReadBytes([]byte("dst"), 8); string(got) != "dst" {
		t.Fatalf("ReadBytes over max returned %q", got)
	}
	wantErr(t, r.Err(), codec.ErrTooLong)
	r = codec.NewReader(in)
	if s := r.ReadString(8); s != "" {
		t.Fatalf("ReadString over max returned %q", s)
	}
	wantErr(t, r.Err(), codec.ErrTooLong)
}

// hostileLength returns input whose length field (for maxLen) claims n
// bytes, followed by only tail bytes of data.
func hostileLength(n uint64, maxLen, prefixBits, tail int) []byte {
	w := codec.NewWriter(nil)
	w.WriteBits(0, prefixBits)
	w.WriteBits(n, bits.Len(uint(maxLen)))
	w.WriteBits(0, 8*tail)
	return w.Bytes()
}

func TestReaderHostileLengthAllocatesNothing(t *testing.T) {
	const claim = 1 << 30
	for _, prefix := range []int{0, 1} { // aligned and unaligned payload
		in := hostileLength(claim, claim, prefix, 3)
		small := hostileLength(1000, claim, prefix, 3) // >= 256: boxed like the big claim
		var r codec.Reader
		read := func(b []byte) func() {
			return func() {
				r.Reset(b)
				r.Skip(prefix)
				if out := r.ReadBytes(nil, claim); out != nil {
					panic("ReadBytes returned data for a truncated input")
				}
				if !errors.Is(r.Err(), codec.ErrTruncated) {
					panic(fmt.Sprint("want ErrTruncated, got ", r.Err()))
				}
			}
		}
		// The only allocations are the error value's; they do not depend
		// on the claimed length.
		big := testing.AllocsPerRun(100, read(in))
		base := testing.AllocsPerRun(100, read(small))
		// (The race detector's sync.Pool drops make the count jitter.)
		if big > base+2 || big > 20 {
			t.Errorf("prefix %d: claim of %d bytes made %v allocations, claim of 1000 made %v", prefix, claim, big, base)
		}
		// The error value costs a few hundred bytes (more under -race,
		// whose sync.Pool drops fmt's buffers); 1 GiB is what must not be.
		if total := allocBytes(100, read(in)); total > 256<<10 {
			t.Errorf("prefix %d: 100 hostile ReadBytes allocated %d bytes", prefix, total)
		}
		stringRead := func() {
			r.Reset(in)
			r.Skip(prefix)
			if r.ReadString(claim) != "" {
				panic("ReadString returned data")
			}
		}
		if total := allocBytes(100, stringRead); total > 256<<10 {
			t.Errorf("prefix %d: 100 hostile ReadString allocated %d bytes", prefix, total)
		}
	}
	// Once the Reader has failed, reads allocate nothing at all.
	r := codec.NewReader(hostileLength(claim, claim, 0, 3))
	r.ReadBytes(nil, claim)
	if a := testing.AllocsPerRun(100, func() { r.ReadBytes(nil, claim); r.ReadString(claim); r.ReadIDs(nil, claim) }); a != 0 {
		t.Errorf("reads after an error allocated %v times", a)
	}
}

// TestReaderHugeMaxLen is a regression test: with a maxLen near MaxInt, a
// claimed length times 8 used to wrap around uint64 and pass the check
// against the input left, so ReadBytes sliced past the input and panicked
// (aligned) or appended zeros without end (unaligned), and ReadString
// called make with the claimed length.
func TestReaderHugeMaxLen(t *testing.T) {
	for _, claim := range []uint64{1 << 61, 1<<61 + 1, 1<<62 + 3, 1<<63 - 1} {
		for _, prefix := range []int{0, 1} { // payload unaligned, aligned (63-bit length)
			in := hostileLength(claim, math.MaxInt, prefix, 8)
			// ReadString first: with a broken length check it panics at
			// once, where unaligned ReadBytes would append without end.
			r := codec.NewReader(in)
			r.ReadBits(prefix)
			if s := r.ReadString(math.MaxInt); s != "" {
				t.Fatalf("claim %d: ReadString returned %d bytes", claim, len(s))
			}
			wantErr(t, r.Err(), codec.ErrTruncated)

			r = codec.NewReader(in)
			r.ReadBits(prefix)
			if out := r.ReadBytes(nil, math.MaxInt); out != nil {
				t.Errorf("claim %d prefix %d: ReadBytes returned %d bytes", claim, prefix, len(out))
			}
			wantErr(t, r.Err(), codec.ErrTruncated)
		}
	}
	// A real string with that bound still decodes.
	w := codec.NewWriter(nil)
	w.WriteBytes([]byte("ok"), math.MaxInt)
	w.WriteString("fine", math.MaxInt)
	r := codec.NewReader(w.Bytes())
	if string(r.ReadBytes(nil, math.MaxInt)) != "ok" || r.ReadString(math.MaxInt) != "fine" {
		t.Fatal("round trip with maxLen MaxInt")
	}
	noErr(t, r.Done())
}

func TestReaderVarintOverflow(t *testing.T) {
	ff := func(n int, last ...byte) []byte { return append(bytes.Repeat([]byte{0xff}, n), last...) }
	tests := []struct {
		name string
		in   []byte
		want error
		v    uint64
	}{
		{"11 bytes of ff", ff(11), codec.ErrOverflow, 0},
		{"10 bytes of ff", ff(10), codec.ErrOverflow, 0},
		{"tenth byte 2", ff(9, 0x02), codec.ErrOverflow, 0},
		{"tenth byte 0x81", ff(9, 0x81), codec.ErrOverflow, 0},
		{"max", ff(9, 0x01), nil, math.MaxUint64},
		{"2^63", append(bytes.Repeat([]byte{0x80}, 9), 0x01), nil, 1 << 63},
		{"9 bytes ff truncated", ff(9), codec.ErrTruncated, 0},
	}
	for _, tt := range tests {
		r := codec.NewReader(tt.in)
		v := r.ReadUvarint()
		if tt.want == nil {
			if r.Err() != nil || v != tt.v {
				t.Errorf("%s: %d, %v; want %d", tt.name, v, r.Err(), tt.v)
			}
			continue
		}
		if v != 0 || !errors.Is(r.Err(), tt.want) {
			t.Errorf("%s: %d, %v; want 0, %v", tt.name, v, r.Err(), tt.want)
		}
	}
	r := codec.NewReader(ff(11))
	if r.ReadVarint() != 0 {
		t.Error("overflowing varint must read as 0")
	}
	wantErr(t, r.Err(), codec.ErrOverflow)
}

func TestReaderDone(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		read int
		want error
	}{
		{"empty", nil, 0, nil},
		{"exact", []byte{0xff}, 8, nil},
		{"zero padding", []byte{0x07}, 3, nil},
		{"non-zero padding", []byte{0x0f}, 3, codec.ErrTrailing},
		{"top padding bit", []byte{0x80}, 7, codec.ErrTrailing},
		{"unread zero byte", []byte{0x01, 0x00}, 1, codec.ErrTrailing},
		{"unread byte", []byte{0x01, 0x05}, 8, codec.ErrTrailing},
		{"nothing read", []byte{0x00}, 0, codec.ErrTrailing},
	}
	for _, tt := range tests {
		r := codec.NewReader(tt.in)
		r.ReadBits(tt.read)
		err := r.Done()
		if tt.want == nil {
			if err != nil {
				t.Errorf("%s: Done = %v", tt.name, err)
			}
		} else if !errors.Is(err, tt.want) {
			t.Errorf("%s: Done = %v, want %v", tt.name, err, tt.want)
		}
		if err != r.Err() {
			t.Errorf("%s: Done and Err disagree", tt.name)
		}
	}
}

func TestReaderAlignByte(t *testing.T) {
	r := codec.NewReader([]byte{0x01, 0xab})
	r.ReadBits(1)
	r.AlignByte()
	if r.Pos() != 8 || r.Err() != nil {
		t.Fatalf("AlignByte: pos %d err %v", r.Pos(), r.Err())
	}
	r.AlignByte() // already aligned: no-op
	if r.ReadBits(8) != 0xab {
		t.Fatal("read after AlignByte")
	}
	noErr(t, r.Done())

	r = codec.NewReader([]byte{0x03})
	r.ReadBits(1)
	r.AlignByte()
	wantErr(t, r.Err(), codec.ErrTrailing)

	w := codec.NewWriter(nil)
	w.WriteBits(1, 3)
	w.AlignByte()
	if w.Len() != 8 {
		t.Fatalf("Writer.AlignByte: Len %d", w.Len())
	}
	w.AlignByte()
	if w.Len() != 8 {
		t.Fatal("AlignByte on a boundary must write nothing")
	}
}

func TestReaderKeepsFirstError(t *testing.T) {
	q := codec.MustQuantizer(-5, 5, 1)
	in := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	r := codec.NewReader(in)
	r.ReadUint(5) // 3 bits of 7: ErrOutOfRange
	first := r.Err()
	wantErr(t, first, codec.ErrOutOfRange)
	if r.Remaining() != 0 || r.Pos() != len(in)*8 {
		t.Fatalf("after an error: pos %d, remaining %d", r.Pos(), r.Remaining())
	}
	dst := []byte("dst")
	ids := []uint32{9}
	if r.ReadBits(8) != 0 || r.ReadBits(0) != 0 || r.ReadBool() || r.ReadUint(100) != 0 ||
		r.ReadInt(-5, 5) != 0 || r.ReadUvarint() != 0 || r.ReadVarint() != 0 ||
		string(r.ReadBytes(dst, 10)) != "dst" || r.ReadString(10) != "" ||
		len(r.ReadIDs(ids, 10)) != 1 || r.Peek() != 0 || r.ReadQuantized(q) != 0 {
		t.Fatal("a read after an error returned data")
	}
	r.Skip(3)
	r.AlignByte()
	r.Fail(codec.ErrNoBaseline)
	if r.Err() != first || r.Done() != first {
		t.Fatalf("first error replaced by %v", r.Err())
	}
	// Reset clears the error.
	r.Reset(in)
	if r.Err() != nil || r.ReadBits(8) != 0xff {
		t.Fatal("Reset must clear the error")
	}
	r.Fail(codec.ErrNoBaseline)
	wantErr(t, r.Err(), codec.ErrNoBaseline)
	if r.Remaining() != 0 {
		t.Fatal("Fail must stop reading")
	}
}

func TestPeekSkip(t *testing.T) {
	in := []byte{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x11, 0x22}
	for pos := 0; pos <= len(in)*8; pos++ {
		r := codec.NewReader(in)
		r.Skip(pos)
		noErr(t, r.Err())
		p := r.Peek()
		// Reference: the bits from pos on, zero past the end.
		var want uint64
		for k := 0; k < 64 && pos+k < len(in)*8; k++ {
			bit := uint64(in[(pos+k)/8]>>((pos+k)%8)) & 1
			want |= bit << k
		}
		valid := min(56, len(in)*8-pos)
		if p&mask(valid) != want&mask(valid) {
			t.Fatalf("pos %d: Peek %#x, want low %d bits of %#x", pos, p, valid, want)
		}
		if len(in)*8-pos < 64 && p != want {
			t.Fatalf("pos %d: Peek %#x must read past the end as zero, want %#x", pos, p, want)
		}
		if r.Pos() != pos {
			t.Fatal("Peek consumed bits")
		}
		// Peek agrees with ReadBits.
		n := min(56, r.Remaining())
		if got := r.ReadBits(n); got != p&mask(n) {
			t.Fatalf("pos %d: ReadBits(%d) = %#x, Peek %#x", pos, n, got, p)
		}
	}

	r := codec.NewReader(in)
	r.Skip(len(in) * 8)
	noErr(t, r.Err())
	if r.Peek() != 0 || r.Remaining() != 0 {
		t.Fatal("Peek at the end must be 0")
	}
	r.Skip(0)
	noErr(t, r.Err())
	r.Skip(1)
	wantErr(t, r.Err(), codec.ErrTruncated)

	r = codec.NewReader(nil)
	if r.Peek() != 0 {
		t.Fatal("Peek on empty input")
	}
	r = codec.NewReader([]byte{0xff, 0xff, 0xff})
	r.Skip(4)
	if got := r.Peek(); got != 0xfffff {
		t.Fatalf("Peek near the end = %#x, want 0xfffff", got)
	}
	r.Skip(21)
	wantErr(t, r.Err(), codec.ErrTruncated)
	if r.Peek() != 0 {
		t.Fatal("Peek after an error")
	}
}

func TestWriterSteadyStateAllocatesNothing(t *testing.T) {
	q := codec.MustQuantizer(-100, 100, 0.01)
	payload := []byte("some payload bytes")
	ids := []uint32{3, 4, 5, 9, 100, 101}
	buf := make([]byte, 0, 1024)
	var w codec.Writer
	encode := func() {
		w.Reset(buf)
		w.WriteBits(0x1234, 13)
		w.WriteBool(true)
		w.WriteUint(300, 1000)
		w.WriteInt(-7, -100, 100)
		w.WriteUvarint(1 << 40)
		w.WriteVarint(-12345)
		w.WriteQuantized(q, 12.34)
		w.WriteBytes(payload, 64)
		w.WriteString("name", 32)
		w.WriteIDs(ids, 64)
		w.AlignByte()
		w.WriteBits(math.MaxUint64, 64)
		_ = w.Bytes()
	}
	if a := testing.AllocsPerRun(100, encode); a != 0 {
		t.Errorf("steady-state encode allocated %v times", a)
	}
	noErr(t, w.Err())
	msg := append([]byte(nil), w.Bytes()...)

	var r codec.Reader
	dst := make([]byte, 0, 64)
	idDst := make([]uint32, 0, 16)
	decode := func() {
		r.Reset(msg)
		r.ReadBits(13)
		r.ReadBool()
		r.ReadUint(1000)
		r.ReadInt(-100, 100)
		r.ReadUvarint()
		r.ReadVarint()
		r.ReadQuantized(q)
		dst = r.ReadBytes(dst[:0], 64)
		r.Skip(6) // the string's length field
		r.Skip(8 * 4)
		idDst = r.ReadIDs(idDst[:0], 64)
		r.AlignByte()
		r.Peek()
		r.ReadBits(64)
		if r.Done() != nil {
			panic(r.Err())
		}
	}
	if a := testing.AllocsPerRun(100, decode); a != 0 {
		t.Errorf("steady-state decode allocated %v times", a)
	}
	if string(dst) != string(payload) || len(idDst) != len(ids) {
		t.Fatalf("decode: %q %v", dst, idDst)
	}
	var m codec.Writer
	if a := testing.AllocsPerRun(100, func() { m.Measure(); m.WriteBytes(payload, 64); m.WriteIDs(ids, 64) }); a != 0 {
		t.Errorf("measure allocated %v times", a)
	}
}

func TestReaderRemainingAndPos(t *testing.T) {
	r := codec.NewReader(make([]byte, 5))
	if r.Remaining() != 40 || r.Pos() != 0 {
		t.Fatal("fresh reader")
	}
	r.ReadBits(13)
	if r.Remaining() != 27 || r.Pos() != 13 {
		t.Fatalf("pos %d remaining %d", r.Pos(), r.Remaining())
	}
	r.ReadBits(30)
	if r.Remaining() != 0 || r.Pos() != 40 {
		t.Fatalf("after truncation: pos %d remaining %d", r.Pos(), r.Remaining())
	}
}

func TestWriteBitString(t *testing.T) {
	rng := newRand(16)
	for range 2000 {
		// Encode a part once ...
		n := rng.IntN(300)
		src := codec.NewWriter(nil)
		vals := make([]uint64, 0, n)
		for i := 0; i < n; i++ {
			vals = append(vals, rng.Uint64()&1)
			src.WriteBits(vals[i], 1)
		}
		part := src.Bytes()
		// ... and splice it into a message at any offset.
		off := rng.IntN(64)
		w := codec.NewWriter(nil)
		w.WriteBits(rng.Uint64(), off)
		w.WriteBitString(part, n)
		w.WriteBits(0x3, 2)
		if err := w.Err(); err != nil || w.Len() != off+n+2 {
			t.Fatalf("n %d off %d: err %v, Len %d", n, off, err, w.Len())
		}
		var m codec.Writer
		m.Measure()
		m.WriteBits(0, off)
		m.WriteBitString(part, n)
		m.WriteBits(0x3, 2)
		if m.Len() != w.Len() {
			t.Fatalf("measured %d bits, wrote %d", m.Len(), w.Len())
		}
		r := codec.NewReader(w.Bytes())
		r.Skip(off)
		for i, v := range vals {
			if r.ReadBits(1) != v {
				t.Fatalf("n %d off %d: bit %d differs", n, off, i)
			}
		}
		if r.ReadBits(2) != 0x3 || r.Done() != nil {
			t.Fatalf("n %d off %d: trailer %v", n, off, r.Err())
		}
	}
	// Only the first n bits are taken, even when the rest of the last byte
	// is not zero.
	w := codec.NewWriter(nil)
	w.WriteBitString([]byte{0xff, 0xff}, 9)
	if got := w.Bytes(); !bytes.Equal(got, []byte{0xff, 0x01}) {
		t.Fatalf("9 bits of ff ff = % x", got)
	}
	for _, n := range []int{-1, 17} {
		w := codec.NewWriter(nil)
		w.WriteBitString([]byte{1, 2}, n)
		wantErr(t, w.Err(), codec.ErrInvalid)
		if w.Len() != 0 {
			t.Fatalf("invalid bit string wrote %d bits", w.Len())
		}
	}
}

func TestQuantizerRejectsGridBelowFloatPrecision(t *testing.T) {
	if _, err := codec.NewQuantizer(1e16, 1e16+100, 0.5); !errors.Is(err, codec.ErrInvalid) {
		t.Fatalf("a grid float64 cannot hold: %v", err)
	}
	if _, err := codec.NewQuantizer(-1e6, 1e6, 0.001); err != nil {
		t.Fatalf("a representable grid: %v", err)
	}
}

// TestReadBitsTail reads fields at every position and width of short
// buffers, where the last 8 bytes are read with one load, and compares
// them bit by bit (Peek too, whose bits past the end are zero).
func TestReadBitsTail(t *testing.T) {
	bit := func(b []byte, i uint64) uint64 {
		if i >= uint64(len(b))*8 {
			return 0
		}
		return uint64(b[i/8]>>(i%8)) & 1
	}
	for l := 0; l <= 20; l++ {
		b := make([]byte, l)
		for i := range b {
			b[i] = byte(i*37 + 11)
		}
		for pos := 0; pos <= 8*l; pos++ {
			r := codec.NewReader(b)
			r.Skip(pos)
			var peek uint64
			for k := range uint64(56) {
				peek |= bit(b, uint64(pos)+k) << k
			}
			if got := r.Peek() & (1<<56 - 1); got != peek {
				t.Fatalf("len %d pos %d: Peek %#x, want %#x", l, pos, got, peek)
			}
			for n := 0; n <= 64 && pos+n <= 8*l; n++ {
				r := codec.NewReader(b)
				r.Skip(pos)
				var want uint64
				for k := range uint64(n) {
					want |= bit(b, uint64(pos)+k) << k
				}
				if got := r.ReadBits(n); got != want || r.Err() != nil {
					t.Fatalf("len %d pos %d n %d: %#x (%v), want %#x", l, pos, n, got, r.Err(), want)
				}
			}
		}
	}
}

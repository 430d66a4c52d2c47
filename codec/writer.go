package codec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Writer packs fields into a byte slice, least significant bit first (see
// SPEC.md, "Bit layout"). The zero value is ready to use and appends to a
// nil slice; Reset points it at a caller's buffer so that steady-state
// encoding allocates nothing.
//
// A Writer never panics on a bad value. It records the first error (a value
// outside its declared range, a list that is not sorted, an impossible field
// width), writes the nearest valid value so that the stream stays
// well-formed, and reports the error from Err.
//
// In measure mode (Measure) a Writer counts bits and writes nothing: run an
// encoder against it to learn the size of a message before building it.
type Writer struct {
	buf     []byte
	acc     uint64 // pending bits, low bits first
	nacc    uint   // number of pending bits in acc, always < 64
	measure bool
	counted int // bits counted in measure mode
	err     error
}

// NewWriter returns a Writer that appends to buf[:0].
func NewWriter(buf []byte) *Writer {
	w := &Writer{}
	w.Reset(buf)
	return w
}

// Reset discards all state and makes the Writer append to buf[:0].
func (w *Writer) Reset(buf []byte) {
	*w = Writer{buf: buf[:0]}
}

// Measure discards all state and puts the Writer in measure mode: it counts
// the bits it is given and stores none of them.
func (w *Writer) Measure() {
	*w = Writer{measure: true}
}

// Len returns the number of bits written (or counted) so far.
func (w *Writer) Len() int {
	if w.measure {
		return w.counted
	}
	return len(w.buf)*8 + int(w.nacc)
}

// Err returns the first error the Writer recorded, or nil.
func (w *Writer) Err() error { return w.err }

// Fail records err if no error is recorded yet. Generated encoders use it
// for a value outside its field's range.
func (w *Writer) Fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

func (w *Writer) fail(err error, format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("%w: "+format, append([]any{err}, args...)...)
	}
}

// Bytes returns the bits written so far, the last byte padded with zero
// bits. The slice aliases the Writer's buffer: it is valid until the next
// write or Reset. In measure mode it returns nil.
func (w *Writer) Bytes() []byte {
	if w.measure {
		return nil
	}
	out := w.buf
	for n := uint(0); n < w.nacc; n += 8 {
		out = append(out, byte(w.acc>>n))
	}
	return out
}

// WriteBits writes the low n bits of v, 0 <= n <= 64.
func (w *Writer) WriteBits(v uint64, n int) {
	if uint(n) > 64 {
		w.fail(ErrInvalid, "field width %d", n)
		return
	}
	w.writeBits(v, uint(n))
}

func (w *Writer) writeBits(v uint64, n uint) {
	if w.measure {
		w.counted += int(n)
		return
	}
	v &= (uint64(1) << n) - 1 // n == 64 keeps every bit: 1<<64 is 0 in Go
	w.acc |= v << w.nacc
	total := w.nacc + n
	if total < 64 {
		w.nacc = total
		return
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, w.acc)
	spill := total - 64
	w.acc = v >> (n - spill) // the bits of v that did not fit; 0 when spill is 0
	w.nacc = spill
}

// WriteBool writes one bit.
func (w *Writer) WriteBool(b bool) {
	var v uint64
	if b {
		v = 1
	}
	w.writeBits(v, 1)
}

// WriteUint writes v in [0, max] using exactly the bits max needs
// (bits.Len64(max); zero bits when max is 0).
func (w *Writer) WriteUint(v, max uint64) {
	if v > max {
		v = w.uintOutOfRange(v, max)
	}
	w.writeBits(v, uint(bits.Len64(max)))
}

// uintOutOfRange records the error of WriteUint and returns the value to
// write; it is kept out of line so that WriteUint inlines.
func (w *Writer) uintOutOfRange(v, max uint64) uint64 {
	w.fail(ErrOutOfRange, "%d > max %d", v, max)
	return max
}

// WriteInt writes v in [min, max] as the offset v-min, using exactly the bits
// the range needs.
func (w *Writer) WriteInt(v, min, max int64) {
	if v < min || v > max {
		v = w.intOutOfRange(v, min, max)
	}
	w.writeBits(uint64(v)-uint64(min), uint(bits.Len64(uint64(max)-uint64(min))))
}

// intOutOfRange records the error of WriteInt (an empty range, or a value
// outside it) and returns the value to write.
func (w *Writer) intOutOfRange(v, min, max int64) int64 {
	switch {
	case min > max:
		w.fail(ErrInvalid, "range [%d, %d]", min, max)
		return min // writes bits.Len64 of a wrapped span: the stream is already failed
	case v < min:
		w.fail(ErrOutOfRange, "%d not in [%d, %d]", v, min, max)
		return min
	default:
		w.fail(ErrOutOfRange, "%d not in [%d, %d]", v, min, max)
		return max
	}
}

// WriteUvarint writes v in groups of 7 value bits, each followed by a
// continuation bit (1 when another group follows): 8 bits for values below
// 128, at most 80 bits.
func (w *Writer) WriteUvarint(v uint64) {
	for v >= 0x80 {
		w.writeBits(v&0x7f|0x80, 8)
		v >>= 7
	}
	w.writeBits(v, 8)
}

// WriteVarint writes v zigzag-mapped (0, -1, 1, -2, ... to 0, 1, 2, 3, ...)
// as a uvarint, so that small magnitudes of either sign are short.
func (w *Writer) WriteVarint(v int64) {
	w.WriteUvarint(Zigzag(v))
}

// Zigzag maps a signed integer to an unsigned one with small magnitudes
// first: 0, -1, 1, -2, 2 become 0, 1, 2, 3, 4.
func Zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

// Unzigzag inverts Zigzag.
func Unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// UvarintBits returns the number of bits WriteUvarint uses for v.
func UvarintBits(v uint64) int {
	groups := (bits.Len64(v) + 6) / 7
	if groups == 0 {
		groups = 1
	}
	return groups * 8
}

// WriteQuantized writes v on the grid of q. A value outside [q.Min, q.Max]
// records ErrOutOfRange and writes the nearest end.
func (w *Writer) WriteQuantized(q Quantizer, v float64) {
	i, ok := q.Index(v)
	if !ok {
		w.fail(ErrOutOfRange, "%g not in [%g, %g]", v, q.min, q.Max())
	}
	w.writeBits(i, q.bits)
}

// WriteBytes writes len(b) in bits.Len(maxLen) bits, then the bytes. A slice
// longer than maxLen records ErrTooLong and is cut to maxLen.
func (w *Writer) WriteBytes(b []byte, maxLen int) {
	if maxLen < 0 {
		w.fail(ErrInvalid, "max length %d", maxLen)
		return
	}
	if len(b) > maxLen {
		w.fail(ErrTooLong, "%d bytes > max %d", len(b), maxLen)
		b = b[:maxLen]
	}
	w.writeBits(uint64(len(b)), uint(bits.Len(uint(maxLen))))
	if w.measure {
		w.counted += 8 * len(b)
		return
	}
	for len(b) >= 8 {
		w.writeBits(binary.LittleEndian.Uint64(b), 64)
		b = b[8:]
	}
	for _, c := range b {
		w.writeBits(uint64(c), 8)
	}
}

// WriteString writes s like WriteBytes.
func (w *Writer) WriteString(s string, maxLen int) {
	if maxLen < 0 {
		w.fail(ErrInvalid, "max length %d", maxLen)
		return
	}
	if len(s) > maxLen {
		w.fail(ErrTooLong, "%d bytes > max %d", len(s), maxLen)
		s = s[:maxLen]
	}
	w.writeBits(uint64(len(s)), uint(bits.Len(uint(maxLen))))
	for len(s) >= 8 { // eight bytes at a time, laid out as one by one
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		w.writeBits(v, 64)
		s = s[8:]
	}
	for i := 0; i < len(s); i++ {
		w.writeBits(uint64(s[i]), 8)
	}
}

// AlignByte writes zero bits up to the next byte boundary.
func (w *Writer) AlignByte() {
	if pad := (8 - w.Len()%8) % 8; pad > 0 {
		w.writeBits(0, uint(pad))
	}
}

// WriteBitString writes the first n bits of b, as a Writer laid them out:
// a message part encoded once can be spliced into many messages.
func (w *Writer) WriteBitString(b []byte, n int) {
	if n < 0 || n > len(b)*8 {
		w.fail(ErrInvalid, "bit string of %d bits from %d bytes", n, len(b))
		return
	}
	if w.measure {
		w.counted += n
		return
	}
	for n >= 64 {
		w.writeBits(binary.LittleEndian.Uint64(b), 64)
		b, n = b[8:], n-64
	}
	for n > 0 {
		k := min(n, 8)
		w.writeBits(uint64(b[0]), uint(k))
		b, n = b[1:], n-k
	}
}

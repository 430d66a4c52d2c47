package codec

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// Reader unpacks fields written by a Writer. Input is hostile: every read
// is checked against the bits that remain and against the bound the caller
// gives. A Reader never panics and never allocates from a length it read.
//
// The first failure is kept: it is returned by Err, and every later read
// returns zero values, so a decoder may read a whole message and check Err
// once (or after each field, to name the field in its error).
type Reader struct {
	buf []byte
	pos uint64 // bit position of the next read
	end uint64 // len(buf) * 8
	err error
}

// NewReader returns a Reader over b. The Reader does not copy b.
func NewReader(b []byte) *Reader {
	r := &Reader{}
	r.Reset(b)
	return r
}

// Reset makes the Reader read b from its first bit and clears any error.
func (r *Reader) Reset(b []byte) {
	*r = Reader{buf: b, end: uint64(len(b)) * 8}
}

// Err returns the first error the Reader met, or nil.
func (r *Reader) Err() error { return r.err }

// Remaining returns the number of unread bits.
func (r *Reader) Remaining() int { return int(r.end - r.pos) }

// Pos returns the number of bits read so far.
func (r *Reader) Pos() int { return int(r.pos) }

// Fail records err (if no error is recorded yet) with the reader's
// position, for decoders that find a semantic error in well-formed bits.
func (r *Reader) Fail(err error) {
	r.fail(err, "")
}

func (r *Reader) fail(err error, format string, args ...any) {
	if r.err != nil {
		return
	}
	if format != "" {
		err = fmt.Errorf("%w: "+format, append([]any{err}, args...)...)
	}
	r.err = fmt.Errorf("%w (at bit %d)", err, r.pos)
	r.pos = r.end // nothing more is read
}

// ReadBits reads n bits, 0 <= n <= 64.
func (r *Reader) ReadBits(n int) uint64 {
	if uint(n) > 64 {
		r.fail(ErrInvalid, "field width %d", n)
		return 0
	}
	return r.readBits(uint64(n))
}

func (r *Reader) readBits(n uint64) uint64 {
	// Fast path: a whole 64-bit word is in range and the field fits in it
	// after the shift. n <= 56 guarantees the latter.
	if i := r.pos >> 3; n <= 56 && i+8 <= uint64(len(r.buf)) && r.pos+n <= r.end {
		v := binary.LittleEndian.Uint64(r.buf[i:]) >> (r.pos & 7)
		r.pos += n
		return v & ((uint64(1) << n) - 1)
	}
	return r.readBitsSlow(n)
}

// readBitsSlow handles fields near the end of the input, fields wider than
// 56 bits, and truncation.
func (r *Reader) readBitsSlow(n uint64) uint64 {
	if r.pos+n > r.end {
		if r.err == nil {
			r.fail(ErrTruncated, "need %d bits, %d remain", n, r.end-r.pos)
		}
		return 0
	}
	i := r.pos >> 3
	s := r.pos & 7
	var v uint64
	if i+8 <= uint64(len(r.buf)) {
		v = binary.LittleEndian.Uint64(r.buf[i:]) >> s
		if s+n > 64 { // the field reaches into a ninth byte, which exists since pos+n <= end
			v |= uint64(r.buf[i+8]) << (64 - s)
		}
	} else if l := uint64(len(r.buf)); l >= 8 {
		// Fewer than 8 bytes left: the field lies in the last 8 bytes,
		// which one load reads (pos > (l-8)*8 and pos+n <= l*8).
		v = binary.LittleEndian.Uint64(r.buf[l-8:]) >> (r.pos - (l-8)*8)
	} else {
		// A message under 8 bytes: s+n fits in what remains, below 64 bits.
		for k, c := range r.buf[i:] {
			v |= uint64(c) << (8 * uint(k))
		}
		v >>= s
	}
	r.pos += n
	return v & ((uint64(1) << n) - 1)
}

// ReadBool reads one bit.
func (r *Reader) ReadBool() bool { return r.readBits(1) == 1 }

// ReadUint reads a value written by WriteUint with the same max.
func (r *Reader) ReadUint(max uint64) uint64 {
	v := r.readBits(uint64(bits.Len64(max)))
	if v > max {
		return r.outOfRange(v, max)
	}
	return v
}

// outOfRange records a decoded value above its bound; kept out of line so
// that the readers that call it inline.
func (r *Reader) outOfRange(v, max uint64) uint64 {
	r.fail(ErrOutOfRange, "%d > max %d", v, max)
	return 0
}

// ReadInt reads a value written by WriteInt with the same range.
func (r *Reader) ReadInt(min, max int64) int64 {
	span := uint64(max) - uint64(min)
	u := r.readBits(uint64(bits.Len64(span)))
	if u > span || min > max {
		return r.intOutOfRange(u, min, max)
	}
	if r.err != nil {
		return 0 // a failed read, or a read after an error: not min
	}
	return int64(uint64(min) + u)
}

func (r *Reader) intOutOfRange(u uint64, min, max int64) int64 {
	if min > max {
		r.fail(ErrInvalid, "range [%d, %d]", min, max)
	} else {
		r.fail(ErrOutOfRange, "offset %d > span %d of [%d, %d]", u, uint64(max)-uint64(min), min, max)
	}
	return 0
}

// ReadUvarint reads a value written by WriteUvarint.
func (r *Reader) ReadUvarint() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		g := r.readBits(8)
		if r.err != nil {
			return 0
		}
		if shift == 63 && g > 1 {
			r.fail(ErrOverflow, "")
			return 0
		}
		v |= (g & 0x7f) << shift
		if g < 0x80 {
			return v
		}
	}
}

// ReadVarint reads a value written by WriteVarint.
func (r *Reader) ReadVarint() int64 { return Unzigzag(r.ReadUvarint()) }

// ReadQuantized reads a value written by WriteQuantized with the same q.
func (r *Reader) ReadQuantized(q Quantizer) float64 {
	i := r.readBits(uint64(q.bits))
	if r.err != nil {
		return 0 // a failed read, or a read after an error: not q.min
	}
	if i > q.maxIndex {
		r.fail(ErrOutOfRange, "quantized index %d > %d", i, q.maxIndex)
		return q.min
	}
	return q.Value(i)
}

// ReadBytes reads a byte string written by WriteBytes with the same maxLen
// and appends it to dst. The length is checked against maxLen and against
// the input that remains before dst grows.
func (r *Reader) ReadBytes(dst []byte, maxLen int) []byte {
	n, ok := r.readLen(maxLen, 8)
	if !ok {
		return dst
	}
	if r.pos%8 == 0 {
		i := r.pos / 8
		r.pos += uint64(n) * 8
		return append(dst, r.buf[i:i+uint64(n)]...)
	}
	for ; n >= 8; n -= 8 {
		dst = binary.LittleEndian.AppendUint64(dst, r.readBits(64))
	}
	for ; n > 0; n-- {
		dst = append(dst, byte(r.readBits(8)))
	}
	return dst
}

// ReadString reads a string written by WriteString with the same maxLen.
func (r *Reader) ReadString(maxLen int) string {
	n, ok := r.readLen(maxLen, 8)
	if !ok || n == 0 {
		return ""
	}
	if r.pos%8 == 0 {
		i := r.pos / 8
		r.pos += uint64(n) * 8
		return string(r.buf[i : i+uint64(n)])
	}
	b := make([]byte, n) // n is bounded by maxLen and by the input
	for k := range b {
		b[k] = byte(r.readBits(8))
	}
	return string(b)
}

// readLen reads a length or count written in bits.Len(max) bits and checks
// it against max and against the input left, given that each element costs
// at least minBits.
func (r *Reader) readLen(max, minBits int) (int, bool) {
	if max < 0 {
		r.fail(ErrInvalid, "max length %d", max)
		return 0, false
	}
	n := r.readBits(uint64(bits.Len(uint(max))))
	if r.err != nil {
		return 0, false
	}
	if n > uint64(max) {
		r.fail(ErrTooLong, "length %d > max %d", n, max)
		return 0, false
	}
	// Compare by division: with a max near MaxInt, n*minBits can wrap.
	if n > (r.end-r.pos)/uint64(minBits) {
		r.fail(ErrTruncated, "length %d needs %d bits, %d remain", n, n*uint64(minBits), r.end-r.pos)
		return 0, false
	}
	return int(n), true
}

// AlignByte skips to the next byte boundary. The skipped bits must be zero.
func (r *Reader) AlignByte() {
	if pad := (8 - r.pos%8) % 8; pad > 0 {
		if v := r.readBits(pad); v != 0 {
			r.fail(ErrTrailing, "non-zero padding")
		}
	}
}

// Done returns Err, or ErrTrailing when more than the last byte's zero
// padding remains unread. Call it after the last field of a message.
func (r *Reader) Done() error {
	if r.err != nil {
		return r.err
	}
	if r.end-r.pos >= 8 {
		r.fail(ErrTrailing, "%d bits unread", r.end-r.pos)
		return r.err
	}
	if r.pos < r.end && r.readBits(r.end-r.pos) != 0 {
		r.fail(ErrTrailing, "non-zero padding")
	}
	return r.err
}

// Peek returns the next bits of the input without consuming them: at least
// 56 valid bits, low bit first, with bits past the end of the input read as
// zero. Generated decoders take a run of fixed-width fields from one Peek
// and then Skip the bits they used, which checks them against the input.
func (r *Reader) Peek() uint64 {
	if i := r.pos >> 3; i+8 <= uint64(len(r.buf)) {
		return binary.LittleEndian.Uint64(r.buf[i:]) >> (r.pos & 7)
	}
	return r.peekSlow()
}

func (r *Reader) peekSlow() uint64 {
	var v uint64
	i := r.pos >> 3
	if i >= uint64(len(r.buf)) {
		return 0
	}
	if l := uint64(len(r.buf)); l >= 8 {
		return binary.LittleEndian.Uint64(r.buf[l-8:]) >> (r.pos - (l-8)*8) // bits past the end shift in as zero
	}
	for k, c := range r.buf[i:] {
		v |= uint64(c) << (8 * uint(k))
	}
	return v >> (r.pos & 7)
}

// Skip consumes n bits, failing with ErrTruncated when fewer remain.
func (r *Reader) Skip(n int) {
	if n < 0 || uint64(n) > r.end-r.pos {
		r.skipFail(n)
		return
	}
	r.pos += uint64(n)
}

func (r *Reader) skipFail(n int) {
	if n < 0 {
		r.fail(ErrInvalid, "skip %d bits", n)
		return
	}
	r.fail(ErrTruncated, "need %d bits, %d remain", n, r.end-r.pos)
}

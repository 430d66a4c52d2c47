package codec

import (
	"fmt"
	"math/bits"
)

// Frame limits.
// MaxPacket is the largest message tongbu sends unreliably: one SCTP
// chunk on a typical internet path, so that a message is never split into
// fragments (and lost whole when one of them is). The transport's
// unreliable channel, the lockstep room's frames packets and the interest
// world's packets all keep to it.
const MaxPacket = 1160

const (
	// MaxFrameType is the largest message type a frame carries (7 bits).
	MaxFrameType = 127

	// MaxPartsLimit is the most parts any message may be split into; a
	// Splitter or Reassembler configured above it is clamped to it.
	MaxPartsLimit = 1 << 14

	// splitHeaderMax bounds a split frame's header: the type byte, 16-bit
	// message id, part count (up to 16 bits as a uvarint) and index (up to 14
	// bits) rounded up to whole bytes, and a length uvarint of up to 5 bytes.
	splitHeaderMax = 1 + 6 + 5
)

// Frame is one framed message, or one part of a split message, as read by
// ReadFrame. Payload aliases the input.
type Frame struct {
	Type    uint8
	Split   bool
	MsgID   uint16 // split frames only
	Part    int    // split frames only: index, 0 <= Part < Parts
	Parts   int    // split frames only: 1 <= Parts <= MaxPartsLimit
	Payload []byte
}

// AppendFrame appends an unsplit frame carrying payload to dst.
//
// Layout (SPEC.md, "Framing"): one byte holding the split flag (bit 0, here
// 0) and the type (bits 1-7), the payload length as a uvarint, the payload.
func AppendFrame(dst []byte, typ uint8, payload []byte) []byte {
	dst = append(dst, typ<<1)
	dst = appendUvarintBytes(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// FrameOverhead returns the bytes AppendFrame adds to a payload of n bytes.
func FrameOverhead(n int) int { return 1 + UvarintBits(uint64(n))/8 }

func appendUvarintBytes(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// appendPart appends one part of a split message.
//
// Layout: the type byte with bit 0 set; then, bit-packed, the 16-bit message
// id, parts-1 as a uvarint, and the part index in bits.Len(parts-1) bits,
// padded with zero bits to a byte boundary; then the length uvarint and the
// payload, as in an unsplit frame.
func appendPart(dst []byte, typ uint8, id uint16, part, parts int, payload []byte) []byte {
	dst = append(dst, typ<<1|1)
	w := Writer{buf: dst}
	w.writeBits(uint64(id), 16)
	w.WriteUvarint(uint64(parts - 1))
	w.writeBits(uint64(part), uint(bits.Len(uint(parts-1))))
	dst = w.Bytes()
	dst = appendUvarintBytes(dst, uint64(len(payload)))
	return append(dst, payload...)
}

// ReadFrame reads the frame at the start of b and returns it with the
// number of bytes it took; b may hold further frames after it. The payload
// aliases b.
func ReadFrame(b []byte) (Frame, int, error) {
	if len(b) == 0 {
		return Frame{}, 0, fmt.Errorf("%w: empty frame", ErrTruncated)
	}
	f := Frame{Type: b[0] >> 1, Split: b[0]&1 == 1}
	r := Reader{buf: b, end: uint64(len(b)) * 8, pos: 8}
	if f.Split {
		f.MsgID = uint16(r.readBits(16))
		parts := r.ReadUvarint()
		if r.err == nil && parts >= MaxPartsLimit {
			return Frame{}, 0, fmt.Errorf("%w: %d parts > limit %d", ErrTooManyParts, parts+1, MaxPartsLimit)
		}
		f.Parts = int(parts) + 1
		f.Part = int(r.readBits(uint64(bits.Len(uint(f.Parts - 1)))))
		r.AlignByte()
		if r.err == nil && f.Part >= f.Parts {
			return Frame{}, 0, fmt.Errorf("%w: part %d of %d", ErrBadFrame, f.Part, f.Parts)
		}
	}
	n := r.ReadUvarint()
	if r.err != nil {
		return Frame{}, 0, fmt.Errorf("frame header: %w", r.err)
	}
	start := r.pos / 8
	if n > uint64(len(b))-start {
		return Frame{}, 0, fmt.Errorf("%w: payload length %d, %d bytes remain", ErrTruncated, n, uint64(len(b))-start)
	}
	f.Payload = b[start : start+n]
	return f, int(start + n), nil
}

// splitHeaderLen is the size of a split frame's header for a message in
// parts parts of up to chunk bytes.
func splitHeaderLen(parts, chunk int) int {
	bitsLen := 16 + UvarintBits(uint64(parts-1)) + bits.Len(uint(parts-1))
	return 1 + (bitsLen+7)/8 + UvarintBits(uint64(chunk))/8
}

// Splitter frames messages for a channel whose packets hold at most Limit
// bytes, splitting a message that does not fit into numbered parts. Each
// sender keeps one Splitter; its message ids wrap at 2^16.
type Splitter struct {
	// Limit is the largest packet the channel takes, in bytes. It must leave
	// room for a split header and at least one payload byte.
	Limit int
	// MaxParts caps the parts of one message (at most MaxPartsLimit). A
	// message that needs more is refused with ErrTooManyParts. Zero means
	// DefaultMaxParts.
	MaxParts int

	next uint16
	buf  []byte
}

// DefaultMaxParts is the default cap on the parts of one message.
const DefaultMaxParts = 256

// Split frames payload and calls emit with each packet in order. The packet
// passed to emit is only valid during the call: the Splitter reuses it. A
// message that fits in one packet is sent as one unsplit frame.
func (s *Splitter) Split(typ uint8, payload []byte, emit func(packet []byte) error) error {
	if typ > MaxFrameType {
		return fmt.Errorf("%w: frame type %d > %d", ErrInvalid, typ, MaxFrameType)
	}
	if len(payload)+FrameOverhead(len(payload)) <= s.Limit {
		s.buf = AppendFrame(s.buf[:0], typ, payload)
		return emit(s.buf)
	}
	maxParts := s.MaxParts
	if maxParts <= 0 {
		maxParts = DefaultMaxParts
	}
	maxParts = min(maxParts, MaxPartsLimit)
	// The header depends on the part count and the part size, which depend
	// on the header: start from the largest header and shrink to a fixed
	// point (two rounds at most in practice).
	chunk, parts := max(1, s.Limit-splitHeaderMax), 0
	for range 4 {
		parts = (len(payload) + chunk - 1) / chunk
		next := s.Limit - splitHeaderLen(parts, chunk)
		if next < 1 && parts > maxParts {
			return fmt.Errorf("%w: %d bytes need %d parts of %d, cap %d", ErrTooManyParts, len(payload), parts, chunk, maxParts)
		}
		if next < 1 {
			return fmt.Errorf("%w: packet limit %d leaves no room for a part", ErrInvalid, s.Limit)
		}
		if next == chunk {
			break
		}
		chunk = min(next, s.Limit-1)
	}
	for splitHeaderLen(parts, chunk)+chunk > s.Limit { // never over the limit
		if chunk--; chunk < 1 {
			return fmt.Errorf("%w: packet limit %d leaves no room for a part", ErrInvalid, s.Limit)
		}
		parts = (len(payload) + chunk - 1) / chunk
	}
	if parts > maxParts {
		return fmt.Errorf("%w: %d bytes need %d parts of %d, cap %d", ErrTooManyParts, len(payload), parts, chunk, maxParts)
	}
	id := s.next
	s.next++
	for i := range parts {
		end := min((i+1)*chunk, len(payload))
		s.buf = appendPart(s.buf[:0], typ, id, i, parts, payload[i*chunk:end])
		if err := emit(s.buf); err != nil {
			return err
		}
	}
	return nil
}

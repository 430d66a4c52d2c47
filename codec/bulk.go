package codec

import (
	"fmt"

	"github.com/golang/snappy"
)

// Bulk payload methods: the first byte of a bulk frame.
const (
	bulkStored = 0 // the body is the payload
	bulkSnappy = 1 // the body is a snappy block
)

// snappyMaxRatio bounds how much a valid snappy block can expand: its
// densest element is a 3-byte copy of 64 bytes. A block that claims more is
// corrupt, whatever the caller's cap; checking this first means a 7-byte
// packet can never make the decoder reserve more than a few hundred bytes.
const snappyMaxRatio = 22

// Compress appends a bulk frame holding src to dst: a method byte, then the
// snappy block of src, or src itself when compression does not make it
// smaller. Use it for byte-aligned bulk payloads (snapshots, catch-up,
// replays), not for small bit-packed messages.
func Compress(dst, src []byte) []byte {
	start := len(dst)
	need := 1 + snappy.MaxEncodedLen(len(src))
	if cap(dst)-start < need {
		grown := make([]byte, start, start+need)
		copy(grown, dst)
		dst = grown
	}
	block := snappy.Encode(dst[start+1:start+need], src)
	if len(block) >= len(src) {
		dst = append(dst[:start], bulkStored)
		return append(dst, src...)
	}
	dst = dst[:start+1+len(block)]
	dst[start] = bulkSnappy
	return dst
}

// Decompress appends the payload of the bulk frame to dst. maxLen caps the
// decoded length; the claim is checked against it, and against what the
// frame's size makes possible, before anything is allocated.
func Decompress(dst, frame []byte, maxLen int) ([]byte, error) {
	if len(frame) == 0 {
		return dst, fmt.Errorf("%w: empty bulk frame", ErrTruncated)
	}
	body := frame[1:]
	switch frame[0] {
	case bulkStored:
		if len(body) > maxLen {
			return dst, fmt.Errorf("%w: %d bytes stored, cap %d", ErrTooLarge, len(body), maxLen)
		}
		return append(dst, body...), nil
	case bulkSnappy:
		n, err := snappy.DecodedLen(body)
		if err != nil {
			return dst, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		if n > maxLen {
			return dst, fmt.Errorf("%w: block claims %d bytes, cap %d", ErrTooLarge, n, maxLen)
		}
		if n > snappyMaxRatio*len(body) {
			return dst, fmt.Errorf("%w: %d-byte block claims %d bytes", ErrCorrupt, len(body), n)
		}
		start := len(dst)
		if cap(dst)-start < n {
			grown := make([]byte, start, start+n)
			copy(grown, dst)
			dst = grown
		}
		out, err := snappy.Decode(dst[start:start+n], body)
		if err != nil {
			return dst[:start], fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		return dst[:start+len(out)], nil
	default:
		return dst, fmt.Errorf("%w: unknown bulk method %d", ErrCorrupt, frame[0])
	}
}

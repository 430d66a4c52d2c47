package fixed

import (
	"hash"
	"math/bits"
)

// Hasher hashes simulation state for desync detection: clients hash the
// same values in the same order every few frames and compare the sums. It
// is 64-bit FNV-1a over a defined byte sequence (integers little-endian),
// so the sum is the same on every platform and can be computed by a client
// in another language. It is fast and stable, not cryptographic: it cannot
// detect a client that forges its state on purpose.
//
// The zero value is ready to use. A Hasher is also a hash.Hash64.
type Hasher struct {
	// x is the FNV state XOR the offset basis, so that the zero value
	// starts from the offset basis.
	x uint64
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

var _ hash.Hash64 = (*Hasher)(nil)

// NewHasher returns a Hasher in its initial state.
func NewHasher() *Hasher { return new(Hasher) }

// Reset returns h to its initial state.
func (h *Hasher) Reset() { h.x = 0 }

// WriteUint64 hashes v as 8 bytes, little-endian.
func (h *Hasher) WriteUint64(v uint64) {
	s := h.x ^ fnvOffset
	for range 8 {
		s = (s ^ v&0xff) * fnvPrime
		v >>= 8
	}
	h.x = s ^ fnvOffset
}

// WriteInt64 hashes v as 8 bytes, two's complement little-endian.
func (h *Hasher) WriteInt64(v int64) { h.WriteUint64(uint64(v)) }

// WriteFixed hashes a's raw value as WriteInt64 does.
func (h *Hasher) WriteFixed(a Fixed) { h.WriteUint64(uint64(a)) }

// WriteVec hashes v.X then v.Y as WriteFixed does.
func (h *Hasher) WriteVec(v Vec) {
	h.WriteUint64(uint64(v.X))
	h.WriteUint64(uint64(v.Y))
}

// WriteBytes hashes p as it is, with no length prefix: when hashing several
// variable-length values, write each one's length first.
func (h *Hasher) WriteBytes(p []byte) {
	s := h.x ^ fnvOffset
	for _, c := range p {
		s = (s ^ uint64(c)) * fnvPrime
	}
	h.x = s ^ fnvOffset
}

// WriteString hashes the bytes of s as WriteBytes does.
func (h *Hasher) WriteString(s string) {
	x := h.x ^ fnvOffset
	for i := 0; i < len(s); i++ {
		x = (x ^ uint64(s[i])) * fnvPrime
	}
	h.x = x ^ fnvOffset
}

// Write hashes p like WriteBytes, for io.Writer. It never fails.
func (h *Hasher) Write(p []byte) (int, error) {
	h.WriteBytes(p)
	return len(p), nil
}

// Sum64 returns the hash of everything written since the last Reset.
func (h *Hasher) Sum64() uint64 { return h.x ^ fnvOffset }

// Sum appends the hash to b, big-endian like hash/fnv, for hash.Hash.
func (h *Hasher) Sum(b []byte) []byte {
	s := bits.ReverseBytes64(h.Sum64())
	for range 8 {
		b = append(b, byte(s))
		s >>= 8
	}
	return b
}

// Size returns 8, the length of Sum's output.
func (h *Hasher) Size() int { return 8 }

// BlockSize returns 1: FNV works a byte at a time.
func (h *Hasher) BlockSize() int { return 1 }

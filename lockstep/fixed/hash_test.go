package fixed

import (
	"bytes"
	"encoding/binary"
	"hash/fnv"
	"testing"
)

func TestHasherFNVVectors(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want uint64
	}{
		{"", 0xcbf29ce484222325},
		{"a", 0xaf63dc4c8601ec8c},
		{"foobar", 0x85944171f73967e8},
	} {
		var h Hasher
		h.WriteString(tc.s)
		if got := h.Sum64(); got != tc.want {
			t.Errorf("FNV-1a(%q) = %#x, want %#x", tc.s, got, tc.want)
		}
		h.Reset()
		h.WriteBytes([]byte(tc.s))
		if got := h.Sum64(); got != tc.want {
			t.Errorf("WriteBytes(%q) = %#x, want %#x", tc.s, got, tc.want)
		}
	}
}

// TestHasherByteOrder checks that every typed write hashes the little-endian
// bytes, against the standard library's FNV-1a.
func TestHasherByteOrder(t *testing.T) {
	h := NewHasher()
	ref := fnv.New64a()
	le := func(v uint64) {
		ref.Write(binary.LittleEndian.AppendUint64(nil, v))
	}
	h.WriteUint64(0x0102030405060708)
	le(0x0102030405060708)
	h.WriteInt64(-2)
	le(uint64(0xfffffffffffffffe))
	h.WriteFixed(f("-1.5"))
	le(uint64(-3 << 19 & (1<<64 - 1)))
	h.WriteVec(V(Pi, MinValue))
	le(uint64(Pi))
	le(1 << 63)
	h.WriteBytes([]byte("state"))
	ref.Write([]byte("state"))
	n, err := h.Write([]byte{0, 255})
	ref.Write([]byte{0, 255})
	if n != 2 || err != nil {
		t.Errorf("Write = %d, %v", n, err)
	}
	if h.Sum64() != ref.Sum64() {
		t.Fatalf("Sum64 = %#x, hash/fnv says %#x", h.Sum64(), ref.Sum64())
	}
	if !bytes.Equal(h.Sum([]byte("x")), ref.Sum([]byte("x"))) {
		t.Errorf("Sum = %x, hash/fnv says %x", h.Sum(nil), ref.Sum(nil))
	}
	if h.Size() != 8 || h.BlockSize() != 1 {
		t.Error("Size/BlockSize")
	}
	h.Reset()
	if h.Sum64() != 0xcbf29ce484222325 {
		t.Error("Reset")
	}
}

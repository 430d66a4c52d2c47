package codec_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/codec"
)

const (
	methodStored = 0
	methodSnappy = 1
)

func compressibleText(n int) []byte {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("entity ")
		b.WriteString(strings.Repeat("x", i%17))
		b.WriteString(" moved to tile 42; ")
	}
	return []byte(b.String()[:n])
}

func TestCompressRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		src    []byte
		method byte
	}{
		{"empty", nil, methodStored},
		{"one byte", []byte{7}, methodStored},
		{"text", compressibleText(10_000), methodSnappy},
		{"zeros", make([]byte, 1<<20), methodSnappy},
		{"random", randBytes(30, 10_000), methodStored},
		{"random small", randBytes(31, 40), methodStored},
	}
	for _, tt := range tests {
		frame := codec.Compress(nil, tt.src)
		if frame[0] != tt.method {
			t.Errorf("%s: method %d, want %d", tt.name, frame[0], tt.method)
		}
		switch tt.method {
		case methodStored:
			if len(frame) != 1+len(tt.src) || !bytes.Equal(frame[1:], tt.src) {
				t.Errorf("%s: stored frame of %d bytes for %d", tt.name, len(frame), len(tt.src))
			}
		case methodSnappy:
			if len(frame) >= len(tt.src) {
				t.Errorf("%s: compressed to %d bytes from %d", tt.name, len(frame), len(tt.src))
			}
		}
		got, err := codec.Decompress(nil, frame, len(tt.src))
		if err != nil || !bytes.Equal(got, tt.src) {
			t.Errorf("%s: round trip: %d bytes, %v", tt.name, len(got), err)
		}
	}
}

func TestCompressRandomSizes(t *testing.T) {
	rng := newRand(32)
	for i := range 300 {
		n := rng.IntN(5000)
		var src []byte
		if i%2 == 0 {
			src = compressibleText(n)
		} else {
			src = randBytes(uint64(i), n)
		}
		frame := codec.Compress(nil, src)
		if len(frame) > 1+len(src) {
			t.Fatalf("%d bytes grew to a %d-byte frame", n, len(frame))
		}
		got, err := codec.Decompress(nil, frame, n)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("size %d: %v", n, err)
		}
	}
}

func TestCompressAppends(t *testing.T) {
	src := compressibleText(5000)
	for _, dst := range [][]byte{
		[]byte("head"),
		append(make([]byte, 0, 1<<16), "head"...),                  // room to spare
		append(bytes.Repeat([]byte{0xee}, 100)[:0:100], "head"...), // too little room
	} {
		frame := codec.Compress(dst, src)
		if string(frame[:4]) != "head" {
			t.Fatalf("Compress lost the prefix: %q", frame[:4])
		}
		got, err := codec.Decompress(nil, frame[4:], len(src))
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("round trip after a prefix: %v", err)
		}
	}
	// Stored frames append too.
	rnd := randBytes(33, 100)
	frame := codec.Compress([]byte("head"), rnd)
	if string(frame[:4]) != "head" || frame[4] != methodStored || !bytes.Equal(frame[5:], rnd) {
		t.Fatal("stored frame after a prefix")
	}
}

func TestDecompressAppends(t *testing.T) {
	src := compressibleText(3000)
	for _, frame := range [][]byte{codec.Compress(nil, src), codec.Compress(nil, randBytes(34, 3000))} {
		want, err := codec.Decompress(nil, frame, 1<<20)
		noErr(t, err)
		got, err := codec.Decompress([]byte("prefix"), frame, 1<<20)
		if err != nil || string(got[:6]) != "prefix" || !bytes.Equal(got[6:], want) {
			t.Fatalf("Decompress with a prefix: %v", err)
		}
		// With room in dst, Decompress writes in place.
		dst := append(make([]byte, 0, 8192), "prefix"...)
		got, err = codec.Decompress(dst, frame, 1<<20)
		if err != nil || &got[0] != &dst[0] || !bytes.Equal(got[6:], want) {
			t.Fatalf("Decompress did not append in place: %v", err)
		}
	}
}

func TestDecompressCap(t *testing.T) {
	src := compressibleText(10_000)
	frame := codec.Compress(nil, src)
	if frame[0] != methodSnappy {
		t.Fatal("text did not compress")
	}
	if _, err := codec.Decompress(nil, frame, len(src)); err != nil {
		t.Fatalf("at the cap: %v", err)
	}
	got, err := codec.Decompress([]byte("keep"), frame, len(src)-1)
	wantErr(t, err, codec.ErrTooLarge)
	if string(got) != "keep" {
		t.Fatalf("a refused frame changed dst: %q", got)
	}
	stored := codec.Compress(nil, randBytes(35, 1000))
	if _, err := codec.Decompress(nil, stored, 1000); err != nil {
		t.Fatalf("stored at the cap: %v", err)
	}
	_, err = codec.Decompress(nil, stored, 999)
	wantErr(t, err, codec.ErrTooLarge)
	_, err = codec.Decompress(nil, []byte{methodStored}, -1)
	wantErr(t, err, codec.ErrTooLarge)
}

// hostileSnappy returns a 7-byte bulk frame whose snappy header claims
// claim decoded bytes.
func hostileSnappy(claim uint64) []byte {
	frame := binary.AppendUvarint([]byte{methodSnappy}, claim)
	for len(frame) < 7 {
		frame = append(frame, 0)
	}
	return frame[:7]
}

func TestDecompressHostileClaimAllocatesNothing(t *testing.T) {
	const maxLen = 64 << 20
	for _, claim := range []uint64{60 << 20, 64 << 20, 1 << 30, 200} {
		frame := hostileSnappy(claim)
		if len(frame) != 7 {
			t.Fatalf("frame of %d bytes", len(frame))
		}
		var out []byte
		var err error
		call := func() { out, err = codec.Decompress(nil, frame, maxLen) }
		total := allocBytes(100, call)
		if err == nil {
			t.Fatalf("claim %d: a 7-byte frame decoded to %d bytes", claim, len(out))
		}
		if total > 64<<10 {
			t.Errorf("claim %d: 100 calls allocated %d bytes", claim, total)
		}
		if out != nil {
			t.Errorf("claim %d: returned %d bytes", claim, len(out))
		}
	}
	_, err := codec.Decompress(nil, hostileSnappy(60<<20), 64<<20)
	wantErr(t, err, codec.ErrCorrupt)
	_, err = codec.Decompress(nil, hostileSnappy(1<<30), 64<<20)
	wantErr(t, err, codec.ErrTooLarge)
}

// densestSnappy returns a valid snappy block of one literal byte followed
// by k copies of 64 bytes at offset 1, each 3 bytes long: the most a block
// can expand.
func densestSnappy(k int) []byte {
	n := 1 + 64*k
	b := binary.AppendUvarint(nil, uint64(n))
	b = append(b, 0x00, 'z') // literal of length 1
	for range k {
		b = append(b, 63<<2|2, 1, 0) // tagCopy2, length 64, offset 1
	}
	return b
}

func TestDecompressDensestValidBlock(t *testing.T) {
	for _, k := range []int{1, 2, 10, 1000, 100_000} {
		frame := append([]byte{methodSnappy}, densestSnappy(k)...)
		got, err := codec.Decompress(nil, frame, 1<<30)
		if err != nil {
			t.Fatalf("k=%d: the densest valid block was refused: %v", k, err)
		}
		if len(got) != 1+64*k || bytes.Count(got, []byte{'z'}) != len(got) {
			t.Fatalf("k=%d: decoded %d bytes", k, len(got))
		}
	}
	// Long runs from the real encoder decode too.
	for _, n := range []int{1, 64, 65, 1000, 1 << 16, 3 << 20} {
		src := bytes.Repeat([]byte{'a'}, n)
		got, err := codec.Decompress(nil, codec.Compress(nil, src), n)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("run of %d: %v", n, err)
		}
	}
}

func TestDecompressMalformed(t *testing.T) {
	valid := codec.Compress(nil, compressibleText(2000))
	tests := []struct {
		name  string
		frame []byte
		want  error
	}{
		{"empty frame", nil, codec.ErrTruncated},
		{"empty frame, not nil", []byte{}, codec.ErrTruncated},
		{"method 2", []byte{2, 1, 2, 3}, codec.ErrCorrupt},
		{"method 255", []byte{0xff}, codec.ErrCorrupt},
		{"snappy, no header", []byte{methodSnappy}, codec.ErrCorrupt},
		{"snappy, header overflows", []byte{methodSnappy, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, codec.ErrCorrupt},
		{"snappy, truncated body", valid[:len(valid)-1], codec.ErrCorrupt},
		{"snappy, short body", valid[:len(valid)/2], codec.ErrCorrupt},
		{"snappy, copy before start", []byte{methodSnappy, 10, 1<<2 | 1, 5}, codec.ErrCorrupt},
		{"snappy, offset 0", []byte{methodSnappy, 5, 0x00, 'a', 0<<2 | 1, 0}, codec.ErrCorrupt},
		{"snappy, literal past end", []byte{methodSnappy, 5, 9 << 2, 'a'}, codec.ErrCorrupt},
		{"snappy, more than claimed", append([]byte{methodSnappy, 2}, 2<<2, 'a', 'b', 'c'), codec.ErrCorrupt},
	}
	for _, tt := range tests {
		got, err := codec.Decompress([]byte("dst"), tt.frame, 1<<20)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
		if string(got) != "dst" {
			t.Errorf("%s: dst became %q", tt.name, got)
		}
	}
}

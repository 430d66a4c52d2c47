package prefetch

import (
	"testing"
	"unsafe"
)

// TestLines: a prefetch of any length, from any alignment, changes
// nothing it covers (and does not fault), and asking for none is fine.
func TestLines(t *testing.T) {
	b := make([]byte, 4096+64)
	for i := range b {
		b[i] = byte(i)
	}
	for _, tc := range []struct{ off, n int }{{0, 0}, {0, 1}, {1, 63}, {3, 64}, {17, 1000}, {64, 4096}} {
		Lines(unsafe.Pointer(&b[tc.off]), uintptr(tc.n))
	}
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed: %d", i, b[i])
		}
	}
}

func BenchmarkLines(b *testing.B) {
	s := make([]byte, 1024)
	for b.Loop() {
		Lines(unsafe.Pointer(&s[0]), uintptr(len(s)))
	}
}

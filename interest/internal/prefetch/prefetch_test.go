package prefetch

import (
	"testing"
	"unsafe"
)

// Line is only a hint: it must not fault or change memory, whatever the
// address, nil included.
func TestLine(t *testing.T) {
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i)
	}
	for i := 0; i < len(b); i += 64 {
		Line(unsafe.Pointer(&b[i]))
	}
	Line(nil)
	for i := range b {
		if b[i] != byte(i) {
			t.Fatalf("byte %d changed", i)
		}
	}
}

func BenchmarkLine(b *testing.B) {
	x := make([]byte, 64)
	for b.Loop() {
		Line(unsafe.Pointer(&x[0]))
	}
}

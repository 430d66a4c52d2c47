package sctp

import (
	"testing"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/internal/prefetch"
)

// TestSendSpans: the spans a sender warms cover every field queueing an
// unreliable message touches, and lie inside the association.
func TestSendSpans(t *testing.T) {
	a := New(Config{}, time.Now())
	spans := a.SendSpans()
	base := uintptr(unsafe.Pointer(a))
	covered := func(off, size uintptr) bool {
		for _, s := range spans {
			p, n := s.Bounds()
			if from := uintptr(p) - base; off >= from && off+size <= from+n {
				return true
			}
		}
		return false
	}
	for _, f := range []struct {
		name      string
		off, size uintptr
	}{
		{"cfg.MaxMessage", unsafe.Offsetof(a.cfg) + unsafe.Offsetof(a.cfg.MaxMessage), unsafe.Sizeof(a.cfg.MaxMessage)},
		{"st", unsafe.Offsetof(a.st), unsafe.Sizeof(a.st)},
		{"uq", unsafe.Offsetof(a.uq), unsafe.Sizeof(a.uq)},
		{"um", unsafe.Offsetof(a.um), unsafe.Sizeof(a.um)},
	} {
		if !covered(f.off, f.size) {
			t.Errorf("%s (offset %d) is in no span: %v", f.name, f.off, spans)
		}
	}
	for _, s := range spans {
		p, n := s.Bounds()
		if from := uintptr(p) - base; from+n > unsafe.Sizeof(*a) || n == 0 {
			t.Errorf("span at %d of %d bytes: outside the association (%d)", from, n, unsafe.Sizeof(*a))
		}
		s.Warm()
	}
	if a.Span() == (prefetch.Span{}) {
		t.Fatal("no span of the whole association")
	}
}

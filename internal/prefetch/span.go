package prefetch

import "unsafe"

// Span is an object's memory, to ask for later: kept where the loop that
// asks can read it without waiting on the object itself.
type Span struct {
	p unsafe.Pointer
	n uintptr
}

// SpanOf is the n bytes from p, which must point into a live object of
// at least n bytes.
func SpanOf(p unsafe.Pointer, n uintptr) Span { return Span{p, n} }

// Warm asks the CPU to bring the span into its caches; the zero Span
// asks for nothing.
func (s Span) Warm() {
	if s.p != nil {
		Lines(s.p, s.n)
	}
}

// Bounds returns where the span starts and its length, for tests of what
// a span covers.
func (s Span) Bounds() (unsafe.Pointer, uintptr) { return s.p, s.n }

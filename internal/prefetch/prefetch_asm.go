//go:build amd64 || arm64

package prefetch

import "unsafe"

// Lines asks the CPU to bring the n bytes from p into its caches, one
// cache line at a time. p must point into a live object of at least n
// bytes.
//
//go:noescape
func Lines(p unsafe.Pointer, n uintptr)

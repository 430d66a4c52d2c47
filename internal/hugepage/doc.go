// Package hugepage asks Linux to back the Go heap with transparent huge
// pages when the system leaves them to each program (THP mode "madvise",
// the default of most distributions).
//
// An interest world reads tens of megabytes of entities, observers and
// regions every tick, scattered over the heap: with 4 KiB pages most of
// those reads also miss the TLB. The Go runtime leaves the choice of page
// size to the system setting, so a server that wants huge pages in
// "madvise" mode has to ask, as a JVM does with
// -XX:+UseTransparentHugePages. An Advisor finds the heap's mappings in
// /proc/self/maps (those around the address of a heap object), advises
// each new one with MADV_HUGEPAGE, so that its later page faults take huge
// pages, and collapses what is already there with MADV_COLLAPSE. Mappings
// the heap adds later need another call: Keep makes one every interval.
//
// It does nothing useful when the system mode is "never", and on other
// systems Advise returns ErrUnsupported.
package hugepage

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
// the address space not advised before with MADV_HUGEPAGE, so that its
// later page faults take huge pages, and collapses what is already there
// with MADV_COLLAPSE. Mappings the heap adds later need another call: Keep
// makes one every interval.
//
// The trade: the heap's resident size can grow, since a huge page is
// resident whole while the Go scavenger returns free memory 4 KiB at a
// time; the Go runtime leaves the heap to the system's setting for that
// reason. A server whose tick reads a large heap every frame gains more
// than it pays. Advise returns ErrUnsupported on systems other than Linux,
// where the mode is "never", and under GODEBUG=disablethp=1.
package hugepage

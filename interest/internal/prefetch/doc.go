// Package prefetch asks the processor to start loading a cache line that
// a loop will read a few iterations later.
//
// An interest world's tick walks tens of thousands of entities and
// observers that sit in different parts of the heap, and most of its time
// is spent waiting for memory. A loop that reads the next items ahead with
// ordinary loads (as the world did) helps only while the processor has
// room for the waiting loads in its reorder window: a load that misses
// holds its place there until the data comes, and the window fills with
// the work of the current item behind it. A prefetch instruction retires
// at once, so the line loads while the loop goes on, however long the
// work in between.
//
// Line is PREFETCHT0 on amd64 and PRFM PLDL1KEEP on arm64, and does
// nothing elsewhere. It never faults, whatever the address, and is only a
// hint: correctness never depends on it.
package prefetch

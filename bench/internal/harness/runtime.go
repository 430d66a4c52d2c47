package harness

import "runtime/metrics"

// Runtime is a reading of the Go runtime's own counters: the CPU time it
// accounts to the garbage collector, to everything and to idle Ps, and
// the heap allocations made so far.
type Runtime struct {
	GCCPU, TotalCPU, IdleCPU float64 // seconds
	Allocs                   uint64  // heap allocations, tiny ones included
}

var runtimeNames = []string{
	"/cpu/classes/gc/total:cpu-seconds",
	"/cpu/classes/total:cpu-seconds",
	"/cpu/classes/idle:cpu-seconds",
	"/gc/heap/allocs:objects",
	"/gc/heap/tiny/allocs:objects",
}

// ReadRuntime reads the runtime's counters now.
func ReadRuntime() Runtime {
	s := make([]metrics.Sample, len(runtimeNames))
	for i, n := range runtimeNames {
		s[i].Name = n
	}
	metrics.Read(s)
	f := func(i int) float64 {
		if s[i].Value.Kind() == metrics.KindFloat64 {
			return s[i].Value.Float64()
		}
		return 0
	}
	u := func(i int) uint64 {
		if s[i].Value.Kind() == metrics.KindUint64 {
			return s[i].Value.Uint64()
		}
		return 0
	}
	return Runtime{GCCPU: f(0), TotalCPU: f(1), IdleCPU: f(2), Allocs: u(3) + u(4)}
}

// GCFraction is the garbage collector's share of the CPU the process's
// Go code used between b and r (as the runtime accounts it: its mark
// workers and assists, and its pauses, over all but the idle time).
func (r Runtime) GCFraction(b Runtime) float64 {
	busy := (r.TotalCPU - b.TotalCPU) - (r.IdleCPU - b.IdleCPU)
	if busy <= 0 {
		return 0
	}
	return (r.GCCPU - b.GCCPU) / busy
}

// AllocsSince is the heap allocations made between b and r.
func (r Runtime) AllocsSince(b Runtime) uint64 { return r.Allocs - b.Allocs }

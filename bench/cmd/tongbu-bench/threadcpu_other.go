//go:build !linux

package main

import "time"

// threadClock names what threadCPU measures, for the scenarios' output.
const threadClock = "wall time (no per-thread CPU clock on this platform)"

var clockBase = time.Now()

// threadCPU falls back to monotonic wall time where there is no
// per-thread CPU clock.
func threadCPU() time.Duration { return time.Since(clockBase) }

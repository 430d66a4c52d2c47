//go:build !linux

package harness

import "time"

// ThreadClock names what ThreadCPU measures, for the scenarios' output.
const ThreadClock = "wall time (no per-thread CPU clock on this platform)"

var clockBase = time.Now()

// ThreadCPU falls back to monotonic wall time where there is no
// per-thread CPU clock.
func ThreadCPU() time.Duration { return time.Since(clockBase) }

//go:build !unix

package harness

import "time"

// CPUTime is not measured on this platform.
func CPUTime() time.Duration { return 0 }

// CPUTimes is not measured on this platform.
func CPUTimes() (user, sys time.Duration) { return 0, 0 }

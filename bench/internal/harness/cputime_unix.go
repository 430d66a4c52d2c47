//go:build unix

package harness

import (
	"syscall"
	"time"
)

// CPUTime returns the user plus system CPU time of this process.
func CPUTime() time.Duration {
	user, sys := CPUTimes()
	return user + sys
}

// CPUTimes returns this process's CPU time in user space and in the
// kernel (its system calls, and the network stack's work they do).
func CPUTimes() (user, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

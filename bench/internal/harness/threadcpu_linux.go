//go:build linux

package harness

import (
	"syscall"
	"time"
	"unsafe"
)

// ThreadClock names what ThreadCPU measures, for the scenarios' output.
const ThreadClock = "thread CPU time (CLOCK_THREAD_CPUTIME_ID, one core)"

// ThreadCPU returns the CPU time of the calling OS thread; lock the
// goroutine to its thread (runtime.LockOSThread) around measurements.
func ThreadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

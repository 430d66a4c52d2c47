//go:build linux

package main

import (
	"syscall"
	"time"
	"unsafe"
)

// threadClock names what threadCPU measures, for the scenarios' output.
const threadClock = "thread CPU time (CLOCK_THREAD_CPUTIME_ID, one core)"

// threadCPU returns the CPU time of the calling OS thread; lock the
// goroutine to its thread (runtime.LockOSThread) around measurements.
func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

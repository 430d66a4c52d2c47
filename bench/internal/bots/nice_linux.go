package bots

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// renice sets the niceness of every thread of this process (Linux's
// nice is a thread's): the threads made later inherit it from the thread
// that makes them. It goes over the threads until a pass finds no new
// one, for a thread made during a pass.
func renice(n int) error {
	done := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return fmt.Errorf("renice: %w", err)
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := unix.Setpriority(unix.PRIO_PROCESS, tid, n); err != nil && err != unix.ESRCH { // ESRCH: the thread ended
				return fmt.Errorf("renice thread %d to %d: %w", tid, n, err)
			}
			done[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
}

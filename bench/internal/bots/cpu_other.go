//go:build !linux

package bots

import "errors"

// renice: only Linux's nice is wired up.
func renice(n int) error {
	if n == 0 {
		return nil
	}
	return errors.New("renice: only on Linux")
}

// twoCPUs: pinning is only wired up on Linux.
func twoCPUs() (server, bots int, ok bool) { return 0, 0, false }

func pinTo(pid, cpu int) error { return errors.New("pin: only on Linux") }

func pinApart(server, bots, botsPid int, spill bool) (undo func(), err error) {
	return nil, errors.New("pin: only on Linux")
}

// cpuTicks: /proc/stat is Linux's.
func cpuTicks(cpu int) (busy, total uint64, ok bool) { return 0, 0, false }

// pinnedTo: pinning is only wired up on Linux.
func pinnedTo(cpu int) bool { return false }

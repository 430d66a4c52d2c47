package bots

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// eachThread calls f with every thread of process pid, going over them
// until a pass finds no new one, for a thread made during a pass; threads
// made later inherit what f set from the thread that makes them (Linux
// keeps niceness and CPU affinity per thread).
func eachThread(pid int, f func(tid int) error) error {
	done := map[int]bool{}
	for {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
		if err != nil {
			return err
		}
		fresh := false
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil || done[tid] {
				continue
			}
			if err := f(tid); err != nil && err != unix.ESRCH { // ESRCH: the thread ended
				return fmt.Errorf("thread %d: %w", tid, err)
			}
			done[tid], fresh = true, true
		}
		if !fresh {
			return nil
		}
	}
}

// renice sets the niceness of every thread of this process.
func renice(n int) error {
	if err := eachThread(os.Getpid(), func(tid int) error { return unix.Setpriority(unix.PRIO_PROCESS, tid, n) }); err != nil {
		return fmt.Errorf("renice to %d: %w", n, err)
	}
	return nil
}

// twoCPUs returns the first two CPUs this process could run on when it
// started (before it pinned itself): one for the server, one for the
// bots. They are logical CPUs: on a machine whose first two are threads
// of one core, they share it. ok is false when it could run on fewer.
func twoCPUs() (server, bots int, ok bool) {
	return startCPUs.server, startCPUs.bots, startCPUs.ok
}

var startCPUs = func() (c struct {
	server, bots int
	ok           bool
}) {
	var set unix.CPUSet
	if unix.SchedGetaffinity(0, &set) != nil {
		return c
	}
	var cpus []int
	for i := 0; i < len(set)*64 && len(cpus) < 2; i++ {
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	if len(cpus) == 2 {
		c.server, c.bots, c.ok = cpus[0], cpus[1], true
	}
	return c
}()

// pin puts every thread of process pid on the CPUs of set.
func pin(pid int, set unix.CPUSet) error {
	return eachThread(pid, func(tid int) error { return unix.SchedSetaffinity(tid, &set) })
}

// pinTo puts process pid on CPU cpu.
func pinTo(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return pin(pid, set)
}

// pinApart puts this process on CPU server and process bots on CPU
// bots (and on CPU server at SCHED_IDLE, with spill), and returns what
// puts this one back on the CPUs it had (the bots' process exits after
// the run, its pin and policy with it).
func pinApart(server, bots, botsPid int, spill bool) (undo func(), err error) {
	var was, s, b unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, fmt.Errorf("pin: %w", err)
	}
	undo = func() {
		if err := pin(os.Getpid(), was); err != nil {
			fmt.Fprintf(os.Stderr, "bench: the server's CPUs not restored: %v\n", err)
		}
	}
	s.Set(server)
	b.Set(bots)
	if err := pin(os.Getpid(), s); err != nil {
		undo()
		return nil, fmt.Errorf("pin the server to CPU %d: %w", server, err)
	}
	if spill {
		// Threads made later inherit the policy, as they do the CPUs.
		idle := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
		if err := eachThread(botsPid, func(tid int) error { return unix.SchedSetAttr(tid, &idle, 0) }); err != nil {
			undo()
			return nil, fmt.Errorf("the bots at SCHED_IDLE: %w", err)
		}
		b.Set(server)
	}
	if err := pin(botsPid, b); err != nil {
		undo()
		return nil, fmt.Errorf("pin the bots to CPU %d: %w", bots, err)
	}
	return undo, nil
}

// cpuTicks returns how long CPU cpu has been busy (everything but idle
// and I/O wait: this process's threads, the kernel's interrupts and
// softirqs, ksoftirqd) and its total time, in clock ticks, from
// /proc/stat.
func cpuTicks(cpu int) (busy, total uint64, ok bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	defer f.Close()
	name := "cpu" + strconv.Itoa(cpu)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[0] != name {
			continue
		}
		for i, v := range fields[1:] {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			if i >= 8 { // guest time is counted in user time already
				break
			}
			total += n
			if i != 3 && i != 4 { // idle, iowait
				busy += n
			}
		}
		return busy, total, true
	}
	return 0, 0, false
}

// pinnedTo reports whether this process runs on CPU cpu alone.
func pinnedTo(cpu int) bool {
	var set unix.CPUSet
	return unix.SchedGetaffinity(0, &set) == nil && set.Count() == 1 && set.IsSet(cpu)
}

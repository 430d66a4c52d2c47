package bots

import (
	"maps"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRenice: every thread of the process is at the niceness asked for
// (field 19 of each thread's stat). The test binary stays at nice 7.
func TestRenice(t *testing.T) {
	if err := renice(7); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/stat")
		if err != nil {
			continue // the thread ended
		}
		// The command name, in parentheses, may hold spaces: count the
		// fields after it.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if nice := f[16]; nice != "7" {
			t.Errorf("thread %s is at nice %s, want 7", task.Name(), nice)
		}
	}
}

// TestPin: pinning apart puts every thread of this process on the
// server's CPU and every thread of another process (here a sleep) on the
// bots' (each thread's Cpus_allowed_list); with spill the other's threads
// may also run on the server's CPU, at SCHED_IDLE. Undoing it gives this
// one back the CPUs it had.
func TestPin(t *testing.T) {
	server, bots, ok := twoCPUs()
	if !ok {
		t.Skip("fewer than two CPUs to pin to")
	}
	threads := func(pid int) []string {
		tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task/")
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, task := range tasks {
			ids = append(ids, task.Name())
		}
		return ids
	}
	allowed := func(pid int) map[string]bool { // the threads' CPU lists
		lists := map[string]bool{}
		for _, tid := range threads(pid) {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/status")
			if err != nil {
				continue // the thread ended
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
					lists[strings.TrimSpace(v)] = true
				}
			}
		}
		return lists
	}
	policies := func(pid int) map[uint32]bool {
		ps := map[uint32]bool{}
		for _, tid := range threads(pid) {
			id, _ := strconv.Atoi(tid)
			if a, err := unix.SchedGetAttr(id, 0); err == nil {
				ps[a.Policy] = true
			}
		}
		return ps
	}
	both := strconv.Itoa(min(server, bots)) + "," + strconv.Itoa(max(server, bots))
	if max(server, bots) == min(server, bots)+1 {
		both = strconv.Itoa(min(server, bots)) + "-" + strconv.Itoa(max(server, bots))
	}
	for _, tc := range []struct {
		spill  bool
		cpus   string // the other's threads' list
		policy uint32
	}{
		{false, strconv.Itoa(bots), unix.SCHED_NORMAL},
		{true, both, unix.SCHED_IDLE},
	} {
		other := exec.Command("sleep", "30")
		if err := other.Start(); err != nil {
			t.Skip("no sleep to pin:", err)
		}
		me, it := os.Getpid(), other.Process.Pid
		before := allowed(me)
		undo, err := pinApart(server, bots, it, tc.spill)
		if err != nil {
			other.Process.Kill()
			other.Wait()
			t.Fatal(err)
		}
		if got, want := allowed(me), map[string]bool{strconv.Itoa(server): true}; !maps.Equal(got, want) {
			t.Errorf("spill %v: the server's threads may run on %v, want %v", tc.spill, got, want)
		}
		if got, want := allowed(it), map[string]bool{tc.cpus: true}; !maps.Equal(got, want) {
			t.Errorf("spill %v: the bots' threads may run on %v, want %v", tc.spill, got, want)
		}
		if got, want := policies(it), map[uint32]bool{tc.policy: true}; !maps.Equal(got, want) {
			t.Errorf("spill %v: the bots' threads' policies %v, want %v", tc.spill, got, want)
		}
		if got := policies(me); !maps.Equal(got, map[uint32]bool{unix.SCHED_NORMAL: true}) {
			t.Errorf("spill %v: the server's threads' policies %v, want SCHED_NORMAL only", tc.spill, got)
		}
		undo()
		if got := allowed(me); !maps.Equal(got, before) {
			t.Errorf("after undo the server's threads may run on %v, want %v", got, before)
		}
		other.Process.Kill()
		other.Wait()
	}
}

// TestCPUTicks: a CPU's busy time is part of its total, and both grow
// while this process keeps it busy; a CPU that does not exist is not
// found.
func TestCPUTicks(t *testing.T) {
	cpu, _, ok := twoCPUs()
	if !ok {
		t.Skip("fewer than two CPUs")
	}
	busy0, total0, ok := cpuTicks(cpu)
	if !ok || busy0 > total0 {
		t.Fatalf("cpu%d: busy %d of %d (ok %v)", cpu, busy0, total0, ok)
	}
	var set unix.CPUSet
	set.Set(cpu)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	defer unix.SchedSetaffinity(0, &was)
	for end := time.Now().Add(100 * time.Millisecond); time.Now().Before(end); {
	}
	busy1, total1, ok := cpuTicks(cpu)
	if !ok || busy1 > total1 || busy1 <= busy0 || total1 <= total0 {
		t.Fatalf("cpu%d after 100 ms of work: busy %d -> %d, total %d -> %d", cpu, busy0, busy1, total0, total1)
	}
	if _, _, ok := cpuTicks(1 << 20); ok {
		t.Error("a CPU that does not exist was found")
	}
}

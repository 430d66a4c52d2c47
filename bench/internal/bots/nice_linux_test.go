package bots

import (
	"os"
	"strings"
	"testing"
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

//go:build !js

package main

import (
	"bytes"
	"log/slog"
	"runtime"
	"strings"
	"testing"
)

// TestHugePages: the advice is made at once and said in the log (or why
// it cannot be); stopping waits for it, so the log is complete when it
// returns (hugepage.Keep advises once before it looks at its context).
func TestHugePages(t *testing.T) {
	var logs bytes.Buffer
	stop := keepHugePages(slog.New(slog.NewTextHandler(&logs, nil)))
	stop()
	out := logs.String()
	if !strings.Contains(out, "huge pages for the heap") {
		t.Fatalf("log %q: want a line on huge pages", out)
	}
	switch {
	case runtime.GOOS != "linux":
		if !strings.Contains(out, "none to ask for") {
			t.Fatalf("log %q: want why there are no huge pages on %s", out, runtime.GOOS)
		}
	case !strings.Contains(out, "none to ask for") && !strings.Contains(out, "advised_bytes="):
		t.Fatalf("log %q: want the heap's advised bytes", out)
	}
}

//go:build !js

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// TestReplayCommand: the server binary reads any replay (info) and
// verifies none (it links no game): verify says so, and where to verify.
func TestReplayCommand(t *testing.T) {
	var buf bytes.Buffer
	rw, err := replay.NewWriter(&buf, replay.Header{Game: "movers", Config: lockstep.Config{Players: 2}.WithDefaults(), Start: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "movers.tbr")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"replay", "info", file}, &out, &errb); code != 0 || !strings.Contains(out.String(), `game       "movers"`) {
		t.Fatalf("info: exit %d\n%s%s", code, out.String(), errb.String())
	}
	if code := run([]string{"replay", "verify", file}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "it verifies no game") || !strings.Contains(errb.String(), "tongbu demo replay verify") {
		t.Fatalf("verify: exit %d; %s", code, errb.String())
	}
}

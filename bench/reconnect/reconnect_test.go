//go:build !js

package reconnect

import (
	"io"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 5 s of real time")
	}
	kv := harness.LastResult(t, "reconnect", "-drop", "1m", "-rooms", "2", "-baseline", "1s")
	frames, err1 := strconv.Atoi(kv["frames"])
	toLive, err2 := strconv.Atoi(kv["to_live_ms"])
	bytes, err3 := strconv.Atoi(kv["bytes"])
	late, err4 := strconv.ParseFloat(kv["other_rooms_p99_late_ms"], 64)
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatalf("RESULT %v: %v", kv, err)
		}
	}
	// A minute at 15 Hz and the frames cut while the player was away.
	if frames < 900 || toLive <= 0 || bytes <= 0 || late < 0 {
		t.Errorf("RESULT %v", kv)
	}
	if code := harness.Command([]string{"reconnect", "-drop", "1s"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("-drop 1s: exit %d", code)
	}
}

func TestBenchReconnectSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 5 s of real time")
	}
	kv := harness.LastResult(t, "reconnect", "-snapshot", "-compare=false", "-drop", "1m", "-rooms", "2", "-baseline", "1s")
	frames, err1 := strconv.Atoi(kv["frames"])
	toLive, err2 := strconv.Atoi(kv["to_live_ms"])
	bytes, err3 := strconv.Atoi(kv["bytes"])
	for _, err := range []error{err1, err2, err3} {
		if err != nil {
			t.Fatalf("RESULT %v: %v", kv, err)
		}
	}
	// A snapshot of 10 movers and a few frames: far less than the log.
	if kv["mode"] != "snapshot" || frames < 900 || toLive <= 0 || bytes <= 0 || bytes > 10_000 {
		t.Errorf("RESULT %v", kv)
	}
}

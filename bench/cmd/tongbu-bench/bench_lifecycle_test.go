//go:build !js

package main

import (
	"strconv"
	"testing"
)

func TestBenchReplay(t *testing.T) {
	kv := lastResult(t, "replay", "-minutes", "2")
	if kv["players"] != "10" || kv["hz"] != "15" {
		t.Errorf("RESULT %v", kv)
	}
	perMin, err := strconv.Atoi(kv["bytes_per_min"])
	if err != nil || perMin <= 0 {
		t.Fatalf("bytes_per_min %q: %v", kv["bytes_per_min"], err)
	}
	// 15 Hz for 10 players of inputs cannot take less than a byte a second.
	if perMin < 60 || perMin > 1_000_000 {
		t.Errorf("%d bytes per minute", perMin)
	}
	if code := run([]string{"replay", "-minutes", "0"}, new(discard), new(discard)); code != 1 {
		t.Errorf("-minutes 0: exit %d", code)
	}
}

func TestBenchReconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 5 s of real time")
	}
	kv := lastResult(t, "reconnect", "-drop", "1m", "-rooms", "2", "-baseline", "1s")
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
	if code := run([]string{"reconnect", "-drop", "1s"}, new(discard), new(discard)); code != 1 {
		t.Errorf("-drop 1s: exit %d", code)
	}
}

func TestBenchReconnectSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 5 s of real time")
	}
	kv := lastResult(t, "reconnect", "-snapshot", "-compare=false", "-drop", "1m", "-rooms", "2", "-baseline", "1s")
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

type discard struct{}

func (discard) Write(b []byte) (int, error) { return len(b), nil }

func TestBenchReplica(t *testing.T) {
	kv := lastResult(t, "replica", "-quick")
	bytes, err1 := strconv.Atoi(kv["bytes_per_s"])
	resyncs, err2 := strconv.Atoi(kv["full_resyncs"])
	p99, err3 := strconv.Atoi(kv["converge_p99_ms"])
	diverged, err4 := strconv.Atoi(kv["diverged"])
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatalf("RESULT %v: %v", kv, err)
		}
	}
	if kv["subscribers"] != "8" || diverged != 0 || bytes <= 0 || p99 <= 0 {
		t.Errorf("RESULT %v", kv)
	}
	// Every restarted subscriber's gap is inside the ring: no snapshot.
	if resyncs != 0 {
		t.Errorf("%d full resyncs", resyncs)
	}
	if code := run([]string{"replica", "-loss", "0.7"}, new(discard), new(discard)); code != 1 {
		t.Errorf("-loss 0.7: exit %d", code)
	}
}

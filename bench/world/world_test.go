//go:build !js

package world

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestMain lets the test binary act as the bots' process.
func TestMain(m *testing.M) { bots.TestMain(m) }

// TestBenchWorld runs the world scenario's quick version with a small
// population and checks its closing line: every figure is there and sane,
// and the JX1 baseline's state sync (17 bytes, 8 regions' worth a second
// at most for each of 9 regions) bounds its bytes from below. -ticks
// writes a line for each of the 96 measured frames.
func TestBenchWorld(t *testing.T) {
	ticks := filepath.Join(t.TempDir(), "ticks.txt")
	kv := harness.LastResult(t, "world", "-quick", "-players", "320", "-npcs", "1440", "-warmup", "2", "-seconds", "6", "-sample", "2", "-ticks", ticks)
	checkTicks(t, ticks, 2*16+1, 6*16)
	if kv["players"] != "320" || kv["npcs"] != "1440" {
		t.Errorf("population: %v", kv)
	}
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, kv[k], err)
		}
		return v
	}
	for _, k := range []string{"tick_p99_ms", "client_bps_mean", "client_bps_p99", "discover_p99_ms", "baseline_client_bps_mean", "baseline_discover_p99_ms"} {
		if num(k) <= 0 {
			t.Errorf("%s not measured: %v", k, kv)
		}
	}
	if num("client_bps_p99") < num("client_bps_mean") {
		t.Errorf("p99 below the mean: %v", kv)
	}
	if s := num("sync_bps_mean"); s <= 0 || s >= num("client_bps_mean") {
		t.Errorf("bytes without display data %v, with %v", s, num("client_bps_mean"))
	}
	if b := num("baseline_client_bps_mean"); b < 100 || b > 17*8*9+2000 {
		t.Errorf("baseline bytes %v out of what its state sync allows", b)
	}
	if d := num("discover_p99_ms"); d > 5000 {
		t.Errorf("discovery p99 %v ms", d)
	}
}

// TestBenchWorldGroups: with -groups, the world declares the seed's three
// field sets and sends their changes, which the clients pay for; without,
// the same run sends none.
func TestBenchWorldGroups(t *testing.T) {
	args := []string{"world", "-quick", "-players", "320", "-npcs", "1440", "-warmup", "2", "-seconds", "4"}
	plain := harness.LastResult(t, args...)
	groups := harness.LastResult(t, append(args, "-groups")...)
	num := func(kv map[string]string, k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, kv[k], err)
		}
		return v
	}
	if num(plain, "groups") != 0 || num(plain, "group_changes_per_s") != 0 {
		t.Errorf("without -groups: %v", plain)
	}
	if num(groups, "groups") != 3 || num(groups, "group_changes_per_s") <= 0 {
		t.Errorf("with -groups: %v", groups)
	}
	if num(groups, "client_bps_mean") <= num(plain, "client_bps_mean") {
		t.Errorf("the groups cost the clients nothing: %v bytes a second, %v without", groups["client_bps_mean"], plain["client_bps_mean"])
	}
}

// checkTicks checks a -ticks file: a header, then n frames from first on,
// each with its times and counters, the tick at least its uplinks' time
// and every measured frame sending packets.
func checkTicks(t *testing.T, name string, first, n int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	head := strings.Fields(lines[0])
	if len(lines) != n+1 || len(head) < 8 || head[0] != "frame" {
		t.Fatalf("-ticks wrote %d lines, header %q; want %d frames", len(lines), lines[0], n)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(head) {
			t.Fatalf("line %q: %d fields, header has %d", l, len(f), len(head))
		}
		col := map[string]float64{}
		for j, h := range head {
			if col[h], err = strconv.ParseFloat(f[j], 64); err != nil {
				t.Fatalf("line %q: %s: %v", l, h, err)
			}
		}
		if int(col["frame"]) != first+i || col["tick_ms"] <= 0 || col["tick_ms"] < col["up_ms"] || col["packets_out"] <= 0 {
			t.Errorf("frame line %q (want frame %d)", l, first+i)
		}
	}
}

// TestBenchWorldWebRTC runs the scenario over real WebRTC with a few bots
// in a child process (this test binary) and checks its closing line.
func TestBenchWorldWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	// Unpinned: other test binaries run beside it (TestPin pins).
	kv := harness.LastResult(t, "world", "-transport", "webrtc", "-players", "20", "-npcs", "90", "-warmup", "1", "-seconds", "2", "-pin=false")
	if kv["transport"] != "webrtc" || kv["players"] != "20" {
		t.Errorf("RESULT %v", kv)
	}
	for _, k := range []string{"tick_p99_ms", "transport_ms_per_frame", "total_ms_per_frame", "bots_cores", "transport_cpu_us_per_msg", "floor_cpu_us_per_msg", "server_cores"} {
		if v, err := strconv.ParseFloat(kv[k], 64); err != nil || v <= 0 {
			t.Errorf("%s=%q not measured: %v", k, kv[k], kv)
		}
	}
	// The kernel's share is read in the clock ticks the kernel accounts
	// system time in: a floor of a few hundred messages can read 0.
	for _, k := range []string{"allocs_per_msg", "gc_cpu_fraction", "kernel_us_per_msg", "floor_kernel_us_per_msg"} {
		if v, err := strconv.ParseFloat(kv[k], 64); err != nil || v < 0 {
			t.Errorf("%s=%q: want a number >= 0: %v", k, kv[k], kv)
		}
	}
}

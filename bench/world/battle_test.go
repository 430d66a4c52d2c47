//go:build !js

package world

import (
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchBattle runs a small battle and checks its closing line: every
// figure is measured, the commands reach every client that knew the
// fighter within the links' two frames and a frame more, a runner knows
// each block region within the 2 s rule (virtual time: frames, not the
// machine's speed), and the baseline's byte-aligned commands cost more.
func TestBenchBattle(t *testing.T) {
	kv := harness.LastResult(t, "battle", "-quick", "-players", "80", "-runners", "4", "-npcs", "4000", "-warmup", "3", "-seconds", "5")
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, kv[k], err)
		}
		return v
	}
	for _, k := range []string{"client_down_bps_mean", "client_down_bps_p99", "client_up_bps_mean", "command_to_others_p99_ms",
		"tick_p99_ms", "new_entity_sync_p99_ms", "baseline_client_down_bps_mean", "baseline_command_to_others_p99_ms"} {
		if num(k) <= 0 {
			t.Errorf("%s not measured: %v", k, kv)
		}
	}
	if c := num("command_to_others_p99_ms"); c > 3*62.5+1 {
		t.Errorf("commands reach the others in %v ms, want at most 3 frames", c)
	}
	if n := num("new_entity_sync_p99_ms"); n > 2000 {
		t.Errorf("a runner knows a block region in %v ms, over the 2 s rule", n)
	}
	if num("commands_undelivered") != 0 {
		t.Errorf("commands undelivered: %v", kv)
	}
	if num("client_down_bps_mean") >= num("baseline_client_down_bps_mean") {
		t.Errorf("bytes down %v, the baseline's %v", kv["client_down_bps_mean"], kv["baseline_client_down_bps_mean"])
	}
}

// TestBenchBattleWebRTC runs a small battle over real WebRTC, the bots in
// a child process (this test binary) behind a relay in another, and
// checks its closing line: every figure measured, every command had by
// every fighter that knew its actor, the baseline beside it.
func TestBenchBattleWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes and WebRTC connections")
	}
	// Unpinned: other test binaries run beside it.
	kv := harness.LastResult(t, "battle", "-transport", "webrtc", "-players", "24", "-runners", "2", "-npcs", "500",
		"-warmup", "2", "-seconds", "4", "-pin=false")
	if kv["transport"] != "webrtc" || kv["players"] != "24" || kv["one_way_ms"] != "25.00" {
		t.Errorf("RESULT %v", kv)
	}
	for _, k := range []string{"client_down_bps_mean", "client_down_bps_p99", "client_up_bps_mean", "command_to_others_p99_ms",
		"tick_p99_ms", "baseline_client_down_bps_mean", "baseline_command_to_others_p99_ms", "mem_client_down_bps_mean"} {
		if v, err := strconv.ParseFloat(kv[k], 64); err != nil || v <= 0 {
			t.Errorf("%s=%q not measured: %v", k, kv[k], kv)
		}
	}
	// Through a relay that delays each way by 25 ms, a command cannot
	// reach the others sooner than the two links.
	if v, _ := strconv.ParseFloat(kv["command_to_others_p99_ms"], 64); v < 50 {
		t.Errorf("commands reach the others in %v ms, under the relay's 50", v)
	}
	if kv["commands_undelivered"] != "0" {
		t.Errorf("commands undelivered: %v", kv)
	}
}

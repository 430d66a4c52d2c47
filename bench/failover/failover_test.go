//go:build !js

package failover

import (
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchFailover runs the scenario small, killing a node: a RESULT
// line with every key, the baseline losing the node's matches and the
// standbys keeping every one, with no frame lost or cut twice.
func TestBenchFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six tongbu serve processes and WebRTC connections")
	}
	kv := harness.LastResult(t, "failover", "-rooms", "6", "-players", "2", "-steady", "1s", "-after", "5s")
	t.Log(kv)
	for _, k := range []string{"matches", "matches_survived", "frames_lost", "frames_conflicting", "desyncs", "stall_p50_ms",
		"stall_p99_ms", "players_dropped", "baseline_matches_survived", "standby_cpu_ratio", "nats_bytes_per_room_s"} {
		if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
			t.Errorf("%s=%q", k, kv[k])
		}
	}
	if kv["matches"] == "0" || kv["matches_survived"] != kv["matches"] || kv["baseline_matches_survived"] != "0" {
		t.Errorf("matches %s, survived %s, baseline survived %s", kv["matches"], kv["matches_survived"], kv["baseline_matches_survived"])
	}
	if kv["frames_lost"] != "0" || kv["frames_conflicting"] != "0" || kv["players_dropped"] != "0" {
		t.Errorf("lost %s, conflicting %s, dropped %s", kv["frames_lost"], kv["frames_conflicting"], kv["players_dropped"])
	}
}

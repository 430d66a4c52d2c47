package roomidle

import (
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchRoomIdle runs a simulated minute: the RESULT line has its
// figures, and a room that keeps frames takes memory.
func TestBenchRoomIdle(t *testing.T) {
	kv := harness.LastResult(t, "room-idle", "-minutes", "1")
	if kv["players"] != "2" || kv["hz"] != "15" {
		t.Fatalf("RESULT %v", kv)
	}
	for _, k := range []string{"room_mib_per_hour", "replay_mib_per_hour"} {
		if v, err := strconv.ParseFloat(kv[k], 64); err != nil || v <= 0 {
			t.Fatalf("%s=%q", k, kv[k])
		}
	}
}

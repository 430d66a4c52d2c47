//go:build !js

package relay

import (
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchRelay(t *testing.T) {
	kv := harness.LastResult(t, "relay", "-players", "20", "-seconds", "1")
	for _, k := range []string{"transport", "players", "cpu_us_per_player_frame", "p99_cut_late_ms"} {
		if kv[k] == "" {
			t.Errorf("RESULT lacks %s: %v", k, kv)
		}
	}
	if kv["players"] != "20" || kv["cpu_us_per_player_frame"] == "0.00" {
		t.Errorf("RESULT %v", kv)
	}
}

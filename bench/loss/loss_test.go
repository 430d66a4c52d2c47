//go:build !js

package loss

import (
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchLoss(t *testing.T) {
	kv := harness.LastResult(t, "loss", "-loss", "0.2", "-minutes", "1")
	if kv["delivered"] != "1.0000" {
		t.Errorf("20%% loss: delivered %s", kv["delivered"])
	}
	for _, k := range []string{"loss", "burst", "unstalled", "late_drops", "down_bps", "up_bps"} {
		if kv[k] == "" {
			t.Errorf("RESULT lacks %s: %v", k, kv)
		}
	}
}

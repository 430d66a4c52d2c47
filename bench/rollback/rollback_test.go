//go:build !js

package rollback

import (
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestRollbackScenario runs a short duel and checks the RESULT line's
// keys and the bounds on the figures that do not depend on the
// machine's speed.
func TestRollbackScenario(t *testing.T) {
	res := harness.LastResult(t, "rollback", "-minutes", "0.5")
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(res[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, res[k], err)
		}
		return v
	}
	for _, k := range []string{"own_input_ms", "baseline_own_input_ms", "rollback_depth_mean", "rollback_depth_p99", "resim_frames_per_s", "cpu_us_per_frame", "desyncs", "stalls_per_min"} {
		num(k)
	}
	if num("own_input_ms") > 16.7 || num("rollback_depth_p99") > 10 || num("desyncs") != 0 || num("baseline_own_input_ms") < 100 {
		t.Errorf("RESULT %v", res)
	}
}

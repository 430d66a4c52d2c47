//go:build !js

package feel

import (
	"io"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchFeel runs the scenario short on a clean link and on 4g: every
// key the issue names is printed, and what is deterministic (virtual
// time, seeded) holds: on a clean link the library draws the others where
// they were and never jumps, replay loses no input, lag compensation
// agrees with what the players saw, and the cheater's views are refused.
func TestBenchFeel(t *testing.T) {
	if code := harness.Command([]string{"feel", "-trace", "dialup"}, io.Discard, io.Discard); code == 0 {
		t.Error("an unknown trace accepted")
	}
	for _, trace := range []string{"clean", "4g"} {
		kv := harness.LastResult(t, "feel", "-trace", trace, "-seconds", "30", "-players", "8")
		num := func(k string) float64 {
			v, err := strconv.ParseFloat(kv[k], 64)
			if err != nil {
				t.Fatalf("%s: RESULT's %s = %q", trace, k, kv[k])
			}
			return v
		}
		for _, k := range []string{"render_error_mean_u", "render_error_p99_u", "baseline_render_error_mean_u", "baseline_render_error_p99_u",
			"snaps_per_min", "baseline_snaps_per_min", "own_undo_per_min", "baseline_own_undo_per_min", "hit_agreement",
			"baseline_hit_agreement", "past_bound_refused", "render_ns", "render_allocs", "server_ns_per_entity_frame", "server_allocs_per_frame"} {
			num(k)
		}
		if num("render_error_p99_u") > num("baseline_render_error_p99_u")/3 {
			t.Errorf("%s: render error p99 %v, the baseline's %v", trace, kv["render_error_p99_u"], kv["baseline_render_error_p99_u"])
		}
		if num("own_undo_per_min") > num("baseline_own_undo_per_min") || num("hit_agreement") < 0.99 || num("past_bound_refused") < 0.99 {
			t.Errorf("%s: %v", trace, kv)
		}
		if trace == "clean" && (num("snaps_per_min") != 0 || num("render_error_mean_u") > 0.5) {
			t.Errorf("clean: the library jumps or errs: %v", kv)
		}
		if num("render_allocs") != 0 {
			t.Errorf("%s: %v allocations a render", trace, kv["render_allocs"])
		}
	}
}

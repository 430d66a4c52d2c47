//go:build !js

package mmbench

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestMain runs the matchmaker processes the scenario starts: the test
// binary is their executable.
func TestMain(m *testing.M) {
	if os.Getenv(WorkerEnv) != "" {
		if err := Worker(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "worker:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchMatchmaker runs the scenario short: every key the issue names
// is printed; across the kill no ticket is lost or matched twice, no
// party split, no build mixed before the switch; the matches are closer
// in skill and round trip than first come's.
func TestBenchMatchmaker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts six processes")
	}
	kv := harness.LastResult(t, "matchmaker", "-rates", "300", "-seconds", "2", "-tail", "1.5")
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("RESULT's %s = %q", k, kv[k])
		}
		return v
	}
	for _, k := range []string{"wait_p50_s", "wait_p99_s", "skill_spread_p90", "predicted_win_p90", "rtt_worst_p90_ms", "tickets_per_s_per_core",
		"baseline_wait_p99_s", "baseline_skill_spread_p90", "baseline_rtt_worst_p90_ms", "baseline_tickets_per_s_per_core", "held_by_killed", "rerouted_s"} {
		num(k)
	}
	for _, k := range []string{"party_split", "build_mixed", "double_matched", "lost_tickets", "baseline_party_split", "baseline_build_mixed", "baseline_double_matched", "baseline_lost_tickets"} {
		if num(k) != 0 {
			t.Errorf("%s = %s", k, kv[k])
		}
	}
	// Enough matches that the comparisons below mean something: the
	// generator's pace is the machine's (CI runs packages side by side on
	// two cores; one such run made 153 of the 600 tickets).
	if num("tickets") < 100 || num("matches") < 25 {
		t.Errorf("%s tickets in %s matches", kv["tickets"], kv["matches"])
	}
	if num("skill_spread_p90") >= num("baseline_skill_spread_p90") || num("rtt_worst_p90_ms") >= num("baseline_rtt_worst_p90_ms") {
		t.Errorf("spread %s against %s, worst round trip %s against %s", kv["skill_spread_p90"], kv["baseline_skill_spread_p90"], kv["rtt_worst_p90_ms"], kv["baseline_rtt_worst_p90_ms"])
	}
}

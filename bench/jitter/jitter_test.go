//go:build !js

package jitter

import (
	"io"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchJitter(t *testing.T) {
	if code := harness.Command([]string{"jitter", "-spike", "late"}, io.Discard, io.Discard); code == 0 {
		t.Error("-spike late accepted")
	}
	for _, trace := range []string{"clean", "4g", "wifi", "4g-packet-spikes"} {
		args := []string{"-trace", trace} // the whole 30 minutes: the targets are over the trace, not its first minutes
		if trace == "4g-packet-spikes" {
			args = []string{"-trace", "4g", "-spike", "packet"}
		}
		kv := harness.LastResult(t, append([]string{"jitter"}, args...)...)
		if kv["trace"] != trace {
			t.Errorf("trace %q, want %q", kv["trace"], trace)
		}
		for _, k := range []string{"trace", "excess_mean_ms", "excess_p95_ms", "stalls_per_10min", "oracle_stalls_per_10min",
			"quantile_excess_mean_ms", "quantile_stalls_per_10min", "fixed2_stalls_per_10min", "beaten_by", "within150"} {
			if kv[k] == "" {
				t.Errorf("%s: RESULT lacks %s", trace, k)
			}
		}
		// Nothing, no fixed delay and no baseline, plays with both less
		// delay and fewer stalls (deterministic: virtual time, seeded).
		if kv["beaten_by"] != "0" {
			t.Errorf("%s: beaten by %s fixed delays and baselines", trace, kv["beaten_by"])
		}
		if excess, _ := strconv.ParseFloat(kv["excess_mean_ms"], 64); trace == "clean" && (excess > 1 || kv["stalls_per_10min"] != "0.00" || kv["within150"] != "1.0000") {
			t.Errorf("a clean link must add (next to) no delay and never stall: %v", kv)
		}
	}
}

// TestLatencyBudget: seed 001's 150 ms figure on the 4g trace is a
// game's choice of MaxDelay. At the default (300 ms) the buffer favours
// fewer stalls and plays 90-93% of frames within 150 ms of their cut; a
// game that caps it at 130 ms gets 95% or more with the same stalls, and
// nothing beats it on both counts. The default cannot be lowered there:
// bench loss and the wifi trace stall more (BENCHMARKS.md).
func TestLatencyBudget(t *testing.T) {
	def := harness.LastResult(t, "jitter", "-trace", "4g")
	capped := harness.LastResult(t, "jitter", "-trace", "4g", "-max-delay", "130ms")
	if w, _ := strconv.ParseFloat(capped["within150"], 64); w < 0.95 || capped["beaten_by"] != "0" {
		t.Errorf("4g with MaxDelay 130 ms: within150 %s, beaten by %s; want >= 0.95 and 0", capped["within150"], capped["beaten_by"])
	}
	t.Logf("default %v; capped %v", def, capped)
	d, _ := strconv.ParseFloat(def["stalls_per_10min"], 64)
	c, _ := strconv.ParseFloat(capped["stalls_per_10min"], 64)
	if c > d+1 {
		t.Errorf("4g: %v stalls per 10 minutes with MaxDelay 130 ms, %v at the default", c, d)
	}
}

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

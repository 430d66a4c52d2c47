//go:build !js

package churn

import (
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchChurn runs a few cycles: the RESULT line has every figure.
func TestBenchChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("WebRTC connections")
	}
	kv := harness.LastResult(t, "churn", "-cycles", "10", "-warmup", "2")
	if kv["cycles"] != "10" {
		t.Fatalf("RESULT %v", kv)
	}
	for _, k := range []string{"goroutines_delta", "heap_kib_delta", "fds_delta", "join_p99_ms", "baseline_join_p99_ms"} {
		if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
			t.Fatalf("%s=%q", k, kv[k])
		}
	}
}

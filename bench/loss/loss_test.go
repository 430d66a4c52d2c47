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

// TestBenchLossWebRTC plays a short match of each stack through the relay.
func TestBenchLossWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("real WebRTC")
	}
	kv := harness.LastResult(t, "loss", "-transport", "webrtc", "-seconds", "4", "-loss", "0.1", "-latency", "10ms", "-jitter", "5ms")
	for _, k := range []string{"delivered", "unstalled", "rtt_mean_ms", "rtt_p99_ms", "baseline_delivered", "baseline_unstalled"} {
		if kv[k] == "" {
			t.Errorf("RESULT lacks %s: %v", k, kv)
		}
	}
	if kv["delivered"] != "1.0000" {
		t.Errorf("lean: delivered %s", kv["delivered"])
	}
}

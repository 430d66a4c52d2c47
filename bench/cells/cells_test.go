//go:build !js

package cells

import (
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestCells runs a short scenario: every transfer either moves its player
// or leaves it where it was, killing a node mid-run loses or doubles none,
// players cross the cells' borders, and over WebRTC their clients follow
// them across, none stuck. (interest's TestCellsKnownSet holds
// the cut map's known sets to their bound.)
func TestCells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 15 s of real time")
	}
	kv := harness.LastResult(t, "cells", "-players", "9", "-transfers", "40", "-inflight", "3", "-walkers", "40", "-npcs", "800", "-seconds", "40", "-scale=false",
		"-crossers", "4", "-cross-seconds", "5")
	if kv["lost"] != "0" || kv["duplicated"] != "0" || kv["transfers"] != "40" || kv["moved"] == "0" ||
		kv["crossings_4"] == "0" || kv["client_bps_ratio"] == "" ||
		kv["handoffs"] == "0" || kv["handoff_stuck"] != "0" || kv["baseline_handoff_stuck"] != "0" {
		t.Fatalf("RESULT %v", kv)
	}
}

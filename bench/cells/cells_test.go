//go:build !js

package cells

import (
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestCells runs a short scenario: every transfer either moves its player
// or leaves it where it was, and killing a node mid-run loses or doubles
// none.
func TestCells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs about 3 s of real time")
	}
	kv := harness.LastResult(t, "cells", "-players", "9", "-transfers", "40", "-inflight", "3")
	if kv["lost"] != "0" || kv["duplicated"] != "0" || kv["transfers"] != "40" || kv["moved"] == "0" {
		t.Fatalf("RESULT %v", kv)
	}
}

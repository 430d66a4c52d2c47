//go:build !js

package replay

import (
	"io"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchReplay(t *testing.T) {
	kv := harness.LastResult(t, "replay", "-minutes", "2")
	if kv["players"] != "10" || kv["hz"] != "15" {
		t.Errorf("RESULT %v", kv)
	}
	perMin, err := strconv.Atoi(kv["bytes_per_min"])
	if err != nil || perMin <= 0 {
		t.Fatalf("bytes_per_min %q: %v", kv["bytes_per_min"], err)
	}
	// 15 Hz for 10 players of inputs cannot take less than a byte a second.
	if perMin < 60 || perMin > 1_000_000 {
		t.Errorf("%d bytes per minute", perMin)
	}
	if code := harness.Command([]string{"replay", "-minutes", "0"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("-minutes 0: exit %d", code)
	}
}

//go:build !js

package replica

import (
	"io"
	"strconv"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

func TestBenchReplica(t *testing.T) {
	kv := harness.LastResult(t, "replica", "-quick")
	bytes, err1 := strconv.Atoi(kv["bytes_per_s"])
	resyncs, err2 := strconv.Atoi(kv["full_resyncs"])
	p99, err3 := strconv.Atoi(kv["converge_p99_ms"])
	diverged, err4 := strconv.Atoi(kv["diverged"])
	for _, err := range []error{err1, err2, err3, err4} {
		if err != nil {
			t.Fatalf("RESULT %v: %v", kv, err)
		}
	}
	if kv["subscribers"] != "8" || diverged != 0 || bytes <= 0 || p99 <= 0 {
		t.Errorf("RESULT %v", kv)
	}
	// Every restarted subscriber's gap is inside the ring: no snapshot.
	if resyncs != 0 {
		t.Errorf("%d full resyncs", resyncs)
	}
	if code := harness.Command([]string{"replica", "-loss", "0.7"}, io.Discard, io.Discard); code != 1 {
		t.Errorf("-loss 0.7: exit %d", code)
	}
}

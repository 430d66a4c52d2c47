//go:build !js

package codec

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestBenchCodec runs the codec scenario briefly and checks its closing
// line: every figure the issue names is there, and the sizes are the ones
// the encoder produces.
func TestBenchCodec(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := harness.Command([]string{"-benchtime", "5ms", "codec"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	m := harness.ResultRE.FindStringSubmatch(last)
	if m == nil || m[1] != "codec" {
		t.Fatalf("last line %q is not a RESULT line for codec", last)
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	for _, k := range []string{"record_bits", "seed_bits", "delta_bits", "encode_ns", "decode_ns", "allocs"} {
		if _, ok := kv[k]; !ok {
			t.Errorf("RESULT lacks %s", k)
		}
	}
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, kv[k], err)
		}
		return v
	}
	if num("record_bits") > 89 || num("seed_bits") != 136 || num("delta_bits") >= num("record_bits") {
		t.Errorf("sizes: %s", last)
	}
	if num("allocs") != 0 {
		t.Errorf("the codec allocates: %s", last)
	}
	if num("encode_ns") <= 0 || num("decode_ns") <= 0 {
		t.Errorf("timings not measured: %s", last)
	}
}

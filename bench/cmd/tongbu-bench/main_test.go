//go:build !js

package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		args     []string
		code     int
		contains string
	}{
		{nil, 0, "codec"},
		{[]string{"nope"}, 2, "unknown scenario"},
		{[]string{"-benchtime", "-1s", "codec"}, 2, "positive"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			if code := run(tt.args, &out, &errOut); code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, errOut.String())
			}
			if all := out.String() + errOut.String(); !strings.Contains(all, tt.contains) {
				t.Fatalf("output %q does not contain %q", all, tt.contains)
			}
		})
	}
}

var resultRE = regexp.MustCompile(`^RESULT scenario=(\S+)((?: [a-z0-9_]+=\S+)+)$`)

// TestBenchCodec runs the codec scenario briefly and checks its closing
// line: every figure the issue names is there, and the sizes are the ones
// the encoder produces.
func TestBenchCodec(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := run([]string{"-benchtime", "5ms", "codec"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	m := resultRE.FindStringSubmatch(last)
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

// lastResult runs a scenario and returns its RESULT fields.
func lastResult(t *testing.T, args ...string) map[string]string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(args, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	m := resultRE.FindStringSubmatch(lines[len(lines)-1])
	if m == nil || m[1] != args[0] {
		t.Fatalf("last line %q is not a RESULT line for %s", lines[len(lines)-1], args[0])
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv
}

func TestBenchRelay(t *testing.T) {
	kv := lastResult(t, "relay", "-players", "20", "-seconds", "1")
	for _, k := range []string{"transport", "players", "cpu_us_per_player_frame", "p99_cut_late_ms"} {
		if kv[k] == "" {
			t.Errorf("RESULT lacks %s: %v", k, kv)
		}
	}
	if kv["players"] != "20" || kv["cpu_us_per_player_frame"] == "0.00" {
		t.Errorf("RESULT %v", kv)
	}
}

func TestBenchLoss(t *testing.T) {
	kv := lastResult(t, "loss", "-loss", "0.2", "-minutes", "1")
	if kv["delivered"] != "1.0000" {
		t.Errorf("20%% loss: delivered %s", kv["delivered"])
	}
	for _, k := range []string{"loss", "burst", "unstalled", "late_drops", "down_bps", "up_bps"} {
		if kv[k] == "" {
			t.Errorf("RESULT lacks %s: %v", k, kv)
		}
	}
}

func TestBenchJitter(t *testing.T) {
	if code := run([]string{"jitter", "-spike", "late"}, io.Discard, io.Discard); code == 0 {
		t.Error("-spike late accepted")
	}
	for _, trace := range []string{"clean", "4g", "wifi", "4g-packet-spikes"} {
		args := []string{"-trace", trace, "-minutes", "2"}
		if trace == "4g-packet-spikes" {
			args = []string{"-trace", "4g", "-spike", "packet", "-minutes", "2"}
		}
		kv := lastResult(t, append([]string{"jitter"}, args...)...)
		if kv["trace"] != trace {
			t.Errorf("trace %q, want %q", kv["trace"], trace)
		}
		for _, k := range []string{"trace", "excess_mean_ms", "excess_p95_ms", "stalls_per_10min", "oracle_stalls_per_10min",
			"quantile_excess_mean_ms", "quantile_stalls_per_10min", "fixed2_stalls_per_10min"} {
			if kv[k] == "" {
				t.Errorf("%s: RESULT lacks %s", trace, k)
			}
		}
		if excess, _ := strconv.ParseFloat(kv["excess_mean_ms"], 64); trace == "clean" && (excess > 1 || kv["stalls_per_10min"] != "0.00") {
			t.Errorf("a clean link must add (next to) no delay and never stall: %v", kv)
		}
	}
}

// TestBenchWorld runs the world scenario's quick version with a small
// population and checks its closing line: every figure is there and sane,
// and the JX1 baseline's state sync (17 bytes, 8 regions' worth a second
// at most for each of 9 regions) bounds its bytes from below. -ticks
// writes a line for each of the 96 measured frames.
func TestBenchWorld(t *testing.T) {
	ticks := filepath.Join(t.TempDir(), "ticks.txt")
	kv := lastResult(t, "world", "-quick", "-players", "320", "-npcs", "1440", "-warmup", "2", "-seconds", "6", "-sample", "2", "-ticks", ticks)
	checkTicks(t, ticks, 2*16+1, 6*16)
	if kv["players"] != "320" || kv["npcs"] != "1440" {
		t.Errorf("population: %v", kv)
	}
	num := func(k string) float64 {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", k, kv[k], err)
		}
		return v
	}
	for _, k := range []string{"tick_p99_ms", "client_bps_mean", "client_bps_p99", "discover_p99_ms", "baseline_client_bps_mean", "baseline_discover_p99_ms"} {
		if num(k) <= 0 {
			t.Errorf("%s not measured: %v", k, kv)
		}
	}
	if num("client_bps_p99") < num("client_bps_mean") {
		t.Errorf("p99 below the mean: %v", kv)
	}
	if s := num("sync_bps_mean"); s <= 0 || s >= num("client_bps_mean") {
		t.Errorf("bytes without display data %v, with %v", s, num("client_bps_mean"))
	}
	if b := num("baseline_client_bps_mean"); b < 100 || b > 17*8*9+2000 {
		t.Errorf("baseline bytes %v out of what its state sync allows", b)
	}
	if d := num("discover_p99_ms"); d > 5000 {
		t.Errorf("discovery p99 %v ms", d)
	}
}

// checkTicks checks a -ticks file: a header, then n frames from first on,
// each with its times and counters, the tick at least its uplinks' time
// and every measured frame sending packets.
func checkTicks(t *testing.T, name string, first, n int) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	head := strings.Fields(lines[0])
	if len(lines) != n+1 || len(head) < 8 || head[0] != "frame" {
		t.Fatalf("-ticks wrote %d lines, header %q; want %d frames", len(lines), lines[0], n)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != len(head) {
			t.Fatalf("line %q: %d fields, header has %d", l, len(f), len(head))
		}
		col := map[string]float64{}
		for j, h := range head {
			if col[h], err = strconv.ParseFloat(f[j], 64); err != nil {
				t.Fatalf("line %q: %s: %v", l, h, err)
			}
		}
		if int(col["frame"]) != first+i || col["tick_ms"] <= 0 || col["tick_ms"] < col["up_ms"] || col["packets_out"] <= 0 {
			t.Errorf("frame line %q (want frame %d)", l, first+i)
		}
	}
}

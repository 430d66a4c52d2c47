//go:build !js

package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestMain lets the test binary act as the bots' child process, as the
// tongbu binary does.
func TestMain(m *testing.M) {
	if os.Getenv(botsEnv) != "" {
		if err := runBots(os.Args[1:], os.Stdout); err != nil {
			os.Stderr.WriteString("bots: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestBenchTransport runs the transport scenario at a small load, so that
// it cannot rot: both servers, bots in a child process, the RESULT line.
func TestBenchTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	var out, errOut bytes.Buffer
	code := run([]string{"transport", "-clients", "3", "-hz", "20", "-seconds", "1", "-rounds", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	m := resultRE.FindStringSubmatch(last)
	if m == nil || m[1] != "transport" {
		t.Fatalf("last line %q", last)
	}
	for _, k := range []string{"clients=3", "cpu_us_per_msg=", "baseline_cpu_us_per_msg=", "delivered=", "kib_per_conn="} {
		if !strings.Contains(last, k) {
			t.Errorf("RESULT lacks %s: %s", k, last)
		}
	}
	if strings.Contains(last, " delivered=0.00") {
		t.Errorf("nothing was echoed: %s", last)
	}
}

// TestBenchRelayWebRTC runs the relay scenario over WebRTC with 20 bots in
// a child process: the RESULT line has every figure, and every bot played
// every frame its room cut while it was joined.
func TestBenchRelayWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	var out, errOut bytes.Buffer
	code := run([]string{"relay", "-transport", "webrtc", "-players", "20", "-seconds", "3"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	m := resultRE.FindStringSubmatch(last)
	if m == nil || m[1] != "relay" {
		t.Fatalf("last line %q", last)
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(m[2]) {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	if kv["transport"] != "webrtc" || kv["players"] != "20" {
		t.Errorf("RESULT names the wrong run: %s", last)
	}
	for _, k := range []string{"cpu_us_per_player_frame", "p99_cut_late_ms", "delivered"} {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil || v < 0 {
			t.Errorf("RESULT %s=%q: want a number >= 0", k, kv[k])
		}
	}
	if cpu, _ := strconv.ParseFloat(kv["cpu_us_per_player_frame"], 64); cpu == 0 {
		t.Errorf("no server CPU time measured: %s", last)
	}
	if d, _ := strconv.ParseFloat(kv["delivered"], 64); d != 1 {
		t.Errorf("delivered %s, want 1 (every bot played every frame): %s", kv["delivered"], last)
	}
}

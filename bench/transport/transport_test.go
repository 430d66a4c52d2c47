//go:build !js

package transport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestMain lets the test binary act as the bots' process.
func TestMain(m *testing.M) { bots.TestMain(m) }

// TestBenchTransport runs the transport scenario at a small load, so that
// it cannot rot: both servers, bots in a child process, the RESULT line.
func TestBenchTransport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	var out, errOut bytes.Buffer
	code := harness.Command([]string{"transport", "-clients", "3", "-hz", "20", "-seconds", "1", "-rounds", "1"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	m := harness.ResultRE.FindStringSubmatch(last)
	if m == nil || m[1] != "transport" {
		t.Fatalf("last line %q", last)
	}
	for _, k := range []string{"clients=3", "cpu_us_per_msg=", "baseline_cpu_us_per_msg=", "floor_cpu_us_per_msg=", "one_socket_cpu_us_per_msg=", "delivered=", "kib_per_conn=", "goroutines_per_conn="} {
		if !strings.Contains(last, k) {
			t.Errorf("RESULT lacks %s: %s", k, last)
		}
	}
	if strings.Contains(last, " delivered=0.00") {
		t.Errorf("nothing was echoed: %s", last)
	}
	// The floor's row of the table: its echo delivered something.
	floorRow := ""
	for _, l := range lines {
		if _, after, ok := strings.Cut(l, "udp floor ("); ok {
			_, floorRow, _ = strings.Cut(after, ")")
		}
	}
	if f := strings.Fields(floorRow); len(f) < 3 || f[2] == "0.0000" || strings.Contains(last, "floor_cpu_us_per_msg=0.00") {
		t.Errorf("the udp floor did not run, or echoed nothing (its row: %q): %s", floorRow, last)
	}
}

func TestBenchHandshakes(t *testing.T) {
	if testing.Short() {
		t.Skip("makes WebRTC connections")
	}
	var out, errOut bytes.Buffer
	if code := harness.Command([]string{"transport", "-handshakes", "-clients", "8"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, errOut.String(), out.String())
	}
	if !strings.Contains(out.String(), "RESULT scenario=transport clients=8 handshakes_per_s=") {
		t.Errorf("no RESULT line: %s", out.String())
	}
}

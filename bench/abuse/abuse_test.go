//go:build !js

package abuse

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
)

// TestMain lets the test binary act as the attackers' process.
func TestMain(m *testing.M) { bots.TestMain(m) }

// TestBenchAbuse runs the attacks briefly (the forged sources only as
// root): a RESULT line for each with every figure, no honest player
// dropped or refused, and the attacker holding next to nothing.
func TestBenchAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	attacks := "held_fragments,one_ticket"
	if os.Geteuid() == 0 {
		attacks += ",spoofed_rebind"
	}
	var out, errOut bytes.Buffer
	code := harness.Command([]string{"abuse", "-seconds", "2", "-quiet", "1", "-players", "4", "-attacks", attacks}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	t.Log(out.String())
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "RESULT ") {
			continue
		}
		n++
		kv := map[string]string{}
		for _, f := range strings.Fields(line)[1:] {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		for _, k := range []string{"honest_gap_p99_ms", "honest_gap_max_ms", "baseline_honest_gap_max_ms", "honest_dropped",
			"honest_join_p99_ms", "held_chunks_max", "worst_packet_us", "rss_mib_delta"} {
			if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
				t.Errorf("%s: %s=%q", kv["attack"], k, kv[k])
			}
		}
		if kv["honest_dropped"] != "0" || kv["honest_join_refused"] != "0" {
			t.Errorf("%s: %s honest players dropped, %s joins refused", kv["attack"], kv["honest_dropped"], kv["honest_join_refused"])
		}
		if held, _ := strconv.Atoi(kv["held_chunks_max"]); held > 16 {
			t.Errorf("%s: the server held %d chunks of one peer", kv["attack"], held)
		}
	}
	if n != strings.Count(attacks, ",")+1 {
		t.Fatalf("%d RESULT lines for %s", n, attacks)
	}
}

// TestBenchAbuseCluster runs two of the cluster's attacks briefly: a
// RESULT line for each with every figure, no honest player dropped, every
// honest match made and joined, nothing forged accepted, and the forger's
// messages dropped.
func TestBenchAbuseCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a NATS server and WebRTC connections")
	}
	attacks := []string{ForgedHeartbeat, MovedCredential}
	var out, errOut bytes.Buffer
	code := harness.Command([]string{"abuse", "-seconds", "2", "-quiet", "1", "-players", "2", "-attacks", strings.Join(attacks, ",")}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	t.Log(out.String())
	n := 0
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "RESULT ") {
			continue
		}
		n++
		kv := map[string]string{}
		for _, f := range strings.Fields(line)[1:] {
			k, v, _ := strings.Cut(f, "=")
			kv[k] = v
		}
		for _, k := range []string{"honest_gap_max_ms", "baseline_honest_gap_max_ms", "honest_matches", "baseline_honest_matches", "honest_match_p99_ms", "nats_dropped"} {
			if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
				t.Errorf("%s: %s=%q", kv["attack"], k, kv[k])
			}
		}
		if kv["honest_dropped"] != "0" || kv["forged_accepted"] != "0" || kv["honest_match_failures"] != "0" || kv["honest_matches"] == "0" {
			t.Errorf("%s: %s dropped, %s forged accepted, %s of %s matches failed", kv["attack"], kv["honest_dropped"], kv["forged_accepted"], kv["honest_match_failures"], kv["honest_matches"])
		}
		if kv["attack"] == ForgedHeartbeat && kv["nats_dropped"] == "0" {
			t.Errorf("the forged heartbeats were not dropped by the cluster: nats_dropped=0")
		}
	}
	if n != len(attacks) {
		t.Fatalf("%d RESULT lines for %v", n, attacks)
	}
}

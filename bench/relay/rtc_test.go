//go:build !js

package relay

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/lockstep"
)

// TestMain lets the test binary act as the bots' process.
func TestMain(m *testing.M) { bots.TestMain(m) }

// TestBenchRelayWebRTC runs the relay scenario over WebRTC with 20 bots in
// a child process: the RESULT line has every figure, and every bot played
// every frame its room cut while it was joined.
func TestBenchRelayWebRTC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	// Unpinned: other test binaries run beside it (TestPin pins).
	kv := harness.LastResult(t, "relay", "-transport", "webrtc", "-players", "20", "-seconds", "3", "-pin=false")
	last := fmt.Sprint(kv)
	if kv["transport"] != "webrtc" || kv["players"] != "20" {
		t.Errorf("RESULT names the wrong run: %s", last)
	}
	for _, k := range []string{"cpu_us_per_player_frame", "p99_cut_late_ms", "delivered", "server_cores", "bots_cores", "allocs_per_msg", "gc_cpu_fraction", "floor_cpu_us_per_msg", "floor_aead_cpu_us_per_msg", "kernel_us_per_msg", "floor_kernel_us_per_msg"} {
		v, err := strconv.ParseFloat(kv[k], 64)
		if err != nil || v < 0 {
			t.Errorf("RESULT %s=%q: want a number >= 0", k, kv[k])
		}
	}
	if f, _ := strconv.ParseFloat(kv["floor_cpu_us_per_msg"], 64); f == 0 {
		t.Errorf("no floor measured: %s", last)
	}
	if cpu, _ := strconv.ParseFloat(kv["cpu_us_per_player_frame"], 64); cpu == 0 {
		t.Errorf("no server CPU time measured: %s", last)
	}
	if d, _ := strconv.ParseFloat(kv["delivered"], 64); d != 1 {
		t.Errorf("delivered %s, want 1 (every bot played every frame): %s", kv["delivered"], last)
	}
	// No goroutine a player: with 20 a few may come and go (handshakes
	// ending, timers), not one each.
	if g, err := strconv.ParseFloat(kv["goroutines_per_conn"], 64); err != nil || g > 0.5 {
		t.Errorf("goroutines_per_conn %q: want a number well under 1: %s", kv["goroutines_per_conn"], last)
	}
}

// TestBenchRelaySim: with -sim-us every room runs a server-side
// simulation, which steps through the frames cut (about Hz a second a
// room) without falling behind; the RESULT says so and has no floor,
// which would not compare with a server doing a game's work.
func TestBenchRelaySim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and WebRTC connections")
	}
	kv := harness.LastResult(t, "relay", "-transport", "webrtc", "-players", "20", "-seconds", "2", "-pin=false", "-sim-us", "50")
	last := fmt.Sprint(kv)
	if kv["sim_us_per_room_frame"] != "50.00" || kv["sim_behind"] != "0" {
		t.Errorf("want sim_us_per_room_frame=50 sim_behind=0: %s", last)
	}
	// Two rooms at 15 Hz: 30 simulated frames a second, give or take the
	// window's edges.
	if f, err := strconv.ParseFloat(kv["sim_frames_per_s"], 64); err != nil || f < 20 || f > 40 {
		t.Errorf("sim_frames_per_s %q: want about 30: %s", kv["sim_frames_per_s"], last)
	}
	if _, ok := kv["floor_cpu_us_per_msg"]; ok {
		t.Errorf("a floor beside a server running simulations: %s", last)
	}
	if d, _ := strconv.ParseFloat(kv["delivered"], 64); d != 1 {
		t.Errorf("delivered %s, want 1: %s", kv["delivered"], last)
	}
}

// TestSimWork: the bench's simulation is deterministic, takes every
// input into its state, and is not there when not asked for.
func TestSimWork(t *testing.T) {
	frame := func(b byte) lockstep.Frame {
		return lockstep.Frame{Slots: []lockstep.Slot{{Inputs: [][]byte{{1, 2}}}, {Inputs: [][]byte{{b}}}, {MadeUp: true}}}
	}
	run := func(last byte) uint64 {
		s := simConfig(1000)()
		for range 10 {
			s.Step(frame(7))
		}
		s.Step(frame(last))
		return s.Hash()
	}
	if run(7) != run(7) {
		t.Error("the same frames hash differently")
	}
	if run(7) == run(8) {
		t.Error("a different input left the same hash")
	}
	if simConfig(0) != nil || simIters(0) != 0 {
		t.Error("a simulation when none was asked for")
	}
}

// TestFindMost: -find's search, against loads held up to a threshold,
// finds the threshold to within a tenth (or a room), above and below its
// start, and tries each load once.
func TestFindMost(t *testing.T) {
	for _, tt := range []struct {
		start, limit, held int // held: the most the machine holds
		want               int // 0: any load within a tenth (or a room) under held
	}{
		{2000, 4000, 4000, 4000}, // the limit held: stop there
		{2000, 4000, 9000, 4000},
		{2000, 6000, 4000, 0}, // doubling overshoots, then the gap is halved
		{2000, 4000, 1200, 0}, // the start is not held: halve down, then bisect
		{2000, 4000, 300, 0},
		{2000, 4000, 5, 0}, // nothing held, not even one room
		{10, 40, 10, 10},
		{100, 115, 110, 110}, // not whole rooms: rounded down to them
		{11, 45, 10, 10},
		{11, 45, 25, 0},
	} {
		var tried []int
		got := findMost(tt.start, tt.limit, 10, func(n int) bool {
			if n%10 != 0 || n <= 0 || n > tt.limit {
				t.Errorf("%+v: tried %d players", tt, n)
			}
			for _, m := range tried {
				if m == n {
					t.Errorf("%+v: tried %d twice", tt, n)
				}
			}
			tried = append(tried, n)
			return n <= tt.held
		})
		switch {
		case tt.held < 10 && got != 0:
			t.Errorf("%+v: found %d, want none", tt, got)
		case tt.want != 0 && got != tt.want:
			t.Errorf("%+v: found %d, want %d", tt, got, tt.want)
		case tt.want == 0 && tt.held >= 10 && (got > tt.held || got < tt.held-max(10, tt.held/10)):
			t.Errorf("%+v: found %d (tried %v)", tt, got, tried)
		}
	}
}

// TestBotsBound: -find says the bots bound its search when their process
// had its CPU at the load held or at the first load above it.
func TestBotsBound(t *testing.T) {
	run := func(players int, bots float64) *relayRun { return &relayRun{players: players, botCores: bots} }
	spilled := func(players int, bots, server float64) *relayRun {
		return &relayRun{players: players, botCores: bots, spill: true, wall: time.Second, cpu: time.Duration(server * float64(time.Second))}
	}
	for _, tc := range []struct {
		name string
		runs []*relayRun
		best int // index in runs
		want int // players of the run named; 0: none
	}{
		{"server bound", []*relayRun{run(2500, 0.8), run(3000, 0.9), run(3500, 0.93)}, 1, 0},
		{"bots saturated above", []*relayRun{run(2500, 0.8), run(4000, 0.97), run(3500, 0.93), run(5000, 1)}, 2, 4000},
		{"bots saturated at the edge", []*relayRun{run(2500, 0.8), run(4000, 0.99)}, 1, 4000},
		{"nothing above", []*relayRun{run(2500, 0.8)}, 0, 0},
		// Spilling onto the server's CPU, the bots could have 1.3 cores
		// beside a server at 0.7 of its own.
		{"spilled, room left", []*relayRun{spilled(3000, 1.1, 0.7), spilled(3500, 1.2, 0.7)}, 1, 0},
		{"spilled, saturated", []*relayRun{spilled(3000, 1.1, 0.7), spilled(3500, 1.25, 0.7)}, 0, 3500},
	} {
		got := botsBound(tc.runs, tc.runs[tc.best])
		if (got == nil) != (tc.want == 0) || got != nil && got.players != tc.want {
			t.Errorf("%s: %+v, want the run of %d players", tc.name, got, tc.want)
		}
	}
}

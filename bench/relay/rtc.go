//go:build !js

package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func init() { relayWebRTC = benchRelayRTC }

// relayRoomSize and relayHz are the scenario's rooms: 10 players at 15 Hz.
const (
	relayRoomSize = 10
	relayHz       = 15
)

// The pass mark of -find: p99 cut lateness at most 5 ms, every frame
// delivered.
const relayMaxP99 = 5 * time.Millisecond

// relayRun is one measured run of the scenario over WebRTC.
type relayRun struct {
	players      int
	join         time.Duration     // until every bot had joined
	wall         time.Duration     // the measured window
	cpu          time.Duration     // the server process's CPU time in the window
	sys          time.Duration     // the part of cpu in the kernel
	playerFrames uint64            // frames cut in the window times the players in each room
	late         harness.Histogram // cut lateness in the window, seconds
	expected     uint64            // frames the bots should have played (from the child)
	played       uint64            // frames they played
	lost         int               // bots whose connection closed
	msgs         uint64            // messages the server received and sent in the window
	botCores     float64           // the bots' process's CPU time over the window / the window
	goroutines   float64           // the server process's goroutines a player, joined, beyond those before
	gcFraction   float64           // the GC's share of the server's Go CPU in the window (runtime/metrics)
	allocs       uint64            // the server process's heap allocations in the window
	upBytes      float64           // the mean message received, in bytes
	downBytes    float64           // the mean message sent
	floor        bots.FloorRun     // the plain-UDP floor at this load's shape, when measured
	floorAEAD    bots.FloorRun     // the same floor sealing each datagram with AES-GCM (FloorConfig.AEAD)
	cpuBusy      float64           // how busy the server's CPU was, when pinned (bots.Window.ServerCPUBusy)
	spill        bool              // the bots had what the server left of its CPU too (Shape.Spill)
	simUS        float64           // the rooms' simulation's CPU a frame, asked (-sim-us); 0: none
	simFrames    int               // frames the rooms' simulations ran in the window
	simBehind    uint64            // times a room's simulation fell a second behind, over the run
}

// allocsPerMsg is the server's heap allocations per message.
func (r *relayRun) allocsPerMsg() float64 { return float64(r.allocs) / float64(max(r.msgs, 1)) }

// cores is the server's CPU over the window, in cores.
func (r *relayRun) cores() float64 { return r.cpu.Seconds() / max(r.wall.Seconds(), 1e-9) }

// measureFloor runs the plain-UDP floor at the run's shape: as many bots,
// each sending a message of the run's mean uplink size a frame, and a
// server that answers each with one of the mean downlink size on the
// room's tick; then the same floor with the AES-GCM a WebRTC server
// cannot skip.
func (r *relayRun) measureFloor(seconds float64) error {
	if r.simUS > 0 {
		return nil // the server did a game's work too: no floor compares
	}
	cfg := bots.FloorConfig{TickHz: relayHz, Reply: max(int(r.downBytes+0.5), 1)}
	size := max(int(r.upBytes+0.5), 4)
	var err error
	if r.floor, err = bots.RunFloor(cfg, r.players, relayHz, size, seconds); err != nil {
		return err
	}
	cfg.AEAD = true
	r.floorAEAD, err = bots.RunFloor(cfg, r.players, relayHz, size, seconds)
	return err
}

func (r *relayRun) cpuPerPlayerFrame() float64 {
	return float64(r.cpu.Nanoseconds()) / 1e3 / float64(max(r.playerFrames, 1))
}

func (r *relayRun) delivered() float64 {
	if r.expected == 0 {
		return 0
	}
	return float64(r.played) / float64(r.expected)
}

// p99 returns the 99th percentile of cut lateness in ms, interpolated in
// its histogram bucket as Prometheus's histogram_quantile does; over is
// set when it lies past the last finite bound (the value is that bound).
func (r *relayRun) p99() (ms float64, over bool) {
	v, over := r.late.Quantile(0.99)
	return v * 1e3, over
}

// within reports whether at least 99% of cuts were at most d late: exact
// when d is a bucket bound, as the pass mark (5 ms) is.
func (r *relayRun) within(d time.Duration) bool {
	var in uint64
	for i, c := range r.late.Counts {
		if i < len(r.late.Bounds) && r.late.Bounds[i] <= d.Seconds()+1e-12 {
			in += c
		}
	}
	n := r.late.Count()
	return n > 0 && float64(in) >= 0.99*float64(n)
}

// msgsPerPF is the server's messages both ways per player-frame: about 2
// (an input up, a frame down) when the bots keep up.
func (r *relayRun) msgsPerPF() float64 { return float64(r.msgs) / float64(max(r.playerFrames, 1)) }

// cpuPerMsg is the server's CPU per message.
func (r *relayRun) cpuPerMsg() float64 {
	return float64(r.cpu.Nanoseconds()) / 1e3 / float64(max(r.msgs, 1))
}

// kernelPerMsg is the part of cpuPerMsg in the kernel.
func (r *relayRun) kernelPerMsg() float64 {
	return float64(r.sys.Nanoseconds()) / 1e3 / float64(max(r.msgs, 1))
}

// valid reports whether the bots offered the load: starved bots send
// fewer inputs and make the server look cheap.
func (r *relayRun) valid() bool { return r.msgsPerPF() >= relayMinMsgs }

// relayMinMsgs is the fewest messages per player-frame of a valid run: a
// frame down, and 95% of the inputs up.
const relayMinMsgs = 1.95

func (r *relayRun) pass() bool {
	return r.valid() && r.within(relayMaxP99) && r.expected > 0 && r.played == r.expected && r.lost == 0
}

func (r *relayRun) result() string {
	p99, _ := r.p99()
	kv := []any{
		"transport", "webrtc",
		"players", r.players,
		"cpu_us_per_player_frame", r.cpuPerPlayerFrame(),
		"msgs_per_player_frame", r.msgsPerPF(),
		"cpu_us_per_msg", r.cpuPerMsg(),
		"valid", r.valid(),
		"p99_cut_late_ms", p99,
		// Rounded down, so that 1.0000 means no bot missed a frame.
		"delivered", fmt.Sprintf("%.4f", math.Floor(r.delivered()*1e4)/1e4),
		"goroutines_per_conn", r.goroutines,
		"server_cores", r.cores(),
		// The bots' process has one CPU when pinned: near 1.0 it, not the
		// server, sets how many players a run can hold (-find).
		"bots_cores", r.botCores,
		"allocs_per_msg", r.allocsPerMsg(),
		"gc_cpu_fraction", r.gcFraction,
	}
	if r.simUS > 0 {
		// The rooms ran a simulation: the server's CPU is the data path's
		// and the game's, and no floor is beside it.
		kv = append(kv, "sim_us_per_room_frame", r.simUS, "sim_frames_per_s", float64(r.simFrames)/max(r.wall.Seconds(), 1e-9), "sim_behind", r.simBehind)
	}
	if r.cpuBusy >= 0 {
		// The server's CPU as the kernel counts it, its softirqs and
		// ksoftirqd's work there included, beside getrusage's
		// server_cores (equal, 0.78, where it was first measured).
		kv = append(kv, "server_cpu_busy", r.cpuBusy)
	}
	if r.floor.Msgs > 0 { // measured for the run reported
		kv = append(kv, "floor_cpu_us_per_msg", r.floor.CPUPerMsg(), "cpu_vs_floor", r.cpuPerMsg()/r.floor.CPUPerMsg())
	}
	if r.floorAEAD.Msgs > 0 {
		kv = append(kv, "floor_aead_cpu_us_per_msg", r.floorAEAD.CPUPerMsg(), "cpu_vs_aead_floor", r.cpuPerMsg()/r.floorAEAD.CPUPerMsg())
	}
	// The kernel's part of each, from getrusage: the system calls and the
	// network stack's work they do, which the engine and the floor share;
	// the rest of cpu_us_per_msg is user space (the floor's has no DTLS,
	// no SCTP and no room).
	kv = append(kv, "kernel_us_per_msg", r.kernelPerMsg())
	if r.floor.Msgs > 0 {
		kv = append(kv, "floor_kernel_us_per_msg", r.floor.SysPerMsg())
	}
	return harness.Result("relay", kv...)
}

func benchRelayRTC(o relayRTCOpts, out io.Writer) error {
	if o.players < 1 || o.seconds <= 0 || (o.find && o.max < o.players) {
		return errors.New("want -players >= 1, -seconds > 0, and -max >= -players with -find")
	}
	// The server on one core: one P for its goroutines (the room worker,
	// the connections' readers, the UDP socket); its CPU time is measured
	// with getrusage and may exceed the window only by time in syscalls.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	fmt.Fprintf(out, "relay over WebRTC: rooms of %d at %d Hz, the server in this process (GOMAXPROCS=1, one room worker),\n", relayRoomSize, relayHz)
	fmt.Fprintf(out, "bots in a second process (every bot sends one %d-byte input a frame; %v), %gs measured after all joined\n\n", bots.RelayInputBytes, o.bots, o.seconds)
	sim := simSpec{us: o.simUS, iters: simIters(o.simUS)}
	if sim.us > 0 {
		fmt.Fprintf(out, "each room runs a server-side simulation of about %g us a frame (%d rounds of arithmetic, calibrated here): no floor is measured beside it\n\n", sim.us, sim.iters)
	}
	if !o.find {
		r, err := runRelayRTC(o.players, o.seconds, o.profile, o.bots, sim)
		if err != nil {
			return err
		}
		if err := r.measureFloor(o.seconds); err != nil {
			return fmt.Errorf("floor: %w", err)
		}
		printRelayRuns(out, []*relayRun{r})
		printFloor(out, r)
		fmt.Fprintln(out, r.result())
		return nil
	}
	var runs []*relayRun
	var best *relayRun
	try := func(n int) bool {
		r, err := runRelayRTC(n, o.seconds, "", o.bots, sim)
		if err != nil {
			fmt.Fprintf(out, "%d players: failed: %v\n", n, err)
			return false
		}
		runs = append(runs, r)
		fmt.Fprintf(out, "%d players: pass=%v  %s\n", n, r.pass(), strings.TrimPrefix(r.result(), "RESULT "))
		if r.pass() && (best == nil || r.players > best.players) {
			best = r
		}
		return r.pass()
	}
	findMost(o.players, o.max, relayRoomSize, try)
	fmt.Fprintln(out)
	printRelayRuns(out, runs)
	if best == nil {
		fmt.Fprintf(out, "\nno load held p99 cut lateness <= %v with every frame delivered; the smallest tried:\n", relayMaxP99)
		if len(runs) == 0 {
			return errors.New("no run completed")
		}
		fmt.Fprintln(out, runs[0].result())
		return nil
	}
	fmt.Fprintf(out, "\nthe most players held (p99 cut lateness <= %v, delivered 1.0): %d\n", relayMaxP99, best.players)
	if b := botsBound(runs, best); b != nil {
		fmt.Fprintf(out, "the bots used %.2f cores at %d players (one CPU theirs when pinned, and what the server left of its own with -bots-spill): the load generator, not only the server, bounds this search\n", b.botCores, b.players)
	}
	if err := best.measureFloor(o.seconds); err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	printFloor(out, best)
	fmt.Fprintln(out, best.result())
	return nil
}

// botsSaturated is the share of the CPU the bots could have from which
// they are taken to have had all of it.
const botsSaturated = 0.95

// botsSaturated reports whether the bots had all the CPU they could: their
// one, and what the server left of its own when they spilled onto it.
func (r *relayRun) botsSaturated() bool {
	could := 1.0
	if r.spill {
		could += max(1-r.cores(), 0)
	}
	return r.botCores >= botsSaturated*could
}

// botsBound returns the run that shows the bots saturated at the edge
// the search found: the one held, or the first tried above it; nil when
// neither had its bots at botsSaturated.
func botsBound(runs []*relayRun, best *relayRun) *relayRun {
	if best.botsSaturated() {
		return best
	}
	var above *relayRun
	for _, r := range runs {
		if r.players > best.players && (above == nil || r.players < above.players) {
			above = r
		}
	}
	if above != nil && above.botsSaturated() {
		return above
	}
	return nil
}

// printFloor prints the run's runtime figures and the floor beside it.
func printFloor(out io.Writer, r *relayRun) {
	fmt.Fprintf(out, "\nserver at %d players: %.2f cores, %.3f heap allocations a message, GC %.1f%% of its Go CPU;\n",
		r.players, r.cores(), r.allocsPerMsg(), 100*r.gcFraction)
	if r.cpuBusy >= 0 {
		fmt.Fprintf(out, "its CPU %.0f%% busy as the kernel counts it (softirqs and ksoftirqd's loopback work there included)\n", 100*r.cpuBusy)
	}
	fmt.Fprintf(out, "messages of %.0f bytes up, %.0f down: %.2f us of CPU each\n", r.upBytes, r.downBytes, r.cpuPerMsg())
	if r.simUS > 0 {
		fmt.Fprintf(out, "the rooms' simulations ran %.0f frames a second at about %g us each (%.2f of a core), and fell a second behind %d times\n",
			float64(r.simFrames)/max(r.wall.Seconds(), 1e-9), r.simUS, float64(r.simFrames)*r.simUS/1e6/max(r.wall.Seconds(), 1e-9), r.simBehind)
		return
	}
	fmt.Fprintf(out, "plain-UDP floor at that shape (recvmmsg, a reply a message on the room's tick, sendmmsg; no crypto, no SCTP, no rooms):\n")
	fmt.Fprintf(out, "  %.2f us a message over %d messages: the engine is %.2f times the floor\n",
		r.floor.CPUPerMsg(), r.floor.Msgs, r.cpuPerMsg()/max(r.floor.CPUPerMsg(), 1e-9))
	if r.floorAEAD.Msgs > 0 {
		fmt.Fprintf(out, "the same floor sealing each datagram in and out with AES-128-GCM, a key a bot (what DTLS cannot skip):\n")
		fmt.Fprintf(out, "  %.2f us a message over %d messages: the engine is %.2f times it\n",
			r.floorAEAD.CPUPerMsg(), r.floorAEAD.Msgs, r.cpuPerMsg()/max(r.floorAEAD.CPUPerMsg(), 1e-9))
	}
}

func printRelayRuns(out io.Writer, runs []*relayRun) {
	sort.Slice(runs, func(i, j int) bool { return runs[i].players < runs[j].players })
	fmt.Fprintf(out, "%8s %6s %8s %10s %12s %8s %9s %12s %11s %6s %10s %13s %9s\n",
		"players", "rooms", "join s", "window s", "player-frames", "cpu s", "cpu cores", "us/pl-frame", "p99 late ms", "deliv", "bots cores", "msgs/pl-frame", "us/msg")
	for _, r := range runs {
		p99, over := r.p99()
		mark := ""
		if over {
			mark = ">"
		}
		fmt.Fprintf(out, "%8d %6d %8.1f %10.1f %12d %8.2f %9.2f %12.2f %11s %6.4f %10.2f %13.2f %9.2f\n",
			r.players, (r.players+relayRoomSize-1)/relayRoomSize, r.join.Seconds(), r.wall.Seconds(), r.playerFrames,
			r.cpu.Seconds(), r.cpu.Seconds()/r.wall.Seconds(), r.cpuPerPlayerFrame(), mark+strconv.FormatFloat(p99, 'f', 2, 64), r.delivered(), r.botCores, r.msgsPerPF(), r.cpuPerMsg())
		fmt.Fprintf(out, "%8s cuts late by at most:", "")
		var cum uint64
		for i, c := range r.late.Counts {
			cum += c
			bound := "more"
			if i < len(r.late.Bounds) {
				bound = strconv.FormatFloat(r.late.Bounds[i]*1e3, 'g', -1, 64) + " ms"
			}
			fmt.Fprintf(out, " %s %.4f;", bound, float64(cum)/float64(max(r.late.Count(), 1)))
		}
		fmt.Fprintln(out)
		if !r.valid() {
			fmt.Fprintf(out, "%8s invalid: the bots offered %.2f messages a player-frame, under %.2f (starved on this machine)\n", "", r.msgsPerPF(), relayMinMsgs)
		}
	}
	fmt.Fprintf(out, "\ncpu is the server process's user+system time (getrusage) over the window; p99 late is interpolated\n")
	fmt.Fprintf(out, "in the engine's tongbu_cut_late_seconds histogram (from /metrics) over the window; deliv is the frames\n")
	fmt.Fprintf(out, "the bots played of those cut while they were joined, up to the window's end (1.0: none missed);\n")
	fmt.Fprintf(out, "bots cores is the bots' process's CPU time over the window (the machine's other load is not shown);\n")
	fmt.Fprintf(out, "msgs/pl-frame counts the server's messages both ways (one down a frame; a bot's uplink at most every half frame).\n")
	fmt.Fprintf(out, "A run whose bots offered under %.2f messages a player-frame is marked invalid: starved bots make the server look cheap.\n", relayMinMsgs)
}

// runRelayRTC runs the server with n players' rooms, starts the bots'
// process with their tickets on its stdin, and measures the window.
func runRelayRTC(n int, seconds float64, profile string, shape bots.Shape, sim simSpec) (*relayRun, error) {
	r := &relayRun{players: n, simUS: sim.us}
	g0 := runtime.NumGoroutine()
	srv, err := bots.NewServer(0)
	if err != nil {
		return nil, err
	}
	rooms := make([]*engine.Room, (n+relayRoomSize-1)/relayRoomSize)
	for i := range rooms {
		rooms[i], err = srv.CreateRoom("r"+strconv.Itoa(i), lockstep.Config{Players: relayRoomSize, Hz: relayHz, Simulation: simConfig(sim.iters)})
		if err != nil {
			srv.Shutdown(context.Background())
			return nil, err
		}
	}
	bs, err := bots.Start(srv, bots.Spec{Kind: "relay", Shape: shape, Players: n, TTL: 30 * time.Minute, Profile: profile,
		Seat: func(i int) (string, string) { return "bot-" + strconv.Itoa(i), rooms[i/relayRoomSize].Name() }})
	if err != nil {
		return nil, err
	}
	defer bs.Close()
	r.join = bs.Join
	r.goroutines = float64(max(runtime.NumGoroutine()-g0, 0)) / float64(n) // the server's, with every bot joined (the bots are another process); fewer than before counts as none
	child := bs.Child
	kill := func(err error) (*relayRun, error) {
		child.Kill()
		return nil, err
	}

	frames := func() []int {
		f := make([]int, 2*len(rooms)) // frames cut, then the simulations' frames
		for i, room := range rooms {
			st := room.Stats()
			f[i], f[len(rooms)+i] = st.Frames, st.SimFrames
		}
		return f
	}
	// The server on one CPU and the bots on the other while measured
	// (-pin), after a second for the move to settle.
	unpin, pinned, err := shape.PinApart(child)
	if err != nil {
		return kill(err)
	}
	defer unpin()
	if pinned {
		time.Sleep(time.Second)
	}
	r.spill = pinned && shape.Spill
	win, marks, err := bots.Measure(bs.URL, time.Duration(seconds*float64(time.Second)), profile, frames, cutLateMetric)
	if err != nil {
		return kill(err)
	}
	frames0, frames1 := marks[0], marks[1]
	r.wall, r.cpu, r.sys, r.cpuBusy = win.Wall, win.CPU, win.Sys, win.ServerCPUBusy
	if r.spill {
		r.cpuBusy = -1 // the bots' time on the server's CPU would count as its
	}
	r.late = win.After.Hist[cutLateMetric].Since(win.Before.Hist[cutLateMetric])
	r.msgs = uint64(win.After.Messages()) - uint64(win.Before.Messages())
	r.gcFraction = win.Runtime[1].GCFraction(win.Runtime[0])
	r.allocs = win.Runtime[1].AllocsSince(win.Runtime[0])
	d := func(name string) float64 { return win.After.Samples[name] - win.Before.Samples[name] }
	r.upBytes = d("tongbu_received_bytes_total") / max(d("tongbu_received_messages_total"), 1)
	r.downBytes = d("tongbu_sent_bytes_total") / max(d("tongbu_sent_messages_total"), 1)
	var stop strings.Builder
	for i, room := range rooms {
		r.simFrames += frames1[len(rooms)+i] - frames0[len(rooms)+i]
		r.simBehind += room.Stats().SimBehind
		r.playerFrames += uint64(frames1[i]-frames0[i]) * uint64(min(relayRoomSize, n-i*relayRoomSize))
		fmt.Fprintf(&stop, "CUT %s %d\n", room.Name(), frames1[i])
	}
	stop.WriteString("STOP\n")
	if err := child.Finish(stop.String(), "DONE expected=%d played=%d lost=%d cores=%g", &r.expected, &r.played, &r.lost, &r.botCores); err != nil {
		return nil, err
	}
	return r, nil
}

// cutLateMetric is the engine's histogram of how late rooms cut.
const cutLateMetric = "tongbu_cut_late_seconds"

// findMost looks for the largest load that try holds, trying loads in
// steps of room: it doubles from start up to limit (or, when start is not
// held, halves it down to one room), then halves the gap between the
// last load held and the first that was not, down to a tenth of it. It
// returns the largest load held, or 0. Loads are whole rooms: start and
// limit are rounded down to them.
func findMost(start, limit, room int, try func(n int) bool) int {
	start = max(room, start/room*room)
	limit = max(start, limit/room*room)
	lo, hi := 0, 0
	for n := start; ; n = min(2*n, limit) {
		if !try(n) {
			hi = n
			break
		}
		lo = n
		if n == limit {
			return lo
		}
	}
	for n := hi / 2 / room * room; lo == 0 && n >= room; n = n / 2 / room * room {
		if try(n) {
			lo = n
		} else {
			hi = n
		}
	}
	for lo > 0 && hi-lo > max(room, lo/10) {
		mid := (lo + hi) / 2 / room * room
		if mid <= lo || mid >= hi {
			break
		}
		if try(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

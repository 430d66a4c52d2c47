//go:build !js

// Package failover is the failover scenario: matches of real WebRTC
// clients on three tongbu serve processes sharing a NATS server, one
// node killed (-mode kill) or drained (-mode drain) mid-match, run
// without standbys (the baseline: every match on the node is lost) and
// with them, one after the other in one run. With -worlds, the same for
// worlds (worlds.go): one node drained, then one killed, with and
// without heirs and checkpoints.
package failover

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func init() {
	harness.Register("failover", "a node of three killed or drained under matches of real clients: the matches' fate with and without standbys", run)
}

type options struct {
	mode           string
	rooms, players int
	hz             int
	steady, after  time.Duration
	binary         string
	verbose        bool
	// The worlds scenario (worlds.go).
	worlds          bool
	worldPlayers    int
	npcsPer         float64
	checkpointEvery time.Duration
}

const secret = "the failover bench's cluster secret"

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("failover", flag.ContinueOnError)
	var o options
	fs.StringVar(&o.mode, "mode", "kill", "kill (SIGKILL the node holding the most rooms) or drain (SIGTERM it)")
	fs.IntVar(&o.rooms, "rooms", 100, "rooms spread over the three nodes")
	fs.IntVar(&o.players, "players", 10, "players a room")
	fs.IntVar(&o.hz, "hz", 15, "the rooms' frame rate")
	fs.DurationVar(&o.steady, "steady", 10*time.Second, "the steady window that measures the cost of standing by")
	fs.DurationVar(&o.after, "after", 8*time.Second, "how long the matches play after the node goes")
	fs.BoolVar(&o.verbose, "v", false, "pass the nodes' logs through")
	fs.StringVar(&o.binary, "tongbu", "", "the tongbu binary (default: built from the repository with go build)")
	fs.BoolVar(&o.worlds, "worlds", false, "the worlds scenario instead: a unique world and a map's lines with NPCs, one node drained then one killed, on a NATS cluster of three")
	fs.IntVar(&o.worldPlayers, "world-players", 60, "-worlds: the bots, a third of them in the town's lines")
	fs.Float64Var(&o.npcsPer, "npcs", 4.5, "-worlds: NPCs a player (the seed world's density)")
	fs.DurationVar(&o.checkpointEvery, "checkpoint-every", cluster.DefaultCheckpointEvery, "-worlds: how often each world writes its checkpoint")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.mode != "kill" && o.mode != "drain" {
		return fmt.Errorf("-mode %q: kill or drain", o.mode)
	}
	if o.binary == "" {
		dir, err := os.MkdirTemp("", "tongbu-failover")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.binary = filepath.Join(dir, "tongbu")
		build := exec.Command("go", "build", "-o", o.binary, "github.com/tongbu/tongbu/cmd/tongbu")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building tongbu: %v", err)
		}
	}
	if o.worlds {
		fmt.Fprintf(out, "failover: worlds, %d players, %.1f NPCs a player, checkpoints every %v, 3 nodes on 3 NATS servers\n", o.worldPlayers, o.npcsPer, o.checkpointEvery)
		return runWorlds(o, out)
	}
	fmt.Fprintf(out, "failover: %d rooms of %d players at %d Hz on 3 nodes, mode %s\n", o.rooms, o.players, o.hz, o.mode)
	base, err := trial(o, false, out)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	sb, err := trial(o, true, out)
	if err != nil {
		return fmt.Errorf("standbys: %w", err)
	}
	fmt.Fprintf(out, "%-22s %10s %10s\n", "", "no standby", "standby")
	row := func(name string, a, b any) { fmt.Fprintf(out, "%-22s %10v %10v\n", name, a, b) }
	row("matches on the node", base.matches, sb.matches)
	row("matches survived", base.survived, sb.survived)
	row("frames lost", base.lost, sb.lost)
	row("frames conflicting", base.conflicting, sb.conflicting)
	row("players dropped", base.dropped, sb.dropped)
	row("stall p50 ms", ms(base.stallP50), ms(sb.stallP50))
	row("stall p99 ms", ms(base.stallP99), ms(sb.stallP99))
	row("bots' turn p99/max ms", fmt.Sprintf("%d/%d", ms(base.turnP99), ms(base.turnMax)), fmt.Sprintf("%d/%d", ms(sb.turnP99), ms(sb.turnMax)))
	row("cpu us/player-frame", fmt.Sprintf("%.2f", base.cpuPerPF), fmt.Sprintf("%.2f", sb.cpuPerPF))
	row("nats B/room/s", fmt.Sprintf("%.0f", base.natsPerRoom), fmt.Sprintf("%.0f", sb.natsPerRoom))
	row("frame B/room/s", fmt.Sprintf("%.0f", base.frameBytes), fmt.Sprintf("%.0f", sb.frameBytes))
	standbyBytes := sb.natsPerRoom - base.natsPerRoom
	fmt.Fprintln(out, harness.Result("failover", "mode", o.mode, "rooms", o.rooms, "players", o.players,
		"matches", sb.matches, "matches_survived", sb.survived, "frames_lost", sb.lost, "frames_conflicting", sb.conflicting,
		"desyncs", sb.desyncs, "stall_p50_ms", ms(sb.stallP50), "stall_p99_ms", ms(sb.stallP99), "bots_turn_max_ms", ms(sb.turnMax), "players_dropped", sb.dropped,
		"baseline_matches", base.matches, "baseline_matches_survived", base.survived,
		"standby_cpu_ratio", fmt.Sprintf("%.3f", sb.cpuPerPF/base.cpuPerPF),
		"nats_bytes_per_room_s", fmt.Sprintf("%.0f", standbyBytes),
		"frame_bytes_per_room_s", fmt.Sprintf("%.0f", sb.frameBytes),
		"nats_over_frames", fmt.Sprintf("%.2f", standbyBytes/sb.frameBytes)))
	return nil
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// outcome is one trial's figures.
type outcome struct {
	matches, survived, dropped int
	lost, conflicting, desyncs int
	stallP50, stallP99         time.Duration
	turnP99, turnMax           time.Duration // the bots' loops: time between two turns, after the event
	cpuPerPF                   float64       // server CPU us a player-frame, steady
	natsPerRoom                float64       // NATS bytes in, a room a second, steady
	frameBytes                 float64       // the rooms' frame bodies, bytes a room a second
}

// node is one tongbu serve process.
type node struct {
	id     string
	url    string
	cmd    *exec.Cmd
	exited chan error
}

func startNode(o options, natsURL, id string, standby bool) (*node, error) {
	drain := "20s"
	if !standby {
		drain = "0" // the baseline: a node that goes ends its matches, as before standbys
	}
	cmd := exec.Command(o.binary, "serve", "-http", "127.0.0.1:0", "-udp", "0", "-loopback", "-hugepages=false",
		"-nats", natsURL, "-node", id, "-capacity", "1000", "-heartbeat", "200ms", "-drain-timeout", drain,
		"-standby="+strconv.FormatBool(standby))
	return startCmd(o, cmd, id)
}

// startCmd starts cmd, a tongbu serve process, and waits for the URL it
// prints.
func startCmd(o options, cmd *exec.Cmd, id string) (*node, error) {
	cmd.Env = append(os.Environ(), "TONGBU_SECRET="+secret)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = io.Discard
	if o.verbose {
		cmd.Stderr = os.Stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{id: id, cmd: cmd, exited: make(chan error, 1)}
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "tongbu serve: http://"); ok {
				addr, _, _ := strings.Cut(rest, " ")
				select {
				case urls <- "http://" + addr:
				default:
				}
			}
		}
		n.exited <- cmd.Wait()
	}()
	select {
	case n.url = <-urls:
		return n, nil
	case err := <-n.exited:
		return nil, fmt.Errorf("node %s exited: %v", id, err)
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		return nil, fmt.Errorf("node %s not ready in 30 s", id)
	}
}

// cpu returns the process's CPU time so far (Linux; 0 elsewhere).
func (n *node) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", n.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseUint(f[11], 10, 64)
	k, _ := strconv.ParseUint(f[12], 10, 64)
	return time.Duration(u+k) * time.Second / 100
}

// bot is one player: a real client, the digest of every frame it ran.
type bot struct {
	room  int
	c     *engine.Client
	sums  []uint64
	rerun int // frames it ran again (told to start over)
	gap   time.Duration
	last  time.Time
	err   error
	in    [2]byte
}

func (b *bot) play(now time.Time) {
	if b.err != nil {
		return
	}
	if b.err = b.c.Update(now); b.err != nil {
		return
	}
	ls := b.c.Lockstep()
	st := ls.Advance(now)
	for _, f := range st.Frames {
		if f.Number < len(b.sums) { // started over: a fresh client from frame 0
			b.rerun += len(b.sums) - f.Number
			b.sums = b.sums[:f.Number]
		}
		b.sums = append(b.sums, digest(f))
	}
	if n := len(st.Frames); n > 0 {
		b.in[1]++
		ls.Input(now, b.in[:])
		if !st.CatchingUp {
			if !b.last.IsZero() {
				b.gap = max(b.gap, now.Sub(b.last))
			}
			b.last = now
		}
	}
}

// digest is a frame's FNV-1a over its slots.
func digest(f lockstep.Frame) uint64 {
	h := uint64(14695981039346656037)
	mix := func(b byte) { h = (h ^ uint64(b)) * 1099511628211 }
	for _, s := range f.Slots {
		switch {
		case s.Gone:
			mix(2)
		case s.MadeUp:
			mix(1)
		}
		for _, in := range s.Inputs {
			mix(byte(len(in)))
			for _, c := range in {
				mix(c)
			}
		}
	}
	return h
}

// trial runs the scenario once, with or without standbys.
func trial(o options, standby bool, out io.Writer) (outcome, error) {
	var res outcome
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return res, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return res, errors.New("nats server not ready")
	}
	nodes := map[string]*node{}
	defer func() {
		for _, n := range nodes {
			n.cmd.Process.Kill()
			<-n.exited
		}
	}()
	for _, id := range []string{"n1", "n2", "n3"} {
		n, err := startNode(o, ns.ClientURL(), id, standby)
		if err != nil {
			return res, err
		}
		nodes[id] = n
	}
	lobby, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return res, err
	}
	defer lobby.Close()
	copts := &cluster.Options{Heartbeat: 200 * time.Millisecond, Secret: []byte(secret)}
	dir, err := cluster.Watch(lobby, copts)
	if err != nil {
		return res, err
	}
	defer dir.Close()
	if err := until(20*time.Second, func() bool { return len(dir.Nodes()) == 3 }); err != nil {
		return res, fmt.Errorf("three nodes: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	players := make([]string, o.players)
	for i := range players {
		players[i] = fmt.Sprintf("p%d", i)
	}
	var bots []*bot
	defer func() {
		for _, b := range bots {
			b.c.Close()
		}
	}()
	cfg := json.RawMessage(fmt.Sprintf(`{"players":%d,"hz":%d,"start":"created"}`, o.players, o.hz))
	var dialMu sync.Mutex
	for r := range o.rooms {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: fmt.Sprintf("match-%d", r), Players: players, Config: cfg}, copts)
		if err != nil {
			return res, err
		}
		var wg sync.WaitGroup
		var dialErr error
		for _, pl := range players {
			wg.Go(func() {
				c, err := engine.Dial(ctx, p.URL, p.Tickets[pl], &engine.ClientConfig{IncludeLoopback: true})
				dialMu.Lock()
				defer dialMu.Unlock()
				if err != nil {
					dialErr = err
					return
				}
				bots = append(bots, &bot{room: r, c: c})
			})
		}
		wg.Wait()
		if dialErr != nil {
			return res, dialErr
		}
	}
	// Two loops play the bots, each its half, every 5 ms.
	var mu sync.Mutex
	stop := make(chan struct{})
	var loops sync.WaitGroup
	var turns []time.Duration // after the event: how long between two turns of a loop (the stall's floor)
	measuring := false
	for k := range 2 {
		loops.Go(func() {
			var last time.Time
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				mu.Lock()
				now := time.Now()
				if measuring && !last.IsZero() {
					turns = append(turns, now.Sub(last))
				}
				last = now
				for i := k; i < len(bots); i += 2 {
					bots[i].play(now)
				}
				mu.Unlock()
			}
		})
	}
	defer func() { close(stop); loops.Wait() }()
	played := func() (n int) {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bots {
			n += len(b.sums)
		}
		return n
	}
	if err := until(30*time.Second, func() bool { return played() > 30*len(bots) }); err != nil {
		return res, fmt.Errorf("the matches starting: %w", err)
	}
	// The steady window: the cost of standing by.
	cpu := func() (t time.Duration) {
		for _, n := range nodes {
			t += n.cpu()
		}
		return t
	}
	vz := func() int64 {
		v, err := ns.Varz(nil)
		if err != nil {
			return 0
		}
		return v.InBytes
	}
	c0, b0, f0, t0 := cpu(), vz(), played(), time.Now()
	time.Sleep(o.steady)
	c1, b1, f1, secs := cpu(), vz(), played(), time.Since(t0).Seconds()
	res.cpuPerPF = float64((c1 - c0).Microseconds()) / float64(f1-f0)
	res.natsPerRoom = float64(b1-b0) / secs / float64(o.rooms)
	mu.Lock()
	var bodyBits, bodies int
	seen := map[int]bool{}
	for _, b := range bots {
		if seen[b.room] {
			continue
		}
		seen[b.room] = true
		for _, f := range b.c.Lockstep().Carry(0) {
			bodyBits += f.FullBits
			bodies++
		}
	}
	mu.Unlock()
	if bodies > 0 {
		res.frameBytes = float64(bodyBits) / 8 / float64(bodies) * float64(o.hz)
	}

	// The node with the most rooms goes.
	victim, most := "", 0
	for id := range nodes {
		if n := len(dir.Rooms(id)); n > most {
			victim, most = id, n
		}
	}
	onVictim := map[int]bool{}
	for _, name := range dir.Rooms(victim) {
		if r, err := strconv.Atoi(strings.TrimPrefix(name, "match-")); err == nil {
			onVictim[r] = true
		}
	}
	res.matches = len(onVictim)
	mu.Lock()
	before := make([]int, len(bots))
	for i, b := range bots {
		before[i], b.gap = len(b.sums), 0
	}
	measuring = true
	mu.Unlock()
	sig := syscall.SIGKILL
	if o.mode == "drain" {
		sig = syscall.SIGTERM
	}
	nodes[victim].cmd.Process.Signal(sig)
	fmt.Fprintf(out, "  standby=%v: %s %s (%d rooms) after %d frames a bot, at %s\n", standby, o.mode, victim, res.matches, before[0], time.Now().UTC().Format("15:04:05.000"))
	time.Sleep(o.after)

	mu.Lock()
	defer mu.Unlock()
	// A match survived when every one of its players played on, past the
	// frames the node's going cost at most.
	alive := map[int]bool{}
	for r := range onVictim {
		alive[r] = true
	}
	var stalls []time.Duration
	minFrames := int(o.after.Seconds()-3) * o.hz
	byRoom := map[int][]*bot{}
	for i, b := range bots {
		byRoom[b.room] = append(byRoom[b.room], b)
		if b.err != nil {
			res.dropped++
		}
		if !onVictim[b.room] {
			continue
		}
		if b.err != nil || len(b.sums)-before[i] < minFrames {
			alive[b.room] = false
		}
		res.lost += b.rerun
		stalls = append(stalls, b.gap)
	}
	errs := map[string]int{}
	for _, b := range bots {
		if b.err != nil {
			errs[b.err.Error()]++
		}
	}
	for e, n := range errs {
		fmt.Fprintf(out, "    %d players: %s\n", n, e)
	}
	for r, ok := range alive {
		if ok {
			res.survived++
		}
		conflict := false
		rb := byRoom[r]
		for n := 0; ; n++ {
			var want uint64
			have, differ := 0, false
			for _, b := range rb {
				if n < len(b.sums) {
					if have == 0 {
						want = b.sums[n]
					} else if b.sums[n] != want {
						differ = true
					}
					have++
				}
			}
			if have == 0 {
				break
			}
			if differ {
				res.conflicting++
				conflict = true
			}
		}
		if conflict {
			res.desyncs++
		}
	}
	if len(turns) > 0 {
		slices.Sort(turns)
		res.turnP99, res.turnMax = turns[int(math.Ceil(0.99*float64(len(turns))))-1], turns[len(turns)-1]
	}
	if res.survived > 0 {
		slices.Sort(stalls)
		res.stallP50 = stalls[len(stalls)/2]
		res.stallP99 = stalls[int(math.Min(float64(len(stalls)-1), math.Ceil(0.99*float64(len(stalls)))-1))]
	}
	return res, nil
}

// until polls cond every 50 ms for d.
func until(d time.Duration, cond func() bool) error {
	for end := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(end) {
			return fmt.Errorf("not within %v", d)
		}
	}
	return nil
}

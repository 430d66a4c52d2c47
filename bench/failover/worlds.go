//go:build !js

package failover

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
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
	"github.com/tongbu/tongbu/interest"
)

// The worlds scenario (-worlds): a unique world (the field), a map's
// lines (the town), NPCs wandering both, and a map of two cells (wild#0
// on n1 and wild#1 on n2 at first, bots near their border seeing across
// it; every node hosts the map), on three tongbu serve processes
// over a NATS cluster of three; bots walk and cast. The node holding the
// field is drained (its worlds move whole to their heirs while the bots
// play), then the node holding the most players is killed (its worlds
// come back from their checkpoints on their heirs). The baseline runs the
// same without heirs and checkpoints: today's behaviour.

// worldsHz is the served worlds' frame rate (tongbu serve's default).
const worldsHz = 16

// worldsConfig is the serve config of the scenario for a node that
// serves the cells serve lists.
func worldsConfig(o options, safe bool, serve string) string {
	every := o.checkpointEvery.String()
	if !safe {
		every = "-1s"
	}
	npcs := int(o.npcsPer * float64(o.worldPlayers))
	townCap := max(o.worldPlayers/6, 2)
	return fmt.Sprintf(`{
  "worlds": [{"name": "field", "width": 16, "height": 16, "region_size": 1024, "cap": 1000, "npcs": %d,
              "portals": [{"x": 12000, "y": 8000, "w": 400, "h": 400, "map": "town", "at": [2048, 2048]}]}],
  "maps": [{"map": "town", "lines": 1, "cap": %d, "width": 4, "height": 4, "region_size": 1024, "npcs": %d}],
  "cells": [{"map": "wild", "cols": 2, "rows": 1, "width": 8, "height": 4, "region_size": 1024, "cap": 1000, "serve": [%s]}],
  "cluster": {"checkpoint_every": %q, "checkpoint_replicas": 3}
}`, npcs, townCap, int(o.npcsPer*float64(townCap)), serve, every)
}

// roamer is one bot in a world over real WebRTC.
type roamer struct {
	name  string
	c     *engine.Client
	world string
	self  interest.ID
	// home is where it wanders; still stops it walking (around an event).
	home  [4]int32
	still bool
	next  time.Time
	rng   *rand.Rand
	err   error
	moves []engine.Move
	evs   []engine.ConnectionEvent
	// Frames: the last one seen and when, and the longest gap since the
	// last reset; back is when frames came again after the last reset's
	// mark (a crash).
	frame int
	last  time.Time
	gap   time.Duration
	mark  time.Time
	back  time.Time
	// Around a drain (watching): what it knew the play before, what it
	// knew when its world moved, and of those, how many it no longer
	// knew a moment after though they were well inside its range.
	watching  bool
	prevKnown map[interest.ID]interest.Vec
	moveKnown map[interest.ID]interest.Vec
	movedAt   time.Time
	checked   bool
	lostKnown int
	lostIDs   []string // with -v
}

// knownCheck is how long after its world moved a bot checks that it
// still knows what it knew, and the margin inside its 3x3 regions an
// entity must have been in (NPCs walk 30 units a frame).
const (
	knownCheck  = 250 * time.Millisecond
	knownMargin = 300
)

func (r *roamer) play(now time.Time) {
	if r.err != nil {
		return
	}
	moves := len(r.moves)
	if r.err = r.c.Update(now); r.err != nil {
		return
	}
	is := r.c.Interest()
	if r.watching {
		r.watchKnown(now, len(r.moves) > moves)
	}
	if f := is.Frame(); f != r.frame {
		if !r.last.IsZero() {
			r.gap = max(r.gap, now.Sub(r.last))
		}
		if !r.mark.IsZero() && r.back.IsZero() && now.After(r.mark) && len(r.evs) > 0 {
			r.back = now
		}
		r.frame, r.last = f, now
	}
	if !r.still && now.After(r.next) {
		if _, ok := is.Self(); ok {
			h := r.home
			is.Move(interest.Vec{X: h[0] + r.rng.Int32N(h[2]-h[0]), Y: h[1] + r.rng.Int32N(h[3]-h[1])}, 60)
			var target interest.ID
			is.Each(func(id interest.ID, v interest.View) {
				if v.Kind == interest.NPC && target == 0 {
					target = id
				}
			})
			is.Skill(1, target) // a cast at the first NPC it knows
			r.next = now.Add(time.Second + time.Duration(r.rng.IntN(1000))*time.Millisecond)
		}
	}
	is.Advance(now)
}

// watchKnown keeps what the bot knows, notes it when its world moved
// (moved), and checks it knownCheck later.
func (r *roamer) watchKnown(now time.Time, moved bool) {
	is := r.c.Interest()
	switch {
	case moved && r.moveKnown == nil:
		r.moveKnown, r.movedAt, r.prevKnown = r.prevKnown, now, nil
	case r.moveKnown != nil && !r.checked && now.Sub(r.movedAt) >= knownCheck:
		r.checked = true
		me, ok := is.Self()
		if !ok {
			return
		}
		rx, ry := me.Pos.X/1024, me.Pos.Y/1024
		for id, p := range r.moveKnown {
			inside := p.X >= (rx-1)*1024+knownMargin && p.X < (rx+2)*1024-knownMargin &&
				p.Y >= (ry-1)*1024+knownMargin && p.Y < (ry+2)*1024-knownMargin
			if _, known := is.Entity(id); inside && !known && id != r.self {
				r.lostKnown++
				r.lostIDs = append(r.lostIDs, fmt.Sprintf("%d at %v (me %v)", id, p, me.Pos))
			}
		}
	case r.moveKnown == nil:
		if r.prevKnown == nil {
			r.prevKnown = map[interest.ID]interest.Vec{}
		}
		clear(r.prevKnown)
		is.Each(func(id interest.ID, v interest.View) { r.prevKnown[id] = v.Logic.Pos })
	}
}

// worldsOutcome is one trial's figures.
type worldsOutcome struct {
	players, kept, dropped     int
	lost, duplicated, knownErr int
	knownChecked               int // bots whose known set was checked across their world's move
	controlErr, controlChecked int // the same of bots whose world stayed
	moveStallP99               time.Duration
	progressLostP99            float64 // s
	resumeP99                  time.Duration
	checkpointFraction         float64
	turnP99                    time.Duration // the bots' loops in the drain: time between two turns
	checkpointBps              float64
	drained, killed            string
	movedPlayers, crashPlayers int
}

func runWorlds(o options, out io.Writer) error {
	base, err := worldsTrial(o, false, out)
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	safe, err := worldsTrial(o, true, out)
	if err != nil {
		return fmt.Errorf("heirs and checkpoints: %w", err)
	}
	row := func(k string, b, s any) { fmt.Fprintf(out, "  %-34s %14v %14v\n", k, b, s) }
	fmt.Fprintf(out, "\n  %-34s %14s %14s\n", "", "baseline", "tongbu")
	row("players", base.players, safe.players)
	row("players kept", base.kept, safe.kept)
	row("players dropped", base.dropped, safe.dropped)
	row("players on the drained node", base.movedPlayers, safe.movedPlayers)
	row("players on the killed node", base.crashPlayers, safe.crashPlayers)
	row("entities lost / duplicated", fmt.Sprintf("%d/%d", base.lost, base.duplicated), fmt.Sprintf("%d/%d", safe.lost, safe.duplicated))
	row("known-set errors (bots checked)", fmt.Sprintf("%d (%d)", base.knownErr, base.knownChecked), fmt.Sprintf("%d (%d)", safe.knownErr, safe.knownChecked))
	row("the same where nothing moved", fmt.Sprintf("%d (%d)", base.controlErr, base.controlChecked), fmt.Sprintf("%d (%d)", safe.controlErr, safe.controlChecked))
	row("move stall p99 (ms)", "-", safe.moveStallP99.Milliseconds())
	row("bots' turn p99 in the drain (ms)", base.turnP99.Milliseconds(), safe.turnP99.Milliseconds())
	row("progress lost p99 (s)", "-", fmt.Sprintf("%.2f", safe.progressLostP99))
	row("resume p99 (ms)", "-", safe.resumeP99.Milliseconds())
	row("checkpoint cpu / tick", "-", fmt.Sprintf("%.4f", safe.checkpointFraction))
	row("checkpoint bytes/s", "-", fmt.Sprintf("%.0f", safe.checkpointBps))
	fmt.Fprintf(out, "  targets: players_dropped=0, entities lost/duplicated 0, known_set_errors=0, move_stall_p99_ms <= 125 + rtt,\n"+
		"           players_kept=all, progress_lost_p99_s <= %.1f + detection, resume_p99_ms <= 3000, checkpoint_cpu_fraction <= 0.05\n", o.checkpointEvery.Seconds())
	fmt.Fprintln(out, harness.Result("failover",
		"mode", "worlds", "players", safe.players, "players_kept", safe.kept, "players_dropped", safe.dropped,
		"entities_lost", safe.lost, "entities_duplicated", safe.duplicated, "known_set_errors", safe.knownErr, "known_set_errors_unmoved", safe.controlErr,
		"move_stall_p99_ms", safe.moveStallP99.Milliseconds(), "progress_lost_p99_s", fmt.Sprintf("%.2f", safe.progressLostP99),
		"resume_p99_ms", safe.resumeP99.Milliseconds(), "checkpoint_cpu_fraction", fmt.Sprintf("%.4f", safe.checkpointFraction),
		"checkpoint_bytes_per_s", fmt.Sprintf("%.0f", safe.checkpointBps), "bots_turn_p99_ms", safe.turnP99.Milliseconds(),
		"baseline_players_kept", base.kept))
	return nil
}

// natsCluster starts a NATS cluster of n servers with JetStream, on
// loopback; stop shuts it down.
func natsCluster(n int) (urls string, stop func(), err error) {
	var servers []*server.Server
	var dirs []string
	stop = func() {
		for _, s := range servers {
			s.Shutdown()
			s.WaitForShutdown()
		}
		for _, d := range dirs {
			os.RemoveAll(d)
		}
	}
	routes := make([]*url.URL, n)
	ports := make([]int, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", stop, err
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		l.Close()
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[i])}
	}
	var cl []string
	for i := range n {
		d, err := os.MkdirTemp("", "tongbu-failover-js")
		if err != nil {
			return "", stop, err
		}
		dirs = append(dirs, d)
		s, err := server.NewServer(&server.Options{ServerName: fmt.Sprintf("nats-%d", i+1), Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
			JetStream: true, StoreDir: d, Cluster: server.ClusterOpts{Name: "failover", Host: "127.0.0.1", Port: ports[i]}, Routes: routes})
		if err != nil {
			return "", stop, err
		}
		go s.Start()
		servers = append(servers, s)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			return "", stop, fmt.Errorf("a NATS server not ready in 20 s")
		}
		cl = append(cl, s.ClientURL())
	}
	err = until(20*time.Second, func() bool {
		leader := false
		for _, s := range servers {
			leader = leader || s.JetStreamIsLeader()
		}
		return leader
	})
	return strings.Join(cl, ","), stop, err
}

// worldsTrial runs the scenario once, with heirs and checkpoints (safe)
// or without.
func worldsTrial(o options, safe bool, out io.Writer) (worldsOutcome, error) {
	var res worldsOutcome
	natsURLs, stopNATS, err := natsCluster(3)
	defer stopNATS()
	if err != nil {
		return res, err
	}
	dir0, err := os.MkdirTemp("", "tongbu-failover-worlds")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir0)
	cfgPaths := map[string]string{}
	for id, serve := range map[string]string{"n1": "0", "n2": "1", "n3": ""} {
		cfgPaths[id] = filepath.Join(dir0, id+".json")
		if err := os.WriteFile(cfgPaths[id], []byte(worldsConfig(o, safe, serve)), 0o644); err != nil {
			return res, err
		}
	}
	var nmu sync.Mutex
	nodes := map[string]*node{}
	start := func(id string) error {
		cmd := exec.Command(o.binary, "serve", "-http", "127.0.0.1:0", "-udp", "0", "-loopback", "-hugepages=false", "-config", cfgPaths[id],
			"-nats", natsURLs, "-node", id, "-players", "5000", "-heartbeat", "200ms", "-drain-timeout", "20s", "-standby="+strconv.FormatBool(safe))
		n, err := startCmd(o, cmd, id)
		if err != nil {
			return err
		}
		nmu.Lock()
		nodes[id] = n
		nmu.Unlock()
		return nil
	}
	defer func() {
		for _, n := range nodes {
			n.cmd.Process.Kill()
			<-n.exited
		}
	}()
	// n1 first: the field and the town's first line are placed on it,
	// beside the west cell, so that its drain moves a unique world, a
	// map's line and a cell at once.
	if err := start("n1"); err != nil {
		return res, err
	}
	lobby, err := nats.Connect(natsURLs, nats.MaxReconnects(-1))
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
	nodeOf := func(world string) string {
		st, ok := dir.LocateWorld(world)
		if !ok {
			return ""
		}
		nmu.Lock()
		defer nmu.Unlock()
		for id, n := range nodes {
			if n.url == st.URL {
				return id
			}
		}
		return ""
	}
	if err := until(20*time.Second, func() bool { return nodeOf("field") != "" && nodeOf("town~1") != "" && nodeOf("wild#0") != "" }); err != nil {
		return res, fmt.Errorf("the field, the town and the west cell placed: %w", err)
	}
	for _, id := range []string{"n2", "n3"} {
		if err := start(id); err != nil {
			return res, err
		}
	}
	if err := until(20*time.Second, func() bool { return nodeOf("wild#1") != "" && len(dir.Nodes()) == 3 }); err != nil {
		return res, fmt.Errorf("the east cell placed: %w", err)
	}

	// The bots: of every six, three in the field, one goes to the town
	// through the portal, one to each cell, by the border.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex // the bots, played by two loops
	var bots []*roamer
	defer func() {
		for _, b := range bots {
			b.c.Close()
		}
	}()
	var dialErr error
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i := range o.worldPlayers {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			name := fmt.Sprintf("bot-%d", i)
			b := &roamer{name: name, world: "field", rng: rand.New(rand.NewPCG(uint64(i), 59)),
				home: [4]int32{4000, 4000, 11000, 11000}}
			switch i % 6 {
			case 2:
				b.home = [4]int32{12100, 8100, 12300, 8300} // the portal
			case 4:
				b.world, b.home = "wild#0", [4]int32{2800, 1200, 3900, 2800}
			case 5:
				b.world, b.home = "wild#1", [4]int32{4200, 1200, 5300, 2800}
			}
			p, err := cluster.JoinWorld(ctx, lobby, dir, cluster.JoinRequest{World: b.world, Player: name}, copts)
			if err == nil {
				b.c, err = engine.Dial(ctx, p.URL, p.Tickets[name], &engine.ClientConfig{IncludeLoopback: true,
					OnMove:       func(m engine.Move) { b.moves = append(b.moves, m) },
					OnConnection: func(ev engine.ConnectionEvent) { b.evs = append(b.evs, ev) }})
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				dialErr = err
				return
			}
			b.self = b.c.Entity()
			bots = append(bots, b)
		})
	}
	wg.Wait()
	if dialErr != nil {
		return res, dialErr
	}
	res.players = len(bots)
	stop := make(chan struct{})
	var loops sync.WaitGroup
	var turns []time.Duration // in the drain: between two turns of a loop (the stall's floor)
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
	look := func(f func(b *roamer)) {
		mu.Lock()
		defer mu.Unlock()
		for _, b := range bots {
			f(b)
		}
	}
	if err := until(60*time.Second, func() bool {
		in := 0
		look(func(b *roamer) {
			if b.c.Target() != "field" || b.home[0] != 12100 { // a portal bot through
				in++
			}
		})
		return in == len(bots)
	}); err != nil {
		return res, fmt.Errorf("the bots walking to the town: %w", err)
	}
	look(func(b *roamer) {
		if b.home[0] == 12100 {
			b.world, b.self, b.home, b.moves = b.c.Target(), b.c.Entity(), [4]int32{500, 500, 3500, 3500}, nil
		}
	})
	heirs := func() error {
		if !safe {
			time.Sleep(time.Second)
			return nil
		}
		err := until(20*time.Second, func() bool {
			ok := true
			look(func(b *roamer) {
				st, placed := dir.LocateWorld(b.world)
				ok = ok && placed && b.c.Standby() != "" && b.c.Standby() != st.URL
			})
			return ok
		})
		time.Sleep(o.checkpointEvery + 500*time.Millisecond) // a checkpoint at least
		return err
	}
	if err := heirs(); err != nil {
		return res, fmt.Errorf("heirs: %w", err)
	}

	// The steady window: what the checkpoints cost.
	scrape := func() (ckpt, tick, bytes float64) {
		nmu.Lock()
		defer nmu.Unlock()
		for _, n := range nodes {
			m := metricsOf(n.url)
			ckpt += m["tongbu_world_checkpoint_seconds_sum"]
			tick += m["tongbu_world_tick_seconds_sum"]
			bytes += m["tongbu_cluster_checkpoint_bytes_total"]
		}
		return
	}
	c0, t0, b0 := scrape()
	w0 := time.Now()
	time.Sleep(o.steady)
	c1, t1, b1 := scrape()
	if t1 > t0 {
		res.checkpointFraction = (c1 - c0) / (t1 - t0)
	}
	res.checkpointBps = (b1 - b0) / time.Since(w0).Seconds()

	entities := func(world string) int { // the world's entities, on its node
		id := nodeOf(world)
		nmu.Lock()
		n := nodes[id]
		nmu.Unlock()
		if n == nil {
			return -1
		}
		return int(metricsOf(n.url)[fmt.Sprintf("tongbu_world_entities{world=%q}", world)])
	}
	// Around an event the bots stand still; around a drain they watch
	// what they know.
	before := func(watch bool) {
		look(func(b *roamer) {
			if me, ok := b.c.Interest().Self(); ok {
				b.c.Interest().Move(me.Pos, 60) // it stops where it is
			}
			b.still, b.gap, b.evs, b.moves, b.back = true, 0, nil, nil, time.Time{}
			b.watching, b.prevKnown, b.moveKnown, b.checked, b.lostKnown, b.lostIDs = watch, nil, nil, false, 0, nil
		})
		time.Sleep(500 * time.Millisecond) // they stop
	}
	after := func() {
		look(func(b *roamer) { b.still, b.watching = false, false })
	}
	dupes := func() (n int) { // entities a bot knows twice, under two IDs
		look(func(b *roamer) {
			names := map[string]int{}
			b.c.Interest().Each(func(id interest.ID, v interest.View) {
				if v.HasDisplay {
					names[v.Display.Name]++
				}
			})
			for _, k := range names {
				n += k - 1
			}
		})
		return n
	}

	// (1) The drain of the node holding the field.
	res.drained = nodeOf("field")
	worldsOn := func(id string) map[string]bool {
		on := map[string]bool{}
		for _, w := range []string{"field", "town~1", "town~2", "town~3", "wild#0", "wild#1"} {
			if nodeOf(w) == id {
				on[w] = true
			}
		}
		return on
	}
	moving := worldsOn(res.drained)
	count := map[string]int{}
	for w := range moving {
		count[w] = entities(w)
	}
	before(true)
	look(func(b *roamer) {
		if moving[b.world] {
			res.movedPlayers++
		}
	})
	mu.Lock()
	measuring = true
	// The bots whose world stays are checked the same way from now: what
	// the measure finds where nothing moves.
	now := time.Now()
	for _, b := range bots {
		if !moving[b.world] && b.prevKnown != nil {
			b.moveKnown, b.movedAt, b.prevKnown = b.prevKnown, now, nil
		}
	}
	mu.Unlock()
	nodes[res.drained].cmd.Process.Signal(syscall.SIGTERM)
	fmt.Fprintf(out, "  safe=%v: drain %s (%d players) at %s\n", safe, res.drained, res.movedPlayers, time.Now().UTC().Format("15:04:05.000"))
	select {
	case <-nodes[res.drained].exited:
		nodes[res.drained].exited <- nil
	case <-time.After(25 * time.Second):
		return res, fmt.Errorf("%s still running 25 s after SIGTERM", res.drained)
	}
	time.Sleep(o.after)
	after()
	mu.Lock()
	measuring = false
	res.turnP99 = p99(turns)
	mu.Unlock()
	var stalls []time.Duration
	look(func(b *roamer) {
		if moving[b.world] && b.err == nil {
			stalls = append(stalls, b.gap)
		}
		if o.verbose && b.lostKnown > 0 {
			fmt.Fprintf(out, "    %s (self %d) in %s (moved %v) at %v lost %v\n", b.name, b.self, b.world, moving[b.world], b.movedAt.Format("15:04:05.000"), b.lostIDs)
		}
		switch {
		case !b.checked:
		case moving[b.world]:
			res.knownErr += b.lostKnown
			res.knownChecked++
		default:
			res.controlErr += b.lostKnown
			res.controlChecked++
		}
	})
	for w, n := range count {
		if m := entities(w); m >= 0 {
			res.lost += max(n-m, 0)
			res.duplicated += max(m-n, 0)
		} else {
			res.lost += n
		}
	}
	res.duplicated += dupes()
	res.moveStallP99 = p99(stalls)
	if err := start(res.drained); err != nil {
		return res, err
	}
	if err := until(20*time.Second, func() bool { return len(dir.Nodes()) >= 3 && aliveNodes(dir) == 3 }); err != nil {
		return res, fmt.Errorf("%s back: %w", res.drained, err)
	}
	if err := heirs(); err != nil {
		return res, fmt.Errorf("heirs after the drain: %w", err)
	}

	// (2) The crash of the node holding the most players.
	most := 0
	for _, st := range dir.Nodes() {
		n := 0
		for w := range worldsOn(st.ID) {
			if ws, ok := dir.LocateWorld(w); ok {
				n += ws.Players
			}
		}
		if st.Alive && n > most {
			res.killed, most = st.ID, n
		}
	}
	if res.killed == "" {
		res.killed = nodeOf("field")
	}
	crashing := worldsOn(res.killed)
	before(false)
	seen := map[*roamer]int{}
	killedAt := time.Now()
	look(func(b *roamer) {
		if crashing[b.world] {
			res.crashPlayers++
			seen[b] = b.frame
			b.mark = killedAt
		}
	})
	nodes[res.killed].cmd.Process.Signal(syscall.SIGKILL)
	fmt.Fprintf(out, "  safe=%v: kill %s (%d players) at %s\n", safe, res.killed, res.crashPlayers, killedAt.UTC().Format("15:04:05.000"))
	time.Sleep(o.after + 4*time.Second)
	after()
	var lost []float64
	var resumes []time.Duration
	look(func(b *roamer) {
		alive := b.err == nil && time.Since(b.last) < time.Second && b.c.Target() == b.world
		if alive {
			res.kept++
		} else {
			res.dropped++
			if o.verbose || safe {
				fmt.Fprintf(out, "    dropped %s in %s (now %q): err %v, last frame %v ago, events %+v\n", b.name, b.world, b.c.Target(), b.err, time.Since(b.last).Round(time.Millisecond), b.evs)
			}
		}
		if _, ok := seen[b]; !ok || !alive {
			return
		}
		if o.verbose {
			fmt.Fprintf(out, "    %s in %s: saw frame %d, events %+v, back after %v\n", b.name, b.world, seen[b], b.evs, b.back.Sub(killedAt))
		}
		if len(b.evs) > 0 {
			if f := b.evs[len(b.evs)-1].RestoredFrame; f > 0 {
				lost = append(lost, float64(max(seen[b]-f, 0))/worldsHz)
			}
		}
		if !b.back.IsZero() {
			resumes = append(resumes, b.back.Sub(killedAt))
		}
	})
	if len(lost) > 0 {
		slices.Sort(lost)
		res.progressLostP99 = lost[int(math.Min(float64(len(lost)-1), math.Ceil(0.99*float64(len(lost)))-1))]
	}
	res.resumeP99 = p99(resumes)
	return res, nil
}

// p99 is the 99th percentile of ds; 0 for none.
func p99(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(math.Min(float64(len(ds)-1), math.Ceil(0.99*float64(len(ds)))-1))]
}

func aliveNodes(d *cluster.Directory) (n int) {
	for _, st := range d.Nodes() {
		if st.Alive {
			n++
		}
	}
	return n
}

// metricsOf reads a node's /metrics: each sample by its name and labels.
func metricsOf(base string) map[string]float64 {
	m := map[string]float64{}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return m
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			m[line[:i]] = v
		}
	}
	return m
}

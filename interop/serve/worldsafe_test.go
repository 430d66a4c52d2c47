//go:build !js

package serve_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
)

// safeWorldsConfig is worldsConfig with checkpoints every half second,
// three replicas of each in the NATS cluster's bucket, and a map of two
// cells that every node hosts, serving the cells serve lists at first.
func safeWorldsConfig(serve string) string {
	return `{
  "worlds": [{"name": "field", "width": 8, "height": 8, "region_size": 1024, "cap": 1000,
              "portals": [{"x": 5000, "y": 3900, "w": 300, "h": 400, "map": "town", "at": [300, 400]}]}],
  "maps": [{"map": "town", "lines": 1, "cap": 2, "width": 4, "height": 4, "region_size": 1024}],
  "cells": [{"map": "wild", "cols": 2, "rows": 1, "width": 8, "height": 4, "region_size": 1024, "serve": [` + serve + `]}],
  "cluster": {"checkpoint_every": "500ms", "checkpoint_replicas": 3}
}`
}

// roamer is a player wandering in its world, played by a crowd.
type roamer struct {
	name   string
	c      *engine.Client
	self   interest.ID
	world  string
	events []engine.ConnectionEvent
	moves  []engine.Move
	err    error
	// frame is the last world frame the client saw, at last; gap the
	// longest it went without a new frame since the crowd's reset.
	frame     int
	last, end time.Time
	gap       time.Duration
	dest      interest.Vec
	wander    [4]int32 // x0, y0, x1, y1 of where it walks
	nextMove  time.Time
	sawFrames bool
}

// crowd plays its roamers on one goroutine until stopped.
type crowd struct {
	mu      sync.Mutex
	roamers []*roamer
	rng     *rand.Rand
	stop    chan struct{}
	done    chan struct{}
}

func (cr *crowd) run() {
	defer close(cr.done)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-cr.stop:
			return
		case <-tick.C:
		}
		now := time.Now()
		cr.mu.Lock()
		for _, r := range cr.roamers {
			r.play(now, cr.rng)
		}
		cr.mu.Unlock()
	}
}

func (r *roamer) play(now time.Time, rng *rand.Rand) {
	if r.err != nil {
		return
	}
	if err := r.c.Update(now); err != nil {
		r.err = err
		return
	}
	is := r.c.Interest()
	if f := is.Frame(); f != r.frame {
		if !r.last.IsZero() && now.Sub(r.last) > r.gap {
			r.gap, r.end = now.Sub(r.last), now
		}
		r.frame, r.last, r.sawFrames = f, now, true
	}
	if now.After(r.nextMove) {
		if _, ok := is.Self(); ok {
			w := r.wander
			r.dest = interest.Vec{X: w[0] + rng.Int32N(w[2]-w[0]), Y: w[1] + rng.Int32N(w[3]-w[1])}
			is.Move(r.dest, 80)
			r.nextMove = now.Add(time.Second)
		}
	}
	is.Advance(now)
}

// look runs f with the crowd stopped between two rounds.
func (cr *crowd) look(f func([]*roamer)) {
	cr.mu.Lock()
	defer cr.mu.Unlock()
	f(cr.roamers)
}

// playOn lets the crowd play for d, then checks that every roamer is
// still connected to its world with its entity, and returns the longest
// gap in world frames any saw.
func (cr *crowd) playOn(t *testing.T, what string, d time.Duration) time.Duration {
	t.Helper()
	time.Sleep(d)
	var gap time.Duration
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			switch {
			case r.err != nil:
				t.Fatalf("%s: %s: %v", what, r.name, r.err)
			case r.c.Target() != r.world || r.c.Entity() != r.self:
				t.Fatalf("%s: %s is in %q as entity %d, was in %q as %d", what, r.name, r.c.Target(), r.c.Entity(), r.world, r.self)
			case time.Since(r.last) > time.Second:
				t.Fatalf("%s: %s has seen no frame of %s for %v (at frame %d)", what, r.name, r.world, time.Since(r.last), r.frame)
			}
			gap = max(gap, r.gap, time.Since(r.last))
		}
	})
	return gap
}

// reset starts the roamers' gap measures and event records again.
func (cr *crowd) reset() {
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			r.gap, r.events, r.moves = 0, nil, nil
		}
	})
}

// known returns what each roamer's client knows of its world.
func (cr *crowd) known() map[string][]interest.ID {
	k := map[string][]interest.ID{}
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			k[r.name] = slices.Sorted(slices.Values(r.c.Interest().Known(nil)))
		}
	})
	return k
}

// TestWorldsOutliveProcesses runs a unique world (the field), a map's
// line (town~1) and the two cells of a map (wild#0, wild#1, first on
// processes a and b) on three `tongbu serve` processes over a NATS
// cluster of three, with players wandering in each: (a) the field's
// process is drained (SIGTERM) and its worlds move whole to their heirs
// while they play; (b) the town's process is killed (SIGKILL) and its
// worlds come back from their checkpoints on their heirs, their players
// resuming there; (c) a NATS server dies and nothing moves, then the
// field's process is killed and its worlds come back from checkpoints
// the two NATS servers left still hold; (d) every process is restarted
// in turn, with the config it started with.
func TestWorldsOutliveProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three processes, then more")
	}
	ns := natstest.Cluster(t, 3)
	urls := natstest.URLs(ns)
	dirs := t.TempDir()
	cfgs := map[string]string{}
	for id, serve := range map[string]string{"a": "0", "b": "1", "c": ""} {
		cfgs[id] = filepath.Join(dirs, id+".json")
		if err := os.WriteFile(cfgs[id], []byte(safeWorldsConfig(serve)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	procs := map[string]*serveProc{}
	byURL := map[string]string{}
	var pmu sync.Mutex
	start := func(id string) {
		p := startServeWith(t, worldsSecret, id, "-config", cfgs[id], "-nats", urls, "-node", id,
			"-players", "5000", "-heartbeat", "100ms", "-drain-timeout", "10s")
		pmu.Lock()
		procs[id], byURL[p.url] = p, id
		pmu.Unlock()
	}
	for _, id := range []string{"a", "b", "c"} {
		start(id)
	}
	lobby, err := nats.Connect(urls, nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(lobby.Close)
	opts := &cluster.Options{Heartbeat: 100 * time.Millisecond, Secret: []byte(worldsSecret)}
	dir, err := cluster.Watch(lobby, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	where := func(world string) string { // the node a world is on
		st, ok := dir.LocateWorld(world)
		if !ok {
			return ""
		}
		pmu.Lock()
		defer pmu.Unlock()
		return byURL[st.URL]
	}
	worlds := []string{"field", "town~1", "wild#0", "wild#1"}
	waitUntil(t, "the field, the town's first line and the cells", func() bool {
		for _, w := range worlds {
			if where(w) == "" {
				return false
			}
		}
		return true
	})
	// Which worlds are on node id now.
	on := func(id string) map[string]bool {
		m := map[string]bool{}
		for _, w := range worlds {
			m[w] = where(w) == id
		}
		return m
	}

	// Two players walk to the town through the portal, two stay in the
	// field.
	cr := &crowd{rng: rand.New(rand.NewPCG(59, 5)), stop: make(chan struct{}), done: make(chan struct{})}
	for _, name := range []string{"ann", "bob", "cy", "dan"} {
		r := newRoamer(t, lobby, dir, name, "field")
		if name == "ann" || name == "bob" {
			r.wander = [4]int32{5100, 4000, 5200, 4100} // the portal
			for end := time.Now().Add(20 * time.Second); r.c.Target() == "field"; time.Sleep(10 * time.Millisecond) {
				if r.play(time.Now(), cr.rng); r.err != nil || time.Now().After(end) {
					t.Fatalf("%s never went through the portal (%v)", name, r.err)
				}
			}
			if r.c.Target() != "town~1" {
				t.Fatalf("%s went to %s", name, r.c.Target())
			}
			r.world, r.self, r.wander = "town~1", r.c.Entity(), [4]int32{200, 200, 1000, 1000}
			r.nextMove, r.moves = time.Time{}, nil
		}
		cr.roamers = append(cr.roamers, r)
	}
	// Eve and fay wander in the west and the east cell.
	eve, fay := newRoamer(t, lobby, dir, "eve", "wild#0"), newRoamer(t, lobby, dir, "fay", "wild#1")
	eve.wander, fay.wander = [4]int32{1500, 1500, 2600, 2600}, [4]int32{5600, 1500, 6700, 2600}
	cr.roamers = append(cr.roamers, eve, fay)
	go cr.run()
	defer func() { close(cr.stop); <-cr.done }()
	heirs := func(what string) {
		t.Helper()
		waitUntil(t, what+": every player's world to have an heir", func() bool {
			ok := true
			cr.look(func(rs []*roamer) {
				for _, r := range rs {
					// A world that moved names its next heir soon after.
					st, placed := dir.LocateWorld(r.world)
					ok = ok && placed && r.c.Standby() != "" && r.c.Standby() != st.URL
				}
			})
			return ok
		})
		time.Sleep(time.Second) // two checkpoints at the heir's
	}
	heirs("at start")
	cr.playOn(t, "at start", time.Second)
	together := cr.known()
	for i := 0; i < 4; i += 2 { // ann and bob, cy and dan
		a, b := cr.roamers[i], cr.roamers[i+1]
		if !slices.Contains(together[a.name], b.self) {
			t.Fatalf("%s knows %v: it should see %s (%d)", a.name, together[a.name], b.name, b.self)
		}
	}
	stopped := func(id string, want error) {
		t.Helper()
		select {
		case err := <-procs[id].exited:
			procs[id].exited <- nil // for the cleanup
			if want == nil && err != nil {
				t.Fatalf("%s exited with %v", id, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s still running 15 s after it was told to stop", id)
		}
	}
	restart := func(id string) {
		t.Helper()
		start(id)
		waitUntil(t, id+" back", func() bool { return len(alive(dir)) == 3 })
		heirs(id + " back")
	}

	// (a) The field's process is drained: the field moves whole, its
	// players keep their entities and what they see.
	drained := where("field")
	movers := on(drained)
	cr.reset()
	procs[drained].cmd.Process.Signal(syscall.SIGTERM)
	stopped(drained, nil)
	gap := cr.playOn(t, "after the field's node was drained", time.Second)
	t.Logf("(a) drained %s: the field is on %s, longest gap %v", drained, where("field"), gap.Round(time.Millisecond))
	if n := where("field"); n == "" || n == drained {
		t.Fatalf("the field is on %q after %s's drain", n, drained)
	}
	if gap > 700*time.Millisecond {
		t.Errorf("a player of the field went %v without a frame through the move", gap)
	}
	after := cr.known()
	for name, ids := range together {
		for _, id := range ids {
			if !slices.Contains(after[name], id) {
				t.Errorf("%s knew entity %d before the move and not after (%v)", name, id, after[name])
			}
		}
	}
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			if len(r.events) > 0 {
				t.Errorf("%s went through %+v in a move", r.name, r.events)
			}
			switch {
			case movers[r.world] && (len(r.moves) != 1 || r.moves[0].From != r.world || r.moves[0].To != r.world):
				t.Errorf("%s: moves %+v; want one, of %s to its new node", r.name, r.moves, r.world)
			case !movers[r.world] && len(r.moves) != 0:
				t.Errorf("%s: moves %+v; its world stayed", r.name, r.moves)
			}
		}
	})
	restart(drained)

	// (b) The town's process is killed: the line comes back from its
	// checkpoint on its heir, and its players resume there.
	crashed := where("town~1")
	lost := on(crashed)
	seen := map[string]int{}
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			seen[r.name] = r.frame
		}
	})
	cr.reset()
	procs[crashed].cmd.Process.Signal(syscall.SIGKILL)
	stopped(crashed, errKilled)
	waitUntil(t, "the town's players to resume", func() bool {
		back := true
		cr.look(func(rs []*roamer) {
			for _, r := range rs {
				if lost[r.world] {
					back = back && len(r.events) > 0 && r.events[len(r.events)-1].State == engine.Resumed && time.Since(r.last) < 200*time.Millisecond
				}
			}
		})
		return back
	})
	gap = cr.playOn(t, "after the town's node was killed", time.Second)
	t.Logf("(b) killed %s: town~1 is on %s, longest gap %v", crashed, where("town~1"), gap.Round(time.Millisecond))
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			if !lost[r.world] {
				continue
			}
			ev := r.events[len(r.events)-1]
			// Half a second of checkpoints, and the last frames before the
			// lease ran out: at most a second and a half of the town's 16 Hz.
			if ev.RestoredFrame <= 0 || ev.RestoredFrame < seen[r.name]-24 {
				t.Errorf("%s: the town went back to frame %d; it had seen %d", r.name, ev.RestoredFrame, seen[r.name])
			}
			if r.gap > 3*time.Second {
				t.Errorf("%s went %v without the town", r.name, r.gap)
			}
		}
	})
	if n := where("town~1"); n == "" || n == crashed {
		t.Fatalf("town~1 is on %q after %s's crash", n, crashed)
	}
	restart(crashed)

	// (c) A NATS server dies: the nodes on it reconnect to the others,
	// and no world moves.
	before := map[string]string{}
	for _, w := range worlds {
		before[w] = where(w)
	}
	cr.reset()
	ns[0].Shutdown()
	gap = cr.playOn(t, "after a NATS server died", 3*time.Second)
	t.Logf("(c) a NATS server died: longest gap %v", gap.Round(time.Millisecond))
	for w, n := range before {
		if where(w) != n {
			t.Errorf("%s moved from %s to %s when a NATS server died", w, n, where(w))
		}
	}
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			if len(r.events) > 0 {
				t.Errorf("%s went through %+v when a NATS server died", r.name, r.events)
			}
		}
	})
	if len(alive(dir)) != 3 {
		t.Fatalf("nodes alive after a NATS server died: %v", alive(dir))
	}
	// The field's checkpoints live on in the two NATS servers left.
	heirs("two NATS servers")
	crashed = where("field")
	lost = on(crashed)
	cr.reset()
	procs[crashed].cmd.Process.Signal(syscall.SIGKILL)
	stopped(crashed, errKilled)
	waitUntil(t, "the field's players to resume", func() bool {
		back := true
		cr.look(func(rs []*roamer) {
			for _, r := range rs {
				if lost[r.world] {
					back = back && len(r.events) > 0 && r.events[len(r.events)-1].RestoredFrame > 0 && time.Since(r.last) < 200*time.Millisecond
				}
			}
		})
		return back
	})
	t.Logf("(c) killed %s on two NATS servers: the field is on %s", crashed, where("field"))
	restart(crashed)

	// (d) A rolling restart: each process drained and started again in
	// turn while the players play.
	for _, id := range []string{"a", "b", "c"} {
		cr.reset()
		procs[id].cmd.Process.Signal(syscall.SIGTERM)
		stopped(id, nil)
		gap := cr.playOn(t, "rolling restart: "+id+" drained", 500*time.Millisecond)
		t.Logf("(d) rolling restart: %s drained, longest gap %v", id, gap.Round(time.Millisecond))
		if gap > 700*time.Millisecond {
			t.Errorf("a player went %v without a frame when %s was drained", gap, id)
		}
		restart(id)
	}
	cr.playOn(t, "after the rolling restart", time.Second)
	// The served game's own state (who is in the world, for its portal)
	// came along through every move: cy walks through the portal still.
	cr.look(func(rs []*roamer) {
		for _, r := range rs {
			if r.name == "cy" {
				r.wander = [4]int32{5100, 4000, 5200, 4100}
				r.nextMove = time.Time{}
			}
		}
	})
	waitUntil(t, "cy to go through the portal", func() bool {
		moved := false
		cr.look(func(rs []*roamer) {
			for _, r := range rs {
				if r.name == "cy" {
					moved = r.c.Target() != "field"
					if moved {
						r.world, r.self, r.wander = r.c.Target(), r.c.Entity(), [4]int32{200, 200, 1000, 1000}
					}
				}
			}
		})
		return moved
	})
	cr.playOn(t, "cy in the town", time.Second)
}

// newRoamer joins player to the field and dials it over real WebRTC.
func newRoamer(t *testing.T, lobby *nats.Conn, dir *cluster.Directory, player, world string) *roamer {
	t.Helper()
	p, err := cluster.JoinWorld(t.Context(), lobby, dir, cluster.JoinRequest{World: world, Player: player}, &cluster.Options{Secret: []byte(worldsSecret)})
	if err != nil {
		t.Fatal(err)
	}
	r := &roamer{name: player, world: world, wander: [4]int32{3000, 3000, 4500, 4500}}
	// Both run inside Update: under the crowd's lock once it plays.
	cfg := &engine.ClientConfig{
		IncludeLoopback: true,
		OnMove:          func(m engine.Move) { r.moves = append(r.moves, m) },
		OnConnection:    func(ev engine.ConnectionEvent) { r.events = append(r.events, ev) },
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if r.c, err = engine.Dial(ctx, p.URL, p.Tickets[player], cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.c.Close() })
	r.self = r.c.Entity()
	return r
}

// errKilled stands for a process's exit by a signal, which the test
// expects.
var errKilled = fmt.Errorf("killed")

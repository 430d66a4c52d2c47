//go:build !js

// Package cells is the benchmark scenario of worlds across processes:
// players handed between worlds held by different nodes of a cluster
// (engine.World.Transfer to a cluster.Node's Destination), over real
// WebRTC on loopback, with one node killed in the middle. Its figures are
// the time a transfer takes, as the client sees it, beside the time a
// fresh join takes (the lobby books a place and the client connects
// anew: what a game without transfers does), and the count of players a
// transfer lost or doubled, which must be 0.
package cells

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

func init() {
	harness.Register("cells",
		"worlds across processes: players handed between worlds on 3 cluster nodes over real WebRTC, one node killed in the middle; transfer time beside a fresh join, players lost or doubled",
		benchCells)
}

type cellsParams struct {
	nodes, players, transfers, inflight int
	kill                                bool
	seed                                uint64
	seamless                            seamlessParams
	handoff                             handoffParams
}

func benchCells(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("cells", flag.ContinueOnError)
	var p cellsParams
	fs.IntVar(&p.nodes, "nodes", 3, "cluster nodes, each holding one world")
	fs.IntVar(&p.players, "players", 60, "players, spread over the worlds")
	fs.IntVar(&p.transfers, "transfers", 1000, "transfers to make")
	fs.IntVar(&p.inflight, "inflight", 8, "transfers under way at once")
	fs.BoolVar(&p.kill, "kill", true, "kill the last node when half the transfers are made")
	fs.Uint64Var(&p.seed, "seed", 1, "seed of the players' destinations and walks")
	fs.IntVar(&p.seamless.players, "walkers", 200, "seamless part: players walking and running over the map")
	fs.IntVar(&p.seamless.npcs, "npcs", 4000, "seamless part: wandering NPCs")
	fs.IntVar(&p.seamless.seconds, "seconds", 90, "seamless part: simulated seconds (the last 20 standing still)")
	fs.IntVar(&p.handoff.players, "crossers", 16, "crossing part: players walking back and forth over a cell border")
	fs.IntVar(&p.handoff.seconds, "cross-seconds", 40, "crossing part: seconds of each run (standby, then the handshake baseline)")
	fs.DurationVar(&p.handoff.rtt, "rtt", 50*time.Millisecond, "crossing part: round trip emulated on the UDP paths and on signaling")
	scale := fs.Bool("scale", true, "find the most players the seed world holds uncut and in 2 cells, each cell's tick p99 within 15 ms")
	repeat := fs.Int("scale-repeat", 3, "scale search: runs of each population, each frame's least tick kept")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if p.nodes < 2 || (p.kill && p.nodes < 3) || p.players < 1 || p.transfers < 1 || p.inflight < 1 || p.inflight > p.players {
		return errors.New("want -nodes >= 2 (3 with -kill), -players >= 1, -transfers >= 1, 1 <= -inflight <= -players")
	}
	p.seamless.seed, p.handoff.seed = p.seed, p.seed
	if p.handoff.players < 1 || p.handoff.seconds < 5 || p.handoff.rtt < 0 {
		return errors.New("want -crossers >= 1, -cross-seconds >= 5, -rtt >= 0")
	}
	if p.seamless.players < 1 || p.seamless.npcs < 0 || p.seamless.seconds < 30 {
		return errors.New("want -walkers >= 1, -npcs >= 0, -seconds >= 30")
	}
	fmt.Fprintf(out, "cells, seamless: a 32x32-region map, %d players walking and running, %d NPCs, %d simulated seconds, cut into 1 (the baseline), 2 and 4 cells\n",
		p.seamless.players, p.seamless.npcs, p.seamless.seconds)
	var cuts []seamlessFigures
	for _, cut := range [][2]int{{1, 1}, {2, 1}, {2, 2}} {
		f, err := runSeamless(p.seamless, cut[0], cut[1])
		if err != nil {
			return err
		}
		cuts = append(cuts, f)
	}
	fmt.Fprintf(out, "%-6s %10s %8s %6s %9s %10s %10s %12s %14s %10s\n", "cells", "known err", "max diff", "leaks", "leaks now", "crossings", "gap frames", "client B/s", "border B/s/reg", "tick p99")
	for _, f := range cuts {
		perRegion := 0.0
		if f.borderRegions > 0 {
			perRegion = f.borderBps / float64(f.borderRegions)
		}
		fmt.Fprintf(out, "%-6d %10d %8v %6d %9d %10d %10d %12.0f %14.0f %10v\n", f.cells, f.knownErrors, f.maxDiff, f.leaks, f.leaksNow, f.crossings, f.crossGapMax, f.clientBps, perRegion, f.tickP99.Round(time.Microsecond))
	}
	fmt.Fprintln(out, "  leaks: entities a client was told of outside its range, as its cell knows the map: its own cell's entities where they are, a neighbour's where its owner had it a frame before (a ghost runs a frame behind its owner); leaks now: the same, every entity where it is now")
	two, four := cuts[1], cuts[2]
	fmt.Fprintf(out, "cells, crossing: a map in 2 cells on 2 nodes, %d players walking back and forth over the border for %d s, over WebRTC with %v RTT (udpimpair; signaling too), from the frame a position leaves its cell to the new cell's first packet\n",
		p.handoff.players, p.handoff.seconds, p.handoff.rtt)
	runtime.GC() // the latency parts start on a clean heap, not the scale search's
	standby, err := runHandoff(p.handoff, false)
	if err != nil {
		return err
	}
	handshake, err := runHandoff(p.handoff, true)
	if err != nil {
		return err
	}
	frame := ms(time.Second / 16)
	fmt.Fprintf(out, "%-40s %9s %9s %9s %9s %9s %9s\n", "", "crossings", "p50 ms", "p90 ms", "p99 ms", "max ms", "stuck")
	for _, x := range []struct {
		name string
		f    handoffFigures
	}{{"standby connection (the engine's default)", standby}, {"baseline: handshake at the crossing", handshake}} {
		fmt.Fprintf(out, "%-40s %9d %9.1f %9.1f %9.1f %9.1f %9d\n", x.name, x.f.switched, x.f.handoff.q(0.5), x.f.handoff.q(0.9), x.f.handoff.q(0.99), x.f.handoff.q(1), x.f.stuck)
		for _, n := range x.f.notes {
			fmt.Fprintln(out, "  stuck:", n)
		}
	}

	fmt.Fprintf(out, "cells: %d nodes on one NATS server, a world on each, %d players over WebRTC on loopback, %d transfers, %d at once, kill=%v\n",
		p.nodes, p.players, p.transfers, p.inflight, p.kill)
	r, err := newCellsRun(p)
	if err != nil {
		return err
	}
	defer r.close()
	f, err := r.run(out)
	if err != nil {
		return err
	}
	for _, n := range r.notes {
		fmt.Fprintln(out, n)
	}
	fmt.Fprintf(out, "%-34s %10s %10s\n", "", "p50 ms", "p99 ms")
	fmt.Fprintf(out, "%-34s %10.1f %10.1f\n", "transfer to the first frame there", f.transfer.q(0.5), f.transfer.q(0.99))
	fmt.Fprintf(out, "%-34s %10.1f %10.1f\n", "baseline: fresh join (lobby + dial)", f.join.q(0.5), f.join.q(0.99))
	fmt.Fprintf(out, "transfers %d: moved %d, stayed %d (refused, or their destination died); players lost %d, doubled %d, lost with the killed node %d\n",
		f.made, f.moved, f.stayed, f.lost, f.doubled, f.withNode)
	r.close() // before the scale search: nothing of it runs beside the ticks
	var scaleBest []int
	var scaleAt []map[int]scalePoint
	if *scale {
		fmt.Fprintf(out, "cells, scale: the seed world's 64x64 map (and one twice as wide), 4.5 NPCs a player, every player walking or running, 15 simulated seconds each (the first 3 not timed), the GC held off in each run; the worst cell's tick p99 and p50, each frame's tick the least of %d runs of the same work (the maps' runs alternating; run last, so that its heap does not weigh on the latency parts), against 15 ms\n", *repeat)
		var err error
		scaleBest, scaleAt, err = scaleSearch(p.seed, 15*time.Millisecond, []int{3200, 6400, 9600, 12800, 14400, 16000, 17600, 19200, 22400, 25600, 28800, 32000, 38400, 44800, 51200, 57600, 64000, 76800}, *repeat, func(v scaleVariant, players int, at scalePoint) {
			fmt.Fprintf(out, "  %-28s %6d players, %6d NPCs: tick p99 %8v, p50 %8v\n", v.name, players, players*9/2, at.p99.Round(10*time.Microsecond), at.p50.Round(10*time.Microsecond))
		})
		if err != nil {
			return err
		}
		one := scaleBest[0]
		fmt.Fprintf(out, "  most players within 15 ms: %d uncut, %d in 2 cells of the same map (%.2fx), %d in 2 cells of a map twice as wide (%.2fx); at %d players a cell of the cut map ticks %.2fx faster than the uncut map at p50 (%.2fx at p99)\n",
			one, scaleBest[1], ratio(scaleBest[1], one), scaleBest[2], ratio(scaleBest[2], one), one, durRatio(scaleAt[0][one].p50, scaleAt[1][one].p50), durRatio(scaleAt[0][one].p99, scaleAt[1][one].p99))
	}

	kv := []any{
		"known_set_errors", two.knownErrors + four.knownErrors, "leaks", two.leaks + four.leaks, "leaks_now", two.leaksNow + four.leaksNow,
		"crossings_2", two.crossings, "crossings_4", four.crossings,
		"crossing_gap_frames_max", max(two.crossGapMax, four.crossGapMax),
		"client_bps_ratio", two.clientBps / cuts[0].clientBps, "client_bps_ratio_4", four.clientBps / cuts[0].clientBps,
		"nats_bytes_per_border_region_per_s", two.borderBps / float64(two.borderRegions),
		"handoff_p50_ms", standby.handoff.q(0.5), "handoff_p99_ms", standby.handoff.q(0.99), "handoffs", standby.switched, "handoff_stuck", standby.stuck,
		"baseline_handoff_p50_ms", handshake.handoff.q(0.5), "baseline_handoff_p99_ms", handshake.handoff.q(0.99), "baseline_handoff_stuck", handshake.stuck,
		"frame_ms", frame, "rtt_ms", ms(p.handoff.rtt), "handoff_floor_ms", frame/2 + ms(p.handoff.rtt)/2,
		"tick_p99_ms_1", ms(cuts[0].tickP99), "tick_p99_ms_2", ms(two.tickP99), "tick_p99_ms_4", ms(four.tickP99),
		"baseline_known_set_errors", cuts[0].knownErrors, "baseline_leaks", cuts[0].leaks,
		"transfers", f.made, "moved", f.moved, "stayed", f.stayed,
		"transfer_p50_ms", f.transfer.q(0.5), "transfer_p99_ms", f.transfer.q(0.99),
		"baseline_join_p50_ms", f.join.q(0.5), "baseline_join_p99_ms", f.join.q(0.99),
		"lost", f.lost, "duplicated", f.doubled, "lost_with_node", f.withNode}
	if *scale { // the search's keys only when it ran
		one := scaleBest[0]
		kv = append(kv, "scale_players_2cells", scaleBest[1], "baseline_scale_players", one, "scale_ratio", ratio(scaleBest[1], one),
			"scale_players_2cells_wide", scaleBest[2], "scale_ratio_wide", ratio(scaleBest[2], one),
			"cell_tick_p50_speedup", durRatio(scaleAt[0][one].p50, scaleAt[1][one].p50), "cell_tick_p99_speedup", durRatio(scaleAt[0][one].p99, scaleAt[1][one].p99))
	}
	fmt.Fprintln(out, harness.Result("cells", kv...))
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// ratio is a/b, 0 when b is.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// durRatio is a/b, 0 when b is.
func durRatio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// millis collects durations.
type millis []float64

func (m millis) q(q float64) float64 {
	if len(m) == 0 {
		return 0
	}
	s := slices.Clone(m)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

type cellsFigures struct {
	transfer, join                               millis
	made, moved, stayed, lost, doubled, withNode int
}

// cellsNode is one node: an engine server with a world, in the cluster.
type cellsNode struct {
	id    string
	url   string
	srv   *engine.Server
	stop  func()
	nc    *nats.Conn
	node  *cluster.Node
	world *engine.World
	dead  bool
}

// cellsPlayer is a player's client and where it stands.
type cellsPlayer struct {
	id     string
	c      *engine.Client
	gone   error     // its client's close reason
	moving bool      // a transfer is under way
	since  time.Time // when the transfer started
	landed bool      // the client has moved and awaits its first frame
}

type cellsRun struct {
	p      cellsParams
	closed bool
	ns     *server.Server
	lobby  *nats.Conn
	dir    *cluster.Directory
	nodes  []*cellsNode
	opts   *cluster.Options

	mu      sync.Mutex
	players []*cellsPlayer
	fig     cellsFigures
	notes   []string // the players lost or doubled
}

func newCellsRun(p cellsParams) (*cellsRun, error) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("cells: NATS server not ready")
	}
	r := &cellsRun{p: p, ns: ns, opts: &cluster.Options{Heartbeat: 50 * time.Millisecond, Misses: 10, Secret: []byte("the cells bench's cluster secret")}}
	if r.lobby, err = nats.Connect(ns.ClientURL()); err != nil {
		r.close()
		return nil, err
	}
	if r.dir, err = cluster.Watch(r.lobby, r.opts); err != nil {
		r.close()
		return nil, err
	}
	secret := []byte("the cells bench's cluster secret")
	for i := range p.nodes {
		n := &cellsNode{id: fmt.Sprint("n", i)}
		r.nodes = append(r.nodes, n)
		if n.srv, err = engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true}); err != nil {
			r.close()
			return nil, err
		}
		if n.url, n.stop, err = harness.ServeEngine(n.srv); err != nil {
			r.close()
			return nil, err
		}
		if n.nc, err = nats.Connect(ns.ClientURL()); err != nil {
			r.close()
			return nil, err
		}
		noRooms := func(cluster.RoomRequest) (map[string]string, error) { return nil, errors.New("worlds only") }
		if n.node, err = cluster.Join(n.nc, cluster.NodeInfo{ID: n.id, URL: n.url, Capacity: 1, Players: p.players}, noRooms, r.opts); err != nil {
			r.close()
			return nil, err
		}
		maker := func(cluster.WorldRequest) (engine.WorldConfig, error) {
			return engine.WorldConfig{Interest: interest.Config{Width: 16, Height: 16}}, nil
		}
		if err := n.node.ServeWorlds(n.srv, maker); err != nil {
			r.close()
			return nil, err
		}
	}
	// Each node has room for one world of every player: one world each.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range p.nodes {
		pl, err := cluster.CreateWorld(ctx, r.lobby, cluster.WorldRequest{World: fmt.Sprint("w", i), Cap: p.players}, r.opts)
		if err != nil {
			r.close()
			return nil, err
		}
		for _, n := range r.nodes {
			if n.id == pl.Node {
				n.world, _ = n.srv.World(pl.Room)
			}
		}
	}
	for deadline := time.Now().Add(10 * time.Second); len(r.dir.Worlds()) < p.nodes; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			r.close()
			return nil, errors.New("cells: the directory never listed the worlds")
		}
	}
	return r, nil
}

func (r *cellsRun) close() {
	if r.closed {
		return
	}
	r.closed = true
	for _, pl := range r.players {
		pl.c.Close()
	}
	for _, n := range r.nodes {
		if !n.dead {
			n.dead = true
			r.kill(n)
		}
	}
	if r.dir != nil {
		r.dir.Close()
	}
	if r.lobby != nil {
		r.lobby.Close()
	}
	r.ns.Shutdown()
}

// kill ends a node as abruptly as a process can end in-process: its NATS
// connection drops first, with no goodbye to the cluster, then its server
// stops at once.
func (r *cellsRun) kill(n *cellsNode) {
	if n.nc != nil {
		n.nc.Close()
	}
	if n.srv != nil {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		n.srv.Shutdown(ctx)
	}
	if n.stop != nil {
		n.stop()
	}
}

// nodeOf returns the node that holds world.
func (r *cellsRun) nodeOf(world string) *cellsNode {
	for _, n := range r.nodes {
		if n.world != nil && n.world.Name() == world {
			return n
		}
	}
	return nil
}

func (r *cellsRun) run(out io.Writer) (cellsFigures, error) {
	p := r.p
	// Join the players, each a fresh join: the baseline.
	for i := range p.players {
		pl := &cellsPlayer{id: fmt.Sprint("p", i)}
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		pc, err := cluster.JoinWorld(ctx, r.lobby, r.dir, cluster.JoinRequest{World: fmt.Sprint("w", i%p.nodes), Player: pl.id}, r.opts)
		if err == nil {
			pl.c, err = engine.Dial(ctx, pc.URL, pc.Tickets[pl.id], &engine.ClientConfig{IncludeLoopback: true, SharedSocket: true,
				OnMove: func(engine.Move) { pl.landed = true }})
		}
		for err == nil && ctx.Err() == nil {
			if err = pl.c.Update(time.Now()); err == nil {
				if _, ok := pl.c.Interest().Self(); ok {
					break
				}
			}
			time.Sleep(2 * time.Millisecond)
		}
		if err == nil {
			err = ctx.Err()
		}
		cancel()
		if err != nil {
			return r.fig, fmt.Errorf("cells: player %d: %v", i, err)
		}
		r.fig.join = append(r.fig.join, float64(time.Since(start).Microseconds())/1000)
		r.players = append(r.players, pl)
	}
	// The clients' loop.
	stopLoop := make(chan struct{})
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopLoop:
				return
			case <-t.C:
			}
			r.mu.Lock()
			now := time.Now()
			for _, pl := range r.players {
				if pl.gone != nil {
					continue
				}
				if err := pl.c.Update(now); err != nil {
					pl.gone = err
					continue
				}
				if pl.landed {
					if _, ok := pl.c.Interest().Self(); ok {
						pl.landed = false
						r.fig.transfer = append(r.fig.transfer, float64(now.Sub(pl.since).Microseconds())/1000)
						pl.moving = false // its transfer's done may come later: it is set free by whichever is last
					}
				}
			}
			r.mu.Unlock()
		}
	}()
	defer func() { close(stopLoop); <-loopDone }()

	rng := rand.New(rand.NewPCG(p.seed, 1))
	sem := make(chan struct{}, p.inflight)
	var wg sync.WaitGroup
	killed := false
	for made := 0; made < p.transfers; {
		if p.kill && !killed && made >= p.transfers/2 {
			r.mu.Lock()
			victim := r.nodes[len(r.nodes)-1]
			r.mu.Unlock()
			fmt.Fprintf(out, "killing node %s (world %s) after %d transfers, %d under way\n", victim.id, victim.world.Name(), made, len(sem))
			r.mu.Lock()
			victim.dead = true
			r.mu.Unlock()
			r.kill(victim) // not under r.mu: its worlds' last callbacks take it
			killed = true
		}
		sem <- struct{}{}
		r.mu.Lock()
		// A player standing in a live world, not on its way.
		var pl *cellsPlayer
		for range 4 * len(r.players) {
			c := r.players[rng.IntN(len(r.players))]
			if n := r.nodeOf(c.c.Target()); c.gone == nil && !c.moving && n != nil && !n.dead {
				pl = c
				break
			}
		}
		if pl == nil {
			r.mu.Unlock()
			<-sem
			time.Sleep(5 * time.Millisecond)
			continue
		}
		src := r.nodeOf(pl.c.Target())
		var live []*cellsNode
		for _, n := range r.nodes {
			if n != src && !n.dead {
				live = append(live, n)
			}
		}
		dst := live[rng.IntN(len(live))]
		pl.moving, pl.since = true, time.Now()
		made++
		r.fig.made++
		r.mu.Unlock()
		wg.Add(1)
		err := src.world.Transfer(pl.id, src.node.Destination(cluster.JoinRequest{World: dst.world.Name()}), nil, func(err error) {
			defer wg.Done()
			defer func() { <-sem }()
			r.mu.Lock()
			defer r.mu.Unlock()
			if err != nil {
				r.fig.stayed++
				pl.moving, pl.landed = false, false
				return
			}
			r.fig.moved++
		})
		if err != nil { // the source died meanwhile
			r.mu.Lock()
			pl.moving = false
			r.fig.stayed++
			r.mu.Unlock()
			wg.Done()
			<-sem
		}
	}
	// Let every transfer end: those of the killed node's players end with
	// its world (or never, if the world died first: bounded here).
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(time.Minute):
		fmt.Fprintln(out, "cells: transfers still under way after a minute (their source died)")
	}
	time.Sleep(time.Second) // the last clients land
	r.mu.Lock()
	defer r.mu.Unlock()
	r.account()
	return r.fig, nil
}

// account counts each player where its client is: in exactly one world
// of a live node, that world; or lost with the killed node.
func (r *cellsRun) account() {
	in := map[string][]string{}
	for _, n := range r.nodes {
		if n.dead || n.world == nil {
			continue
		}
		for _, p := range n.world.Players() {
			in[p] = append(in[p], n.world.Name())
		}
	}
	for _, pl := range r.players {
		where := in[pl.id]
		at := pl.c.Target()
		// A client whose move failed after its old world let it go (the
		// destination had it, then died before the client got there) was
		// told where its player went.
		var ce *engine.ClosedError
		if errors.Is(pl.gone, engine.ErrMoved) && errors.As(pl.gone, &ce) {
			at = ce.Detail
		}
		n := r.nodeOf(at)
		switch {
		case len(where) > 1:
			r.fig.doubled++
			r.notes = append(r.notes, fmt.Sprintf("doubled: %s, its client in %s, in worlds %v", pl.id, pl.c.Target(), where))
		case pl.gone != nil && n != nil && n.dead && len(where) == 0:
			r.fig.withNode++
		case len(where) == 0 || where[0] != at:
			r.fig.lost++
			if r.fig.lost <= 5 {
				r.notes = append(r.notes, fmt.Sprintf("lost: %s, its client in %s (closed: %v), in worlds %v", pl.id, pl.c.Target(), pl.gone, where))
			}
		}
	}
}

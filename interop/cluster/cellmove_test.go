//go:build !js

package cluster_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// wildMap is the two-cell map of the cell move tests: 8x4 regions, the
// west cell's four columns and the east's.
func wildMap(start time.Time, g *gameState) cluster.CellMap {
	return cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: start,
		Handover: func(w *interest.World, id interest.ID) []byte {
			g.mu.Lock()
			defer g.mu.Unlock()
			return strconv.AppendInt(nil, int64(g.gold[id]), 10)
		},
		Adopt: func(w *interest.World, id interest.ID, state []byte) {
			n, _ := strconv.Atoi(string(state))
			g.mu.Lock()
			g.gold[id] = n
			g.mu.Unlock()
		}}
}

// addCellNode starts node id, a host of map wild's cells (HostCells)
// that serves cell serve of it (-1: none). A player "w<k>" joins the
// west cell by its border, "e<k>" the east cell by its border; each
// player's gold is the game's state, carried across the border and by
// the checkpoints.
func (c *worldCluster) addCellNode(id string, opts *cluster.Options, start time.Time, serve int) (*worldNode, *gameState) {
	t := c.t
	t.Helper()
	nc, err := nats.Connect(c.nats)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	g := &gameState{gold: map[interest.ID]int{}}
	n := &worldNode{id: id, url: "http://" + id + ".test:8080", nc: nc, srv: srv}
	n.node, err = cluster.Join(nc, cluster.NodeInfo{ID: id, URL: n.url, Capacity: 10, Players: 100},
		func(cluster.RoomRequest) (map[string]string, error) { return nil, fmt.Errorf("no rooms here") }, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.node.ServeWorlds(srv, func(req cluster.WorldRequest) (engine.WorldConfig, error) {
		return engine.WorldConfig{}, fmt.Errorf("cells only")
	}); err != nil {
		t.Fatal(err)
	}
	if err := n.node.ServeStandbys(srv, func(string, json.RawMessage, engine.RoomState) (*engine.Room, error) {
		return nil, fmt.Errorf("no rooms")
	}); err != nil {
		t.Fatal(err)
	}
	m := wildMap(start, g)
	cell := func(i int) (engine.WorldConfig, error) {
		return engine.WorldConfig{
			MaxPlayers: 20,
			Join: func(w *interest.World, player string) (interest.ID, error) {
				k, _ := strconv.Atoi(player[1:])
				p := interest.Vec{X: 3700 + int32(k*60), Y: 1800}
				if strings.HasPrefix(player, "e") {
					p.X = 4400 + int32(k*60)
				}
				id, err := w.Spawn(interest.Player, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: player})
				g.mu.Lock()
				g.gold[id] = 100 + int(id)
				g.mu.Unlock()
				return id, err
			},
			Checkpoint: func(*interest.World) []byte { return g.encode() },
			Restore:    func(_ *interest.World, b []byte) error { return g.decode(b) },
		}, nil
	}
	if err := n.node.HostCells(m, cell); err != nil {
		t.Fatal(err)
	}
	if serve >= 0 {
		cfg, _ := cell(serve)
		if _, err := n.node.ServeCell(m, serve, cfg); err != nil {
			t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.nodes[n.url] = n
	c.mu.Unlock()
	t.Cleanup(func() { c.kill(n) })
	return n, g
}

// cellOn returns the node the directory of n places cell i of wild on.
func cellOn(n *worldNode, i int) string {
	w, _ := n.node.Directory().LocateWorld(cluster.CellName("wild", i))
	return w.Node
}

// TestCellMovesOnDrain: one map of two cells on three hosts of its cells
// (HostCells); the west cell's node is drained for a deploy: the west
// cell moves whole to its heir while its players, standing by the
// border, play on: each client connects to the heir ahead and switches at
// once, keeping its entity and everything it knew (the east cell's ghosts
// too); the east cell's player keeps seeing the west players across the
// border; the game's state goes along. The moved cell's border works both
// ways from its new node: a player walks east into the east cell, and an
// NPC walks west into the moved cell, each with its state. Then the node
// now holding the west cell dies: the cell comes back on another host
// from its checkpoint, and its players resume there by themselves.
func TestCellMovesOnDrain(t *testing.T) {
	opts := *fast
	opts.Logger = slog.New(slog.NewTextHandler(newTlog(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	c := safeCluster(t)
	start := time.Now()
	a, _ := c.addCellNode("a", &opts, start, 0)
	b, gb := c.addCellNode("b", &opts, start, 1)
	x, gx := c.addCellNode("c", &opts, start, -1)
	games := map[string]*gameState{"b": gb, "c": gx}
	nodes := map[string]*worldNode{"a": a, "b": b, "c": x}
	waitFor(t, "three nodes and two cells", func() bool {
		for _, n := range nodes {
			if len(alive(n.node.Directory())) != 3 || cellOn(n, 0) != "a" || cellOn(n, 1) != "b" {
				return false
			}
		}
		return true
	})
	westW, _ := a.srv.World(cluster.CellName("wild", 0))
	eastW, _ := b.srv.World(cluster.CellName("wild", 1))
	// A deer of the west cell by the border, a wolf of the east cell by it.
	deer := onWorker(westW, func(w *interest.World) interest.ID {
		id, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 3900, Y: 2300}, Life: 100}, interest.Display{Name: "deer"})
		return id
	})
	wolf := onWorker(eastW, func(w *interest.World) interest.ID {
		id, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 4300, Y: 2300}, Life: 100}, interest.Display{Name: "wolf"})
		return id
	})
	west := joinNamed(t, c, a.nc, a.node.Directory(), cluster.CellName("wild", 0), "w0", "w1")
	east := joinNamed(t, c, b.nc, b.node.Directory(), cluster.CellName("wild", 1), "e0")
	all := append(slices.Clone(west), east...)
	knows := func(w *walker, ids ...interest.ID) bool {
		for _, id := range ids {
			if _, ok := w.c.Interest().Entity(id); !ok {
				return false
			}
		}
		return true
	}
	playWalkers(t, "an heir, checkpoints, and the sights across the border", all, func() bool {
		st := a.node.Standbys()
		for _, w := range west {
			if w.c.Standby() == "" || !knows(w, wolf, deer) {
				return false
			}
		}
		return st.Worlds == 1 && st.Checkpoints >= 2 && knows(east[0], west[0].c.Entity(), west[1].c.Entity(), deer)
	})
	heirURL := west[0].c.Standby()
	known := make([][]interest.ID, len(all))
	self := make([]interest.ID, len(all))
	for i, w := range all {
		known[i] = w.c.Interest().Known(nil)
		self[i] = w.c.Entity()
		w.gap = 0
	}

	done := make(chan error, 1)
	go func() {
		n, err := a.node.Drain(t.Context())
		if err == nil && n != 1 {
			err = fmt.Errorf("the drain moved %d worlds", n)
		}
		done <- err
	}()
	var drained bool
	playWalkers(t, "the drain", all, func() bool {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			drained = true
		default:
		}
		return drained
	})
	frame := west[0].frame
	playWalkers(t, "the west cell going on at its heir", all, func() bool {
		for _, w := range west {
			if len(w.moves) == 0 || w.frame < frame+20 {
				return false
			}
		}
		return true
	})
	var heir *worldNode
	for _, n := range nodes {
		if n.url == heirURL {
			heir = n
		}
	}
	if heir == nil || heir == a {
		t.Fatalf("the west cell's heir is at %q", heirURL)
	}
	t.Logf("the west cell moved to %s", heir.id)
	for i, w := range all {
		t.Logf("player %d: longest without a world frame %v (frame %d)", i, w.gap, w.frame)
		if i < len(west) {
			if m := w.moves[0]; len(w.moves) != 1 || m.From != "wild#0" || m.To != "wild#0" || m.URL != heirURL {
				t.Errorf("player %d moved %+v", i, w.moves)
			}
		} else if len(w.moves) != 0 {
			t.Errorf("player %d of the east cell moved %+v", i, w.moves)
		}
		if w.c.Entity() != self[i] {
			t.Errorf("player %d: entity %d, was %d", i, w.c.Entity(), self[i])
		}
		now := w.c.Interest().Known(nil)
		for _, id := range known[i] {
			if !slices.Contains(now, id) {
				t.Errorf("player %d: entity %d, known before the move, is not after it", i, id)
			}
		}
		if len(w.events) != 0 {
			t.Errorf("player %d: connection events %+v", i, w.events)
		}
		if w.gap > time.Second {
			t.Errorf("player %d went %v without a world frame", i, w.gap)
		}
	}
	for _, n := range []*worldNode{b, x} {
		if got := cellOn(n, 0); got != heir.id {
			t.Errorf("%s's directory places the west cell on %q", n.id, got)
		}
	}
	g := games[heir.id]
	g.mu.Lock()
	for _, id := range self[:len(west)] {
		if g.gold[id] != 100+int(id) {
			t.Errorf("the heir's game: gold of %d is %d", id, g.gold[id])
		}
	}
	g.mu.Unlock()

	// Across the moved border: w1 walks into the east cell, the wolf into
	// the west cell.
	newWest, _ := heir.srv.World(cluster.CellName("wild", 0))
	if err := west[1].c.Interest().Move(interest.Vec{X: 5000, Y: 1800}, 60); err != nil {
		t.Fatal(err)
	}
	onWorker(eastW, func(w *interest.World) error { return w.Move(wolf, interest.Vec{X: 3000, Y: 2300}, 40) })
	playWalkers(t, "w1 in the east cell, the wolf in the west cell", all, func() bool {
		wolfWest := onWorker(newWest, func(w *interest.World) bool { _, ok := w.Logic(wolf); return ok && !w.Ghost(wolf) })
		return len(west[1].moves) == 2 && west[1].moves[1].To == "wild#1" && wolfWest
	})
	if west[1].c.Entity() != self[1] {
		t.Errorf("w1 crossed into entity %d, was %d", west[1].c.Entity(), self[1])
	}
	gb.mu.Lock()
	if gb.gold[self[1]] != 100+int(self[1]) {
		t.Errorf("the east cell adopted w1 with gold %d", gb.gold[self[1]])
	}
	gb.mu.Unlock()

	// The west cell's node dies: the cell comes back on another host from
	// its checkpoint, and w0 resumes there.
	playWalkers(t, "checkpoints of the moved cell", all, func() bool { return heir.node.Standbys().Checkpoints >= 2 })
	// It loses NATS, and its cells their leases, as a crashed process does.
	heir.nc.Close()
	c.mu.Lock()
	heir.dead = true
	c.mu.Unlock()
	if heir == b {
		all = west[:1] // e0 and w1 were in the east cell, which died too
	}
	crashed := west[0].frame
	playWalkers(t, "the west cell back from its checkpoint", west[:1], func() bool {
		w := west[0]
		return len(w.events) > 0 && w.events[len(w.events)-1].State == engine.Resumed && w.frame > crashed+10
	})
	ev := west[0].events[len(west[0].events)-1]
	if ev.RestoredFrame <= 0 || ev.RestoredFrame > crashed+8 {
		t.Errorf("w0 restored to frame %d; it saw %d", ev.RestoredFrame, crashed)
	}
	if west[0].c.Entity() != self[0] {
		t.Errorf("w0: entity %d after the crash, was %d", west[0].c.Entity(), self[0])
	}
	var back string
	for _, n := range nodes {
		if n != a && n != heir {
			back = cellOn(n, 0)
		}
	}
	if back == "" || back == heir.id || back == "a" {
		t.Errorf("the west cell is back on %q", back)
	}
}

//go:build !js

package cluster_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/transport/memnet"
)

// safeCluster is a worldCluster on a NATS server with JetStream, whose
// nodes give their worlds heirs and checkpoints.
func safeCluster(t *testing.T) *worldCluster {
	srv := natstest.JetStream(t)
	return &worldCluster{t: t, nats: srv.ClientURL(), net: memnet.New(1), nodes: map[string]*worldNode{}, arrivals: map[string]string{}}
}

// gameState is a game's own state of a world: each entity's gold, kept
// by the world's hooks and carried by its checkpoints.
type gameState struct {
	mu       sync.Mutex
	gold     map[interest.ID]int
	restored int // checkpoints restored
}

func (g *gameState) encode() []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, _ := json.Marshal(g.gold)
	return b
}

func (g *gameState) decode(b []byte) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.restored++
	return json.Unmarshal(b, &g.gold)
}

// addSafeNode starts node id, which serves worlds (each player's gold in
// the game's state, five NPCs spawned around each joining player) and
// stands by for the worlds of others.
func (c *worldCluster) addSafeNode(id string, opts *cluster.Options) (*worldNode, *gameState) {
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
	err = n.node.ServeWorlds(srv, func(req cluster.WorldRequest) (engine.WorldConfig, error) {
		return engine.WorldConfig{
			Interest: interest.Config{Width: 8, Height: 8},
			Join: func(w *interest.World, player string) (interest.ID, error) {
				i, _ := strconv.Atoi(strings.TrimPrefix(player, "p"))
				p := interest.Vec{X: 200 + int32(i*60), Y: 200}
				id, err := w.Spawn(interest.Player, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: player})
				for k := range 5 {
					q := interest.Vec{X: p.X + int32(k*10), Y: p.Y + 40}
					w.Spawn(interest.NPC, interest.Logic{Pos: q, Dest: q, Life: 100}, interest.Display{Name: "wolf"})
				}
				g.mu.Lock()
				g.gold[id] = 100 + i
				g.mu.Unlock()
				return id, err
			},
			Checkpoint: func(*interest.World) []byte { return g.encode() },
			Restore:    func(_ *interest.World, b []byte) error { return g.decode(b) },
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.node.ServeStandbys(srv, func(string, json.RawMessage, engine.RoomState) (*engine.Room, error) {
		return nil, fmt.Errorf("no rooms")
	}); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes[n.url] = n
	c.mu.Unlock()
	t.Cleanup(func() { c.kill(n) })
	return n, g
}

// walker is a player in a world: its client, what it went through, and
// the longest it went without a world packet.
type walker struct {
	c      *engine.Client
	events []engine.ConnectionEvent
	moves  []engine.Move
	frame  int
	gap    time.Duration
	gapEnd time.Time
	last   time.Time
}

func (w *walker) play(now time.Time) error {
	if err := w.c.Update(now); err != nil {
		return err
	}
	if f := w.c.Interest().Frame(); f != w.frame {
		if !w.last.IsZero() && now.Sub(w.last) > w.gap {
			w.gap, w.gapEnd = now.Sub(w.last), now
		}
		w.frame, w.last = f, now
	}
	return nil
}

// joinWalkers places n players, p0 to p<n-1>, in world on the cluster.
func joinWalkers(t *testing.T, c *worldCluster, nc *nats.Conn, dir *cluster.Directory, world string, n int) []*walker {
	t.Helper()
	var players []string
	for i := range n {
		players = append(players, fmt.Sprint("p", i))
	}
	return joinNamed(t, c, nc, dir, world, players...)
}

// joinNamed places the players in world on the cluster.
func joinNamed(t *testing.T, c *worldCluster, nc *nats.Conn, dir *cluster.Directory, world string, players ...string) []*walker {
	t.Helper()
	var ws []*walker
	for _, player := range players {
		p, err := cluster.JoinWorld(t.Context(), nc, dir, cluster.JoinRequest{World: world, Player: player}, fast)
		if err != nil {
			t.Fatal(err)
		}
		wk := &walker{}
		cfg := c.client(nil)
		cfg.OnConnection = func(e engine.ConnectionEvent) { wk.events = append(wk.events, e) }
		cfg.OnMove = func(m engine.Move) { wk.moves = append(wk.moves, m) }
		cl, err := engine.Dial(t.Context(), p.URL, p.Tickets[player], cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		wk.c = cl
		ws = append(ws, wk)
	}
	return ws
}

func playWalkers(t *testing.T, what string, ws []*walker, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		for i, w := range ws {
			if err := w.play(time.Now()); err != nil {
				t.Fatalf("%s: player %d: %v", what, i, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 15 s", what)
		}
	}
}

// startSafeWorld starts two nodes, places world "keep" and three players
// in it, and plays until the world has an heir and a checkpoint.
func startSafeWorld(t *testing.T, opts *cluster.Options) (c *worldCluster, ws []*walker, primary, heir *worldNode, games map[string]*gameState) {
	c = safeCluster(t)
	a, ga := c.addSafeNode("a", opts)
	b, gb := c.addSafeNode("b", opts)
	games = map[string]*gameState{"a": ga, "b": gb}
	waitFor(t, "two nodes", func() bool { return len(alive(a.node.Directory())) == 2 && len(alive(b.node.Directory())) == 2 })
	pl, err := cluster.CreateWorld(t.Context(), a.nc, cluster.WorldRequest{World: "keep", Cap: 10}, fast)
	if err != nil {
		t.Fatal(err)
	}
	primary, heir = a, b
	if pl.Node == "b" {
		primary, heir = b, a
	}
	waitFor(t, "the world in the directory", func() bool { _, ok := a.node.Directory().LocateWorld("keep"); return ok })
	ws = joinWalkers(t, c, a.nc, a.node.Directory(), "keep", 3)
	written := primary.node.Standbys().Checkpoints // the world's first record among them, before its players
	playWalkers(t, "an heir and checkpoints", ws, func() bool {
		st, hs := primary.node.Standbys(), heir.node.Standbys()
		for _, w := range ws {
			if w.c.Standby() != heir.url || w.c.Interest().Len() < 10 {
				return false
			}
		}
		return st.Worlds == 1 && hs.Heirs == 1 && st.Checkpoints >= written+2
	})
	return c, ws, primary, heir, games
}

// TestWorldMovesOnDrain: a node drained for a deploy moves its world to
// the heir while the players play: each client connects there ahead and
// switches at once, keeps its entity and every entity it knew, the
// world's frames go on, and the game's state goes with it.
func TestWorldMovesOnDrain(t *testing.T) {
	opts := *fast
	opts.Logger = slog.New(slog.NewTextHandler(newTlog(t), &slog.HandlerOptions{Level: slog.LevelInfo}))
	_, ws, primary, heir, games := startSafeWorld(t, &opts)
	for _, m := range []struct {
		n    *worldNode
		want string
	}{{primary, "tongbu_cluster_heir_worlds 1\n"}, {heir, "tongbu_cluster_heir_of 1\n"}, {primary, "tongbu_cluster_checkpoints_total "}} {
		var b strings.Builder
		m.n.node.WriteMetrics(&b)
		if !strings.Contains(b.String(), m.want) || m.n == primary && strings.Contains(b.String(), "tongbu_cluster_checkpoints_total 0\n") {
			t.Errorf("%s's metrics lack %q:\n%s", m.n.id, m.want, b.String())
		}
	}
	known := make([][]interest.ID, len(ws))
	self := make([]interest.ID, len(ws))
	for i, w := range ws {
		known[i] = w.c.Interest().Known(nil)
		self[i] = w.c.Entity()
		w.gap = 0
	}
	type drained struct {
		n   int
		err error
	}
	done := make(chan drained, 1)
	go func() {
		n, err := primary.node.Drain(t.Context())
		done <- drained{n, err}
	}()
	var d *drained
	playWalkers(t, "the drain", ws, func() bool {
		select {
		case r := <-done:
			d = &r
		default:
		}
		return d != nil
	})
	if d.err != nil || d.n != 1 {
		t.Fatalf("the drain moved %d: %v", d.n, d.err)
	}
	frame := ws[0].frame
	playWalkers(t, "the world going on at the heir", ws, func() bool {
		for _, w := range ws {
			if len(w.moves) == 0 || w.frame < frame+20 {
				return false
			}
		}
		return true
	})
	for i, w := range ws {
		t.Logf("player %d: longest without a world frame %v, to %v (frame %d)", i, w.gap, w.gapEnd.Format("15:04:05.000"), w.frame)
		if m := w.moves[0]; len(w.moves) != 1 || m.From != "keep" || m.To != "keep" || m.URL != heir.url {
			t.Errorf("player %d moved %+v", i, w.moves)
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
		if w.gap > time.Second { // a world sends an idle client a packet every 8 frames (500 ms)
			t.Errorf("player %d went %v without a world frame", i, w.gap)
		}
	}
	if st := heir.node.Standbys(); st.WorldsMovedIn != 1 {
		t.Errorf("heir stats %+v", st)
	}
	if got, ok := heir.node.Directory().LocateWorld("keep"); !ok || got.Node != heir.id {
		t.Errorf("the directory places the world on %+v", got)
	}
	games[heir.id].check(t, self)
}

// TestWorldComesBackAfterCrash: the node holding a world falls silent (it
// loses NATS, and its world its lease, as a crashed process does); the
// heir takes the world's record over and restores it from its last
// checkpoint; every client notices the silence and resumes there by
// itself, into its own entity, told the frame the world went back to.
func TestWorldComesBackAfterCrash(t *testing.T) {
	c, ws, primary, heir, games := startSafeWorld(t, fast)
	self := make([]interest.ID, len(ws))
	for i, w := range ws {
		self[i] = w.c.Entity()
	}
	primary.nc.Close()
	c.mu.Lock()
	primary.dead = true
	c.mu.Unlock()
	crashedAt, frame := time.Now(), ws[0].frame
	playWalkers(t, "the world back at the heir", ws, func() bool {
		for _, w := range ws {
			if len(w.events) == 0 || w.events[len(w.events)-1].State != engine.Resumed || w.frame < frame+10 {
				return false
			}
		}
		return true
	})
	t.Logf("back after %v", time.Since(crashedAt).Round(time.Millisecond))
	for i, w := range ws {
		ev := w.events[len(w.events)-1]
		// The world ran on until its lease ran out (leaseTTL, four frames),
		// its last frames lost on the way to the clients.
		if ev.RestoredFrame <= 0 || ev.RestoredFrame > frame+8 {
			t.Errorf("player %d: restored to frame %d; it saw %d", i, ev.RestoredFrame, frame)
		}
		if w.c.Entity() != self[i] {
			t.Errorf("player %d: entity %d, was %d", i, w.c.Entity(), self[i])
		}
		lost := time.Duration(frame-ev.RestoredFrame) * time.Second / 16
		if lost > cluster.DefaultCheckpointEvery+time.Second {
			t.Errorf("player %d lost %v of play", i, lost)
		}
	}
	if st := heir.node.Standbys(); st.WorldsTakenOver != 1 {
		t.Errorf("heir stats %+v", st)
	}
	if got, ok := heir.node.Directory().LocateWorld("keep"); !ok || got.Node != heir.id {
		t.Errorf("the directory places the world on %+v", got)
	}
	games[heir.id].check(t, self)
}

// tlog writes a node's log to the test's, and drops what comes after the
// test ends (a node's goroutines may still log while they stop).
type tlog struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func newTlog(t *testing.T) *tlog {
	l := &tlog{t: t}
	t.Cleanup(func() { l.mu.Lock(); l.done = true; l.mu.Unlock() })
	return l
}

func (l *tlog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimSpace(string(b)))
	}
	return len(b), nil
}

// check that the game was restored once, with each player's gold.
func (g *gameState) check(t *testing.T, players []interest.ID) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, id := range players {
		if g.restored != 1 || g.gold[id] != 100+i {
			t.Errorf("the heir's game: restored %d, gold of player %d %d", g.restored, i, g.gold[id])
		}
	}
}

// TestSimultaneousCreatesOneWorld: many requests for one world at the
// same instant, spread over two nodes (processes of one config starting
// together), make it on one node only: the node that claims its record
// in the checkpoint bucket first serves it, and the other refuses.
func TestSimultaneousCreatesOneWorld(t *testing.T) {
	c := safeCluster(t)
	a, _ := c.addSafeNode("a", fast)
	b, _ := c.addSafeNode("b", fast)
	waitFor(t, "two nodes", func() bool { return len(alive(a.node.Directory())) == 2 && len(alive(b.node.Directory())) == 2 })
	for round := range 5 {
		name := fmt.Sprintf("town~%d", round+1)
		var wg sync.WaitGroup
		var mu sync.Mutex
		made := map[string]int{}
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				nc := a.nc
				if i%2 == 1 {
					nc = b.nc
				}
				p, err := cluster.CreateWorld(t.Context(), nc, cluster.WorldRequest{World: name, Cap: 5}, fast)
				if err == nil {
					mu.Lock()
					made[p.Node]++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		_, onA := a.srv.World(name)
		_, onB := b.srv.World(name)
		if onA == onB || len(made) != 1 {
			t.Fatalf("%s: on a %v, on b %v; made on %v", name, onA, onB, made)
		}
	}
}

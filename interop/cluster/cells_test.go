//go:build !js

package cluster_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// onWorker runs f on w's worker and waits for it.
func onWorker[T any](w *engine.World, f func(*interest.World) T) T {
	ch := make(chan T, 1)
	w.Do(func(iw *interest.World) { ch <- f(iw) })
	return <-ch
}

// TestCellsAcrossNodes runs one map cut into two cells on two nodes: a
// player in the west cell sees the east cell's NPC near the border (a
// ghost), not the far one; standing by the border, its client connects
// to the east cell ahead of time (and lets go when it walks away); it
// walks east and its client switches to that connection, keeping its
// entity, with the game's state of it; an NPC that walks west is handed
// the other way, its state with it; and when the east node dies, the
// west cell drops its ghosts.
func TestCellsAcrossNodes(t *testing.T) {
	wc := newWorldCluster(t)
	a, b := wc.add("a", 100), wc.add("b", 100)
	waitFor(t, "a to see b", func() bool { return len(alive(a.node.Directory())) == 2 })
	var statesMu sync.Mutex
	adopted := map[interest.ID]string{} // the game's state of each entity a cell adopted
	adoptedState := func(id interest.ID) string {
		statesMu.Lock()
		defer statesMu.Unlock()
		return adopted[id]
	}
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now(),
		Handover: func(w *interest.World, id interest.ID) []byte { return fmt.Appendf(nil, "gold of %d", id) },
		Adopt: func(w *interest.World, id interest.ID, state []byte) {
			statesMu.Lock()
			adopted[id] = string(state)
			statesMu.Unlock()
		}}
	spawnAt := func(p interest.Vec) func(w *interest.World, player string) (interest.ID, error) {
		return func(w *interest.World, player string) (interest.ID, error) {
			return w.Spawn(interest.Player, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: player})
		}
	}
	west, err := a.node.ServeCell(m, 0, engine.WorldConfig{Join: spawnAt(interest.Vec{X: 3584, Y: 2048}), MaxPlayers: 10})
	if err != nil {
		t.Fatal(err)
	}
	var near, far interest.ID
	east, err := b.node.ServeCell(m, 1, engine.WorldConfig{Join: spawnAt(interest.Vec{X: 6000, Y: 2048}), MaxPlayers: 10})
	if err != nil {
		t.Fatal(err)
	}
	onWorker(east, func(w *interest.World) error {
		var err error
		near, err = w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 4300, Y: 2048}, Life: 100}, interest.Display{Name: "wolf"})
		if err == nil {
			far, err = w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 7900, Y: 2048}, Life: 100}, interest.Display{Name: "deer"})
		}
		return err
	})
	waitFor(t, "the cells in the directory", func() bool {
		_, w := a.node.Directory().LocateWorld(cluster.CellName("wild", 0))
		_, e := a.node.Directory().LocateWorld(cluster.CellName("wild", 1))
		return w && e
	})

	var dialMu sync.Mutex
	var dials []string // the nodes ann's client connects to, in order
	wc.onDial = func(url string) {
		dialMu.Lock()
		dials = append(dials, url)
		dialMu.Unlock()
	}
	dialsTo := func(url string) int {
		dialMu.Lock()
		defer dialMu.Unlock()
		n := 0
		for _, d := range dials {
			if d == url {
				n++
			}
		}
		return n
	}
	held := func(n *worldNode, world string) int {
		w, _ := n.srv.World(world)
		_, booked := w.Load()
		return booked
	}

	ctx := t.Context()
	p, err := cluster.JoinWorld(ctx, a.nc, a.node.Directory(), cluster.JoinRequest{World: cluster.CellName("wild", 0), Player: "ann"}, fast)
	if err != nil {
		t.Fatal(err)
	}
	moves := make(chan engine.Move, 2)
	c, err := engine.Dial(ctx, p.URL, p.Tickets["ann"], wc.client(moves))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	me := c.Entity()
	advance := func() bool { c.Interest().Advance(time.Now()); return false }
	play(t, "the wolf across the border", func() bool { advance(); _, ok := c.Interest().Entity(near); return ok }, c)
	if _, ok := c.Interest().Entity(far); ok {
		t.Fatal("the client knows the deer, three regions into the other cell")
	}
	if ghost := onWorker(west, func(w *interest.World) bool { return w.Ghost(near) }); !ghost {
		t.Fatal("the wolf is not a ghost in the west cell")
	}

	// Ann stands in the region along the border: the east cell holds her
	// a standby place, and her client connects to it now and waits there.
	play(t, "ann's client to connect to the east cell ahead of time", func() bool { advance(); return dialsTo(b.url) == 1 }, c)
	waitFor(t, "the east cell to hold ann's standby place", func() bool { return held(b, cluster.CellName("wild", 1)) == 1 })
	if len(moves) > 0 || c.Target() != cluster.CellName("wild", 0) {
		t.Fatalf("ann's client moved to %s before she crossed", c.Target())
	}
	// She walks away from the border: the place is given up and the
	// waiting connection closed; she comes back: a new one.
	if err := c.Interest().Move(interest.Vec{X: 1500, Y: 2048}, 60); err != nil {
		t.Fatal(err)
	}
	play(t, "the east cell to give ann's standby place up", func() bool { advance(); return held(b, cluster.CellName("wild", 1)) == 0 }, c)
	if err := c.Interest().Move(interest.Vec{X: 3800, Y: 2048}, 60); err != nil {
		t.Fatal(err)
	}
	play(t, "a new standby place for ann", func() bool { advance(); return dialsTo(b.url) == 2 && held(b, cluster.CellName("wild", 1)) == 1 }, c)

	// Ann walks east across the border: her client switches to the
	// connection that waited, with no new handshake, and keeps her entity.
	// She jumps every frame on the way: the jumps in flight at the
	// crossing are applied once, by the one cell or the other.
	var jumps [2]atomic.Int32
	for i, w := range []*engine.World{west, east} {
		onWorker(w, func(iw *interest.World) bool {
			iw.OnAction(func(a interest.Action) {
				if a.Kind == interest.ActionJump {
					jumps[i].Add(1)
				}
			})
			return true
		})
	}
	issued, jumpedAt := 0, -1
	jump := func() {
		if f := c.Interest().Frame(); f != jumpedAt && c.Interest().Jump() == nil {
			issued, jumpedAt = issued+1, f
		}
	}
	if err := c.Interest().Move(interest.Vec{X: 5000, Y: 2048}, 60); err != nil {
		t.Fatal(err)
	}
	play(t, "ann's move to the east cell", func() bool { advance(); jump(); return len(moves) > 0 }, c)
	for range 8 { // and on, in the east
		play(t, "a frame", func() bool { advance(); return c.Interest().Frame() != jumpedAt }, c)
		jump()
	}
	play(t, "every jump applied", func() bool { advance(); return int(jumps[0].Load()+jumps[1].Load()) >= issued }, c)
	play(t, "a few frames more", func() bool { advance(); return c.Interest().Frame() >= jumpedAt+8 }, c)
	if w, e := jumps[0].Load(), jumps[1].Load(); int(w+e) != issued || w == 0 || e == 0 {
		t.Fatalf("ann jumped %d times on her way; the west applied %d jumps, the east %d", issued, w, e)
	}
	if mv := <-moves; mv.To != cluster.CellName("wild", 1) || c.Entity() != me {
		t.Fatalf("move %+v, entity %d (was %d)", mv, c.Entity(), me)
	}
	if n := dialsTo(b.url); n != 2 {
		t.Fatalf("ann's client dialed the east cell %d times, want the 2 standby connections only", n)
	}
	if got, want := adoptedState(me), fmt.Sprint("gold of ", me); got != want {
		t.Fatalf("the east cell adopted ann with the game's state %q, want %q", got, want)
	}
	// A seamless move: the client still knows the wolf, before the east
	// cell has said a word of it.
	if _, ok := c.Interest().Entity(near); !ok {
		t.Fatal("the client lost the wolf as it crossed")
	}
	if owned := onWorker(east, func(w *interest.World) bool { _, ok := w.Logic(me); return ok && !w.Ghost(me) }); !owned {
		t.Fatal("the east cell does not own ann")
	}
	play(t, "ann's client to see the wolf from the east cell", func() bool { advance(); _, ok := c.Interest().Entity(near); return ok }, c)
	waitFor(t, "the west cell to let ann go", func() bool { ps, _ := west.Load(); return ps == 0 })

	// The wolf walks west: the west cell owns it once it crosses.
	onWorker(east, func(w *interest.World) error { return w.Move(near, interest.Vec{X: 3000, Y: 2048}, 40) })
	waitFor(t, "the west cell to own the wolf", func() bool {
		return onWorker(west, func(w *interest.World) bool { _, ok := w.Logic(near); return ok && !w.Ghost(near) })
	})
	waitFor(t, "the wolf's state in the west cell", func() bool { return adoptedState(near) == fmt.Sprint("gold of ", near) })

	// The east node dies: the west cell drops what it mirrored of it (ann).
	if !onWorker(west, func(w *interest.World) bool { return w.Ghost(me) }) {
		t.Fatal("ann, near the border, is not mirrored in the west cell")
	}
	wc.kill(b)
	waitFor(t, "the west cell to drop the east cell's ghosts", func() bool {
		return onWorker(west, func(w *interest.World) bool { _, ok := w.Logic(me); return !ok })
	})
	if a.node.BorderBytes() == 0 {
		t.Fatal("no border bytes counted")
	}
}

// TestCellNeighbourDies: while the east cell's node is down, a player of
// the west cell who walks into the east's rectangle stays in the west
// cell (there is no one to hand it to); once a node serves the east cell
// again, the player is handed to it and its client follows. A player
// whose entity went with the dead cell is told and closed.
func TestCellNeighbourDies(t *testing.T) {
	wc := newWorldCluster(t)
	a, b := wc.add("a", 100), wc.add("b", 100)
	waitFor(t, "a to see b", func() bool { return len(alive(a.node.Directory())) == 2 })
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now()}
	spawnAt := func(x int32) func(w *interest.World, player string) (interest.ID, error) {
		return func(w *interest.World, player string) (interest.ID, error) {
			p := interest.Vec{X: x, Y: 2048}
			return w.Spawn(interest.Player, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: player})
		}
	}
	if _, err := a.node.ServeCell(m, 0, engine.WorldConfig{Join: spawnAt(2000), MaxPlayers: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.node.ServeCell(m, 1, engine.WorldConfig{Join: spawnAt(6000), MaxPlayers: 10}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the cells in the directory", func() bool {
		_, w := a.node.Directory().LocateWorld(cluster.CellName("wild", 0))
		_, e := a.node.Directory().LocateWorld(cluster.CellName("wild", 1))
		return w && e
	})
	join := func(player string, cell int) (*engine.Client, chan engine.Move) {
		p, err := cluster.JoinWorld(t.Context(), a.nc, a.node.Directory(), cluster.JoinRequest{World: cluster.CellName("wild", cell), Player: player}, fast)
		if err != nil {
			t.Fatal(err)
		}
		moves := make(chan engine.Move, 4)
		c, err := engine.Dial(t.Context(), p.URL, p.Tickets[player], wc.client(moves))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, moves
	}
	ann, annMoves := join("ann", 0)
	cyd, _ := join("cyd", 1) // in the east cell: lost with it

	wc.kill(b)
	waitFor(t, "the directory to declare b dead", func() bool { return len(alive(a.node.Directory())) == 1 })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if cyd.Update(time.Now()) != nil {
			break // told
		}
		if time.Now().After(deadline) {
			t.Fatal("cyd's client still open 10 s after its cell's node died")
		}
	}
	// Ann walks into the east's rectangle: the west cell keeps her.
	play(t, "ann to see herself", func() bool { ann.Interest().Advance(time.Now()); _, ok := ann.Interest().Self(); return ok }, ann)
	if err := ann.Interest().Move(interest.Vec{X: 5200, Y: 2048}, 60); err != nil {
		t.Fatal(err)
	}
	play(t, "ann to reach the east's rectangle", func() bool {
		ann.Interest().Advance(time.Now())
		me, ok := ann.Interest().Self()
		return ok && me.Pos.X == 5200
	}, ann)
	time.Sleep(500 * time.Millisecond) // a few frames more
	play(t, "", func() bool { return true }, ann)
	if len(annMoves) > 0 || ann.Target() != cluster.CellName("wild", 0) {
		t.Fatalf("ann moved to %s with the east cell down", ann.Target())
	}

	// A new node serves the east cell: ann is handed to it.
	c := wc.add("c", 100)
	if _, err := c.node.ServeCell(m, 1, engine.WorldConfig{Join: spawnAt(6000), MaxPlayers: 10}); err != nil {
		t.Fatal(err)
	}
	play(t, "ann's move to the new east cell", func() bool { ann.Interest().Advance(time.Now()); return len(annMoves) > 0 }, ann)
	if mv := <-annMoves; mv.To != cluster.CellName("wild", 1) || mv.URL != c.url {
		t.Fatalf("ann moved %+v, want the east cell on c (%s)", mv, c.url)
	}
}

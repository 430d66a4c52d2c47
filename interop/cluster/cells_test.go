//go:build !js

package cluster_test

import (
	"sync"
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
// ghost), not the far one; it walks east and its client follows it into
// the east cell with the same entity; an NPC that walks west is handed
// the other way; and when the east node dies, the west cell drops its
// ghosts.
func TestCellsAcrossNodes(t *testing.T) {
	wc := newWorldCluster(t)
	a, b := wc.add("a", 100), wc.add("b", 100)
	waitFor(t, "a to see b", func() bool { return len(alive(a.node.Directory())) == 2 })
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now()}
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
	if err := c.Interest().Move(interest.Vec{X: 5000, Y: 2048}, 60); err != nil {
		t.Fatal(err)
	}
	play(t, "ann's move to the east cell", func() bool { advance(); return len(moves) > 0 }, c)
	if mv := <-moves; mv.To != cluster.CellName("wild", 1) || c.Entity() != me {
		t.Fatalf("move %+v, entity %d (was %d)", mv, c.Entity(), me)
	}
	if n := dialsTo(b.url); n != 2 {
		t.Fatalf("ann's client dialed the east cell %d times, want the 2 standby connections only", n)
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

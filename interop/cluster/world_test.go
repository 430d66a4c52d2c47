//go:build !js

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/seal"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

var secret = []byte("a secret of the cluster's processes")

// worldCluster is a cluster of engine servers that serve worlds, each a
// node on one NATS server; clients reach them over one emulated network,
// dialing a node by its URL (engine.ClientConfig.Connect).
type worldCluster struct {
	t     *testing.T
	nats  string
	net   *memnet.Network
	mu    sync.Mutex
	nodes map[string]*worldNode // by URL
	// onDial, when set, runs before a client connects to url.
	onDial   func(url string)
	arrivals map[string]string // player: the node and the state it arrived with
}

func (c *worldCluster) arrived(player string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.arrivals[player]
}

type worldNode struct {
	id   string
	url  string
	nc   *nats.Conn
	srv  *engine.Server
	node *cluster.Node
	dead bool
}

func newWorldCluster(t *testing.T) *worldCluster {
	srv := natstest.Server(t)
	return &worldCluster{t: t, nats: srv.ClientURL(), net: memnet.New(1), nodes: map[string]*worldNode{}, arrivals: map[string]string{}}
}

// add starts node id with room for players world players.
func (c *worldCluster) add(id string, players int) *worldNode {
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
	n := &worldNode{id: id, url: "http://" + id + ".test:8080", nc: nc, srv: srv}
	n.node, err = cluster.Join(nc, cluster.NodeInfo{ID: id, URL: n.url, Capacity: 10, Players: players},
		func(cluster.RoomRequest) (map[string]string, error) { return nil, errors.New("no rooms here") }, fast)
	if err != nil {
		t.Fatal(err)
	}
	err = n.node.ServeWorlds(srv, func(req cluster.WorldRequest) (engine.WorldConfig, error) {
		return engine.WorldConfig{
			Interest: interest.Config{Width: 8, Height: 8},
			Arrive: func(w *interest.World, player string, state []byte) (interest.ID, error) {
				c.mu.Lock()
				c.arrivals[player] = id + ":" + string(state)
				c.mu.Unlock()
				return w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 100, Y: 100}, Life: 100}, interest.Display{Name: string(state)})
			},
		}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes[n.url] = n
	c.mu.Unlock()
	t.Cleanup(func() { c.kill(n) })
	return n
}

// kill ends a node as a crash would: its NATS connection drops and its
// server stops, with no goodbye to the cluster.
func (c *worldCluster) kill(n *worldNode) {
	c.mu.Lock()
	dead := n.dead
	n.dead = true
	c.mu.Unlock()
	if dead {
		return
	}
	n.nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n.srv.Shutdown(ctx)
}

// client is a player's client configuration: it reaches nodes by URL.
func (c *worldCluster) client(moves chan engine.Move) *engine.ClientConfig {
	return &engine.ClientConfig{
		Connect: func(_ context.Context, url, ticket string) (transport.Conn, error) {
			if c.onDial != nil {
				c.onDial(url)
			}
			c.mu.Lock()
			n := c.nodes[url]
			dead := n == nil || n.dead
			c.mu.Unlock()
			if dead {
				return nil, fmt.Errorf("no server answers at %s", url)
			}
			link := memnet.LinkConfig{Latency: 5 * time.Millisecond}
			cc, sc := c.net.Pipe(link, link)
			if err := n.srv.Attach(sc, ticket); err != nil {
				cc.Close()
				return nil, err
			}
			return cc, nil
		},
		OnMove: func(m engine.Move) {
			if moves != nil {
				moves <- m
			}
		},
	}
}

// play runs the clients' loops until cond holds (10 s at most).
func play(t *testing.T, what string, cond func() bool, cs ...*engine.Client) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		for _, c := range cs {
			if err := c.Update(time.Now()); err != nil {
				t.Fatalf("while waiting for %s: %v", what, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 10 s", what)
		}
	}
}

func load(n *worldNode, world string) int {
	w, ok := n.srv.World(world)
	if !ok {
		return -1
	}
	p, b := w.Load()
	return p + b
}

// TestWorldLines fills a map's lines across nodes: each line up to its
// cap, a new line when all are full, on a node with room; a node that
// dies has its lines reported lost, and new lines go to the others.
func TestWorldLines(t *testing.T) {
	wc := newWorldCluster(t)
	lnc, err := nats.Connect(wc.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer lnc.Close()
	losses := make(chan cluster.Loss, 4)
	opts := *fast
	opts.OnLoss = func(l cluster.Loss) { losses <- l }
	dir, err := cluster.Watch(lnc, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	a, b := wc.add("a", 4), wc.add("b", 4)
	waitFor(t, "two nodes", func() bool { return slices.Equal(alive(dir), []string{"a", "b"}) })

	ctx := t.Context()
	req := cluster.JoinRequest{Map: "field", NewLine: cluster.WorldRequest{Cap: 2}}
	var clients []*engine.Client
	for i := range 7 {
		r := req
		r.Player = fmt.Sprint("p", i)
		p, err := cluster.JoinWorld(ctx, lnc, dir, r, fast)
		if err != nil {
			t.Fatalf("player %d: %v", i, err)
		}
		c, err := engine.Dial(ctx, p.URL, p.Tickets[r.Player], wc.client(nil))
		if err != nil {
			t.Fatalf("player %d to %+v: %v", i, p, err)
		}
		defer c.Close()
		clients = append(clients, c)
	}
	// Seven players on lines of 2: four lines, two on each node.
	waitFor(t, "four lines of 2, 2, 2 and 1", func() bool {
		lines := dir.Lines("field")
		var got []int
		for _, l := range lines {
			got = append(got, l.Players)
		}
		slices.Sort(got)
		return slices.Equal(got, []int{1, 2, 2, 2})
	})
	for _, n := range []*worldNode{a, b} {
		if got := n.node.Worlds(); len(got) != 2 {
			t.Fatalf("node %s holds %v, want 2 lines", n.id, got)
		}
	}
	// An eighth fills the line with room, a ninth finds both nodes full.
	r := req
	r.Player = "p7"
	p, err := cluster.JoinWorld(ctx, lnc, dir, r, fast)
	if err != nil {
		t.Fatal(err)
	}
	if load(wc.nodes[p.URL], p.Room) != 2 {
		t.Fatalf("the eighth went to %s, which holds %d", p.Room, load(wc.nodes[p.URL], p.Room))
	}
	r.Player = "p8"
	if _, err := cluster.JoinWorld(ctx, lnc, dir, r, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("a ninth player: %v", err)
	}
	// Without NewLine, a map whose lines are full refuses.
	if _, err := cluster.JoinWorld(ctx, lnc, dir, cluster.JoinRequest{Map: "field", Player: "p9"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("no new line: %v", err)
	}
	if _, err := cluster.JoinWorld(ctx, lnc, dir, cluster.JoinRequest{World: "nowhere", Player: "p9"}, fast); !errors.Is(err, cluster.ErrNoWorld) {
		t.Fatalf("no such world: %v", err)
	}

	// b dies: its lines are lost, and a new line goes to a once it has room.
	bWorlds := b.node.Worlds()
	wc.kill(b)
	select {
	case l := <-losses:
		if l.Node != "b" || !slices.Equal(l.Worlds, bWorlds) {
			t.Fatalf("loss %+v, want b's worlds %v", l, bWorlds)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b's death not reported")
	}
	for _, w := range a.node.Worlds() {
		ew, _ := a.srv.World(w)
		ew.Close()
	}
	waitFor(t, "a to free its lines", func() bool { return len(dir.Lines("field")) == 0 })
	r.Player = "p10"
	p, err = cluster.JoinWorld(ctx, lnc, dir, r, fast)
	if err != nil || p.Node != "a" {
		t.Fatalf("after b died: %+v, %v", p, err)
	}
}

// TestWorldLinesAtOnce joins players to a full map all at once, as a
// portal does when a crowd walks in: the joins of one process open each
// new line once, on one node, and fill it before the next.
func TestWorldLinesAtOnce(t *testing.T) {
	wc := newWorldCluster(t)
	lnc, err := nats.Connect(wc.nats)
	if err != nil {
		t.Fatal(err)
	}
	defer lnc.Close()
	dir, err := cluster.Watch(lnc, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	a, b := wc.add("a", 20), wc.add("b", 20)
	waitFor(t, "two nodes", func() bool { return slices.Equal(alive(dir), []string{"a", "b"}) })
	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			_, err := cluster.JoinWorld(t.Context(), lnc, dir, cluster.JoinRequest{Map: "rush", Player: fmt.Sprint("p", i), NewLine: cluster.WorldRequest{Cap: 2}}, fast)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	held := map[string]int{}
	for _, n := range []*worldNode{a, b} {
		for _, w := range n.node.Worlds() {
			held[w]++
		}
	}
	want := map[string]int{"rush~1": 1, "rush~2": 1, "rush~3": 1}
	if !maps.Equal(held, want) {
		t.Fatalf("lines held %v, want each of three once", held)
	}
	for w := range want {
		n := a
		if slices.Contains(b.node.Worlds(), w) {
			n = b
		}
		if got := load(n, w); got != 2 {
			t.Errorf("%s holds %d players, want 2", w, got)
		}
	}
}

// TestWorldTransfer hands players between nodes: the destination gets
// the game's state, the client follows by itself, and a node that dies
// in the middle loses no player and makes none twice.
func TestWorldTransfer(t *testing.T) {
	for _, tc := range []struct {
		name string
		kill string // which node dies as the client dials the destination
	}{{"clean", ""}, {"destination dies", "dest"}, {"source dies", "source"}} {
		t.Run(tc.name, func(t *testing.T) {
			wc := newWorldCluster(t)
			// a has room for the town only, so the cave goes to b.
			ctx := t.Context()
			a := wc.add("a", 5)
			if p, err := cluster.CreateWorld(ctx, a.nc, cluster.WorldRequest{World: "town", Cap: 5}, fast); err != nil || p.Node != "a" {
				t.Fatalf("town: %+v, %v", p, err)
			}
			b := wc.add("b", 10)
			waitFor(t, "b to see a", func() bool { return slices.Equal(alive(b.node.Directory()), []string{"a", "b"}) })
			if p, err := cluster.CreateWorld(ctx, a.nc, cluster.WorldRequest{World: "cave", Cap: 5}, fast); err != nil || p.Node != "b" {
				t.Fatalf("cave: %+v, %v", p, err)
			}
			waitFor(t, "a to see cave", func() bool { _, ok := a.node.Directory().LocateWorld("cave"); return ok })
			p, err := cluster.JoinWorld(ctx, a.nc, a.node.Directory(), cluster.JoinRequest{World: "town", Player: "ann", State: []byte("Ann")}, fast)
			if err != nil {
				t.Fatal(err)
			}
			moves := make(chan engine.Move, 1)
			c, err := engine.Dial(ctx, p.URL, p.Tickets["ann"], wc.client(moves))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			town, _ := a.srv.World("town")
			cave, _ := b.srv.World("cave")
			play(t, "ann in town", func() bool { p, _ := town.Load(); return p == 1 }, c)

			switch tc.kill {
			case "dest":
				wc.onDial = func(url string) {
					if url == b.url {
						wc.kill(b)
					}
				}
			case "source":
				wc.onDial = func(url string) {
					if url == b.url {
						wc.kill(a)
					}
				}
			}
			done := make(chan error, 1)
			if err := town.Transfer("ann", a.node.Destination(cluster.JoinRequest{World: "cave"}), []byte("Ann"), func(err error) { done <- err }); err != nil {
				t.Fatal(err)
			}
			switch tc.kill {
			case "":
				play(t, "the move", func() bool { return len(moves) == 1 }, c)
				if m := <-moves; m != (engine.Move{From: "town", To: "cave", URL: b.url}) {
					t.Fatalf("move %+v", m)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				if tp, _ := town.Load(); tp != 0 {
					t.Fatal("ann is still in town")
				}
				if cp, _ := cave.Load(); cp != 1 {
					t.Fatal("ann is not in the cave")
				}
				// The cave's Arrive hook placed ann at (100, 100), named
				// from the state carried.
				play(t, "a frame of the cave", func() bool { _, ok := c.Interest().Self(); return ok }, c)
				if me, _ := c.Interest().Self(); me.Pos != (interest.Vec{X: 100, Y: 100}) {
					t.Fatalf("ann is at %v in the cave, not where Arrive put her", me.Pos)
				}
				if got := wc.arrived("ann"); got != "b:Ann" {
					t.Fatalf("the state that arrived: %q, want Ann on b", got)
				}
			case "dest":
				// The client cannot reach the cave and says so; the cave's
				// node is declared dead; ann stays in town.
				var err error
				play(t, "the transfer's end", func() bool {
					select {
					case err = <-done:
						return true
					default:
						return false
					}
				}, c)
				if !errors.Is(err, engine.ErrTransfer) {
					t.Fatalf("transfer: %v", err)
				}
				if tp, _ := town.Load(); tp != 1 || c.Target() != "town" {
					t.Fatalf("ann is not in town: %d players, client in %q", tp, c.Target())
				}
			case "source":
				// The town's node is gone, but the client reaches the cave.
				play(t, "the move", func() bool { return len(moves) == 1 }, c)
				if cp, _ := cave.Load(); cp != 1 || c.Target() != "cave" {
					t.Fatalf("ann is not in the cave: %d players, client in %q", cp, c.Target())
				}
			}
		})
	}
}

// TestDuplicateWorldClosed: when two nodes hold a world of one name (two
// requests at the same instant both succeeded), the copy on the node
// whose id sorts last closes if it is empty.
func TestDuplicateWorldClosed(t *testing.T) {
	wc := newWorldCluster(t)
	b := wc.add("b", 10)
	if _, err := cluster.CreateWorld(t.Context(), b.nc, cluster.WorldRequest{World: "x", Cap: 5}, fast); err != nil {
		t.Fatal(err)
	}
	// Node "a" says it holds x too: its heartbeat, sealed as node a seals
	// it (a process of the cluster, with the cluster's secret).
	keys, err := seal.NewKeys(clusterSecret)
	if err != nil {
		t.Fatal(err)
	}
	a, err := keys.NewSender(seal.RoleNode, "a")
	if err != nil {
		t.Fatal(err)
	}
	hb := []byte(fmt.Sprintf(`{"id":"a","instance":%d,"url":"http://a.test:8080","capacity":1,"rooms":0,"gen":0,"interval_ms":25,"players":10,"worlds":[{"name":"x","players":3,"cap":5}]}`, a.Peer().Instance))
	waitFor(t, "b to close its empty copy of x", func() bool {
		b.nc.Publish("tongbu.cluster.ev.hb", a.Seal("tongbu.cluster.ev.hb", hb, time.Now()))
		_, ok := b.srv.World("x")
		return !ok
	})
	waitFor(t, "b to free its room", func() bool { return len(b.node.Worlds()) == 0 })
}

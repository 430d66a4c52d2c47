//go:build !js

package cluster_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/lockstep"
)

// Example is one node of a cluster, an engine.Server in this process, and
// a lobby that asks the cluster for a room: the placement names the node's
// public URL and carries the players' tickets for it.
func Example() {
	ns, err := natstest.Start() // in production: the NATS server every process shares
	if err != nil {
		panic(err)
	}
	defer ns.Shutdown()

	// A game server process: an engine.Server that joins the cluster.
	secret := []byte("shared-by-every-process-of-the-cluster")
	// The cluster's secret seals its messages on NATS; every process of
	// the cluster holds it, players never do.
	opts := &cluster.Options{Secret: []byte("the-cluster-key-of-every-node-and-lobby")}
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	host := func(req cluster.RoomRequest) (map[string]string, error) {
		if _, err := srv.CreateRoom(req.Room, lockstep.Config{Players: len(req.Players)}); err != nil {
			return nil, err
		}
		tickets := map[string]string{}
		for _, p := range req.Players {
			if tickets[p], err = srv.Ticket(p, req.Room, engine.RolePlayer, time.Minute); err != nil {
				return nil, err
			}
		}
		return tickets, nil
	}
	node, err := cluster.Join(nc, cluster.NodeInfo{ID: "eu-1", URL: "https://eu-1.game.example", Capacity: 100}, host, opts)
	if err != nil {
		panic(err)
	}
	defer node.Leave()

	// The lobby, in any process on the same NATS.
	lobby, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer lobby.Close()
	p, err := cluster.CreateRoom(context.Background(), lobby, cluster.RoomRequest{Room: "match-1", Players: []string{"alice", "bob"}}, opts)
	if err != nil {
		panic(err)
	}
	t, _ := engine.ParseTicket(secret, p.Tickets["bob"], time.Now())
	fmt.Println(p.Room, "on", p.Node, "at", p.URL)
	fmt.Println("bob's ticket is for", t.Target)
	// A client now calls engine.Dial(ctx, p.URL, p.Tickets["bob"], nil).

	// Output:
	// match-1 on eu-1 at https://eu-1.game.example
	// bob's ticket is for match-1
}

// ExampleJoinWorld is a node that takes worlds and a lobby that books a
// player's place on a map's lines: the first join opens line 1.
func ExampleJoinWorld() {
	ns, err := natstest.Start()
	if err != nil {
		panic(err)
	}
	defer ns.Shutdown()
	secret := []byte("shared-by-every-process-of-the-cluster")
	// The cluster's secret seals its messages on NATS; every process of
	// the cluster holds it, players never do.
	opts := &cluster.Options{Secret: []byte("the-cluster-key-of-every-node-and-lobby")}
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	noRooms := func(cluster.RoomRequest) (map[string]string, error) { return nil, cluster.ErrFull }
	node, err := cluster.Join(nc, cluster.NodeInfo{ID: "eu-1", URL: "https://eu-1.game.example", Capacity: 1, Players: 2000}, noRooms, opts)
	if err != nil {
		panic(err)
	}
	defer node.Leave()
	// The worlds the cluster places here: the game's hooks and settings.
	node.ServeWorlds(srv, func(req cluster.WorldRequest) (engine.WorldConfig, error) {
		return engine.WorldConfig{Interest: interest.Config{Width: 32, Height: 32}}, nil
	})

	lobby, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer lobby.Close()
	dir, err := cluster.Watch(lobby, opts)
	if err != nil {
		panic(err)
	}
	defer dir.Close()
	for len(dir.Nodes()) == 0 { // the directory hears from the node
		time.Sleep(time.Millisecond)
	}
	p, err := cluster.JoinWorld(context.Background(), lobby, dir, cluster.JoinRequest{
		Map: "town", Player: "alice", NewLine: cluster.WorldRequest{Cap: 500},
	}, opts)
	if err != nil {
		panic(err)
	}
	fmt.Println("alice goes to", p.Room, "on", p.Node)
	// A client now calls engine.Dial(ctx, p.URL, p.Tickets["alice"], nil).

	// Output:
	// alice goes to town~1 on eu-1
}

// ExampleNode_ServeCell is one map cut into two cells, each served by its
// own node: a player walks east over the border, the east cell adopts
// its entity with the game's state of it, and its client switches to the
// connection it opened to the east node while it stood near the border.
func ExampleNode_ServeCell() {
	ns, err := natstest.Start()
	if err != nil {
		panic(err)
	}
	defer ns.Shutdown()
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	secret := []byte("shared-by-every-process-of-the-cluster")
	// The cluster's secret seals its messages on NATS; every process of
	// the cluster holds it, players never do.
	opts := &cluster.Options{Secret: []byte("the-cluster-key-of-every-node-and-lobby")}
	gold := map[interest.ID]int{} // the game's own state of its players, per cell in a real game
	var mu sync.Mutex
	adopted := make(chan string, 1) // on the east cell's worker, as the client switches: printed after
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now(),
		Handover: func(w *interest.World, id interest.ID) []byte {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Appendf(nil, "gold=%d", gold[id])
		},
		Adopt: func(w *interest.World, id interest.ID, state []byte) {
			adopted <- string(state)
		}}
	var nodes []*cluster.Node
	for i, id := range []string{"west-node", "east-node"} {
		srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
		if err != nil {
			panic(err)
		}
		web := httptest.NewServer(srv.Handler())
		defer web.Close()
		go srv.Serve(ctx)
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			panic(err)
		}
		defer nc.Close()
		noRooms := func(cluster.RoomRequest) (map[string]string, error) { return nil, cluster.ErrFull }
		node, err := cluster.Join(nc, cluster.NodeInfo{ID: id, URL: web.URL, Capacity: 1, Players: 100}, noRooms, opts)
		if err != nil {
			panic(err)
		}
		defer node.Leave()
		node.ServeWorlds(srv, func(cluster.WorldRequest) (engine.WorldConfig, error) { return engine.WorldConfig{}, cluster.ErrFull })
		join := func(w *interest.World, player string) (interest.ID, error) { // by the border, in the west cell
			at := interest.Vec{X: 3600, Y: 2048}
			id, err := w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player})
			mu.Lock()
			gold[id] = 12
			mu.Unlock()
			return id, err
		}
		if _, err := node.ServeCell(m, i, engine.WorldConfig{Join: join, MaxPlayers: 100}); err != nil {
			panic(err)
		}
		nodes = append(nodes, node)
	}
	dir := nodes[0].Directory()
	for {
		_, west := dir.LocateWorld(cluster.CellName("wild", 0))
		_, east := dir.LocateWorld(cluster.CellName("wild", 1))
		if west && east {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	lobby, err := nats.Connect(ns.ClientURL())
	if err != nil {
		panic(err)
	}
	defer lobby.Close()
	p, err := cluster.JoinWorld(ctx, lobby, dir, cluster.JoinRequest{World: cluster.CellName("wild", 0), Player: "alice"}, opts)
	if err != nil {
		panic(err)
	}
	moved := ""
	c, err := engine.Dial(ctx, p.URL, p.Tickets["alice"], &engine.ClientConfig{IncludeLoopback: true,
		OnMove: func(mv engine.Move) { moved = mv.To }})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	walking := false
	for moved == "" {
		if err := c.Update(time.Now()); err != nil {
			panic(err)
		}
		c.Interest().Advance(time.Now())
		if _, ok := c.Interest().Self(); ok && !walking {
			walking = c.Interest().Move(interest.Vec{X: 5000, Y: 2048}, 48) == nil // east, over the border at 4096
		}
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Printf("the east cell adopted the player with %q\n", <-adopted)
	fmt.Println("alice's client moved to", moved)
	// Output:
	// the east cell adopted the player with "gold=12"
	// alice's client moved to wild#1
}

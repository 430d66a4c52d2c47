//go:build !js

package cluster_test

import (
	"context"
	"fmt"
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
	node, err := cluster.Join(nc, cluster.NodeInfo{ID: "eu-1", URL: "https://eu-1.game.example", Capacity: 100}, host, nil)
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
	p, err := cluster.CreateRoom(context.Background(), lobby, cluster.RoomRequest{Room: "match-1", Players: []string{"alice", "bob"}}, nil)
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
	node, err := cluster.Join(nc, cluster.NodeInfo{ID: "eu-1", URL: "https://eu-1.game.example", Capacity: 1, Players: 2000}, noRooms, nil)
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
	dir, err := cluster.Watch(lobby, nil)
	if err != nil {
		panic(err)
	}
	defer dir.Close()
	for len(dir.Nodes()) == 0 { // the directory hears from the node
		time.Sleep(time.Millisecond)
	}
	p, err := cluster.JoinWorld(context.Background(), lobby, dir, cluster.JoinRequest{
		Map: "town", Player: "alice", NewLine: cluster.WorldRequest{Cap: 500},
	}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("alice goes to", p.Room, "on", p.Node)
	// A client now calls engine.Dial(ctx, p.URL, p.Tickets["alice"], nil).

	// Output:
	// alice goes to town~1 on eu-1
}

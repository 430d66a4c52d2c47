//go:build !js

package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"

	"github.com/tongbu/tongbu/lockstep"
)

// Example is one node of a cluster, an engine.Server in this process, and
// a lobby that asks the cluster for a room: the placement names the node's
// public URL and carries the players' tickets for it.
func Example() {
	// The NATS server every process of the cluster shares; interop/cluster
	// runs this example against a real one.
	url := nats.DefaultURL

	// The cluster's secret seals every message on NATS: every process of
	// the cluster holds it (nodes, lobbies), players never do. The ticket
	// secret is the one the engine signs tickets with.
	opts := &cluster.Options{Secret: []byte("the-cluster-key-of-every-node-and-lobby")}
	secret := []byte("shared-by-every-process-of-the-cluster")

	// A game server process: an engine.Server that joins the cluster.
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	nc, err := nats.Connect(url)
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
	lobby, err := nats.Connect(url)
	if err != nil {
		panic(err)
	}
	defer lobby.Close()
	p, err := cluster.CreateRoom(context.Background(), lobby, cluster.RoomRequest{Room: "match-1", Players: []string{"alice", "bob"}}, opts)
	if err != nil {
		panic(err)
	}
	t, _ := engine.ParseTicket(secret, p.Tickets["bob"], time.Now())
	fmt.Println(p.Room, "on", p.Node, "at", p.URL) // match-1 on eu-1 at https://eu-1.game.example
	fmt.Println("bob's ticket is for", t.Target)   // bob's ticket is for match-1
	// A client now calls engine.Dial(ctx, p.URL, p.Tickets["bob"], nil).
}

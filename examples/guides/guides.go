//go:build !js

// Package guides is the guides' code (docs/*.md), compiled: each region
// between a "// GUIDE:<name>" line and "// GUIDE:end" is a Go block of a
// guide, verbatim but for one tab of indentation (TestGuideExcerpts), so
// that what a reader copies compiles. The functions around the regions
// give the blocks the names they take from their guide's prose.
package guides

import (
	"context"
	"time"

	"github.com/tongbu/tongbu/lockstep"

	"github.com/nats-io/nats.go"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/matchmaker"
)

// worldsJoin is a lobby booking a player's first place (docs/worlds.md).
func worldsJoin(ctx context.Context, nc *nats.Conn, clusterSecret []byte, id string) (cluster.Placement, error) {
	// GUIDE:worlds-join
	opts := &cluster.Options{Secret: clusterSecret} // the nodes' secret: $TONGBU_CLUSTER_SECRET, else their $TONGBU_SECRET
	dir, err := cluster.Watch(nc, opts)             // nc: the lobby's connection to the cluster's NATS
	p, err := cluster.JoinWorld(ctx, nc, dir, cluster.JoinRequest{
		Map: "town", Player: id, NewLine: cluster.WorldRequest{Cap: 500},
	}, opts)
	// the client dials p.URL with p.Tickets[id]
	// GUIDE:end
	return p, err
}

// worldsTransfer sends a player of world w to the dungeon, wherever it
// runs (docs/worlds.md).
func worldsTransfer(w *engine.World, node *cluster.Node, player string, state []byte) error {
	// GUIDE:worlds-transfer
	w.Transfer(player, node.Destination(cluster.JoinRequest{World: "dungeon"}), state, func(err error) {
		// nil: the player is in the dungeon, and has left w; else it stayed here
	})
	// GUIDE:end
	return nil
}

// worldsCells serves cell 0 of a map cut in two (docs/worlds.md).
func worldsCells(node *cluster.Node, cfg interest.Config, start time.Time, cellConfig cluster.CellMaker) (*engine.World, error) {
	cellConfig0, _ := cellConfig(0)
	// GUIDE:worlds-cells
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: cfg, Start: start} // the same on every node
	err := node.HostCells(m, cellConfig)                                             // any cell of m may move here (a drain, a crash)
	w, err := node.ServeCell(m, 0, cellConfig0)                                      // this node runs cell 0 (cellConfig0, _ := cellConfig(0))
	// GUIDE:end
	return w, err
}

// interestLoop is a game's render loop in interest mode
// (docs/interest.md).
func interestLoop(client *engine.Client, renderTicks <-chan time.Time, draw func(interest.ID, float64, float64, float64),
	clicked, pressed bool, dest interest.Vec, speed int32, fireball uint16, target interest.ID) {
	// GUIDE:interest-loop
	c := client.Interest() // an interest.Client
	drawn := make([]interest.Drawn, 0, 256)
	for now := range renderTicks { // 60 times a second
		client.Update(now)               // receive and send (an engine.Client)
		c.Advance(now)                   // the world's frame, now
		drawn = c.Render(now, drawn[:0]) // where to draw everyone, yourself included
		for _, d := range drawn {
			draw(d.ID, d.X, d.Y, d.Heading)
		}
		if clicked {
			c.Move(dest, speed) // moves your character at once; the world validates it
		}
		if pressed {
			c.Skill(fireball, target) // the world is told what you saw when you cast it
		}
	}
	// GUIDE:end
}

// interestGroups declares a game's own fields and uses them
// (docs/interest.md).
func interestGroups(w *interest.World, c *interest.Client, id interest.ID, buffMask, stacks int64) ([]int64, bool) {
	// GUIDE:interest-groups
	cfg := interest.Config{Groups: []interest.Group{
		{Name: "buffs", Every: time.Second, Fields: []interest.Field{{Name: "mask", Bits: 32}, {Name: "stacks", Bits: 8, Signed: true}}},
		{Name: "guild", Fields: []interest.Field{{Name: "id", Bits: 24}, {Name: "rank", Bits: 4}}}, // on change
		{Name: "gear", Request: true, Fields: []interest.Field{{Name: "score", Bits: 16}}},         // an inspect window
	}}
	w.SetGroup(id, 0, buffMask, stacks) // on the server (through engine.World.Do)
	vals, ok := c.Group(id, 0)          // on the client: what it last heard
	c.RequestGroup(id, 2)               // the inspect window opens
	// GUIDE:end
	_ = cfg
	return vals, ok
}

// matchmakingQueue is a lobby queueing a party (docs/matchmaking.md).
func matchmakingQueue(ctx context.Context, nc *nats.Conn, clusterSecret []byte, annRating, boRating matchmaker.Rating, rtts map[string]int) (matchmaker.Assignment, error) {
	// GUIDE:matchmaking-queue
	q, _ := matchmaker.NewQueue(nc, &matchmaker.Options{Secret: clusterSecret}) // in the lobby, on the cluster's NATS
	w, _ := q.Submit(matchmaker.Ticket{
		Mode:    "5v5",
		Build:   "1.4.2",
		Players: []matchmaker.Player{{ID: "ann", Rating: annRating}, {ID: "bo", Rating: boRating}}, // a party
		RTT:     rtts,                                                                              // measured by the client, below
	})
	a, err := w.Await(ctx) // a.URL, a.Tickets["ann"], a.Team, a.Region
	// GUIDE:end
	return a, err
}

// matchmakingPing measures the regions a client may play in
// (docs/matchmaking.md).
func matchmakingPing(ctx context.Context) map[string]int {
	// GUIDE:matchmaking-ping
	pings, _ := engine.MeasureRegions(ctx, []engine.RegionNode{
		{Region: "eu-west", URL: "https://eu1.game.example"}, {Region: "us-east", URL: "https://us1.game.example"},
	}, nil) // each: RTT, Jitter, Loss, and Over ("udp" or "http")
	rtts := engine.RegionRTTs(pings) // map[string]int{"eu-west": 24, "us-east": 95}
	// GUIDE:end
	return rtts
}

// lockstepRoom makes a room and a ticket for it (docs/lockstep.md).
func lockstepRoom(secret []byte) (*engine.Server, *engine.Room, string, error) {
	// GUIDE:lockstep-room
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: ":3478"})
	room, err := srv.CreateRoom("duel-1", lockstep.Config{Players: 2, Hz: 60, InputBytes: 2, Fill: lockstep.FillRepeat})
	ticket, err := srv.Ticket("ann", "duel-1", engine.RolePlayer, time.Minute) // the lobby hands it to ann's client
	// GUIDE:end
	return srv, room, ticket, err
}

// lockstepGame is what lockstepStep runs: a room's simulation that a
// room can also snapshot.
type lockstepGame interface {
	lockstep.Snapshotter
}

// lockstepStep is one render tick of a buffered lockstep client
// (docs/lockstep.md).
func lockstepStep(c *engine.Client, now time.Time, game lockstepGame, draw func(lockstepGame, float64), showWaiting func([]int)) error {
	// GUIDE:lockstep-step
	step := c.Lockstep().Advance(now)
	if step.Snapshot != nil { // a room that runs the game caught this client up from a snapshot
		if err := game.Restore(step.Snapshot); err != nil {
			return err
		}
	}
	for _, f := range step.Frames {
		game.Step(f) // every player's inputs for the frame, in slot order
	}
	if !step.CatchingUp { // a late joiner runs the match so far without drawing it
		draw(game, step.Alpha) // Alpha: how far between the last frame and the next
	}
	if len(step.WaitingFor) > 0 { // a strict room waits for these slots
		showWaiting(step.WaitingFor)
	}
	// GUIDE:end
	return nil
}

// lockstepRollback is one render tick of a predicting client
// (docs/lockstep.md).
func lockstepRollback(c *engine.Client, rb *lockstep.Rollback, game lockstep.RollbackGame, now time.Time, input []byte) error {
	// GUIDE:lockstep-rollback
	if err := c.Receive(now); err != nil { // what arrived; an error once the connection is gone
		return err
	}
	tick := rb.Update(now, input)                       // rb, _ := lockstep.NewRollback(c.Lockstep(), lockstep.RollbackConfig{})
	if err := rb.Run(game, tick.Requests); err != nil { // save, load, step, hash, as the session asks
		return err
	}
	c.Flush(now) // the new frame's input leaves at once
	// GUIDE:end
	return nil
}

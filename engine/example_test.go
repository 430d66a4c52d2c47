//go:build !js

package engine_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"sync"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

var secret = []byte("share-this-with-your-game-server")

// Example is a lockstep relay server: one room of two players at 15 frames
// a second, served over HTTP (signaling) and one UDP port (WebRTC).
func Example() {
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	if _, err := srv.CreateRoom("match-1", lockstep.Config{Players: 2, Hz: 15}); err != nil {
		panic(err)
	}
	web := httptest.NewServer(srv.Handler()) // in production: http.ListenAndServe(":8080", srv.Handler())
	defer web.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go srv.Serve(ctx) // until ctx is done, then a graceful shutdown

	// The game server hands each player a ticket.
	ticket, _ := srv.Ticket("alice", "match-1", engine.RolePlayer, time.Minute)
	c, err := engine.Dial(ctx, web.URL, ticket, &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println(c.Mode(), c.Target(), "slot", c.Slot())
	// Output: lockstep match-1 slot 0
}

// ExampleServer_CreateWorld hosts an interest world: the game spawns each
// joining player where it likes and runs its NPCs in the Tick hook. Here
// the player is an in-process bot on an in-memory connection (Attach).
func ExampleServer_CreateWorld() {
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	var guard interest.ID
	_, err = srv.CreateWorld("field", engine.WorldConfig{
		Interest: interest.Config{Width: 16, Height: 16}, // 16 x 16 regions of 1024 units
		Join: func(w *interest.World, player string) (interest.ID, error) {
			at := interest.Vec{X: 8000, Y: 8000}
			return w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player})
		},
		Tick: func(w *interest.World, now time.Time) { // the game's logic, on the world's worker
			if guard == 0 {
				at := interest.Vec{X: 8100, Y: 8000}
				guard, _ = w.Spawn(interest.NPC, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: "guard"})
			}
		},
	})
	if err != nil {
		panic(err)
	}

	client, server := memnet.New(1).Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	ticket, _ := srv.Ticket("alice", "field", engine.RolePlayer, time.Minute)
	if err := srv.Attach(server, ticket); err != nil {
		panic(err)
	}
	c, err := engine.NewClient(context.Background(), client)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(time.Second / 60) {
		c.Update(time.Now())
		c.Interest().Advance(time.Now())
	}
	c.Interest().Each(func(id interest.ID, v interest.View) {
		if d, ok := c.Interest().Display(id); ok {
			fmt.Println("knows", d.Name)
		}
	})
	// Output: knows guard
}

// ExampleDial is a bot: it dials a room with its ticket and plays, sending
// one input a frame, until frame 30.
func ExampleDial() {
	srv, _ := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	srv.CreateRoom("r", lockstep.Config{Players: 1, Hz: 30})
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go srv.Serve(ctx)
	ticket, _ := srv.Ticket("bot-1", "r", engine.RolePlayer, time.Minute)

	c, err := engine.Dial(ctx, web.URL, ticket, &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	played, inputFor := 0, -1
	for played < 30 {
		now := time.Now()
		if inputFor != played { // an input a frame, not one a render tick
			c.Lockstep().Input(now, []byte("fire"))
			inputFor = played
		}
		if err := c.Update(now); err != nil { // receive, and send the uplink when due
			panic(err)
		}
		for _, f := range c.Lockstep().Advance(now).Frames { // the frames to simulate now
			played = f.Number + 1
		}
		time.Sleep(time.Second / 60) // a render tick
	}
	fmt.Println("played", played, "frames")
	// Output: played 30 frames
}

// ExampleWorld_Transfer moves a player through a portal from one world to
// another of the same server, carrying the game's state of it. The client
// follows by itself (ClientConfig.OnMove tells the game); a destination
// on another process comes from package cluster (Node.Destination).
func ExampleWorld_Transfer() {
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		panic(err)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	go srv.Serve(ctx)
	town, _ := srv.CreateWorld("town", engine.WorldConfig{Interest: interest.Config{Width: 8, Height: 8}})
	cave, _ := srv.CreateWorld("cave", engine.WorldConfig{
		Interest:   interest.Config{Width: 4, Height: 4},
		MaxPlayers: 20,
		// A player who comes through a transfer starts with what it carried.
		Arrive: func(w *interest.World, player string, state []byte) (interest.ID, error) {
			fmt.Printf("%s arrives with %q\n", player, state)
			at := interest.Vec{X: 100, Y: 100}
			return w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player})
		},
	})

	ticket, _ := srv.Ticket("alice", "town", engine.RolePlayer, time.Minute)
	moved := false
	c, err := engine.Dial(ctx, web.URL, ticket, &engine.ClientConfig{IncludeLoopback: true,
		OnMove: func(m engine.Move) { fmt.Println("client moved from", m.From, "to", m.To); moved = true }})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	town.Transfer("alice", cave.Destination(), []byte("hp=87 gold=12"), func(err error) { done <- err })
	for !moved {
		if err := c.Update(time.Now()); err != nil {
			panic(err)
		}
		time.Sleep(time.Millisecond)
	}
	fmt.Println("transfer:", <-done)
	// Output:
	// alice arrives with "hp=87 gold=12"
	// client moved from town to cave
	// transfer: <nil>
}

// ExampleClientConfig_onConnection follows a connection that the client
// resumes by itself when the player's network changes: the game shows a
// notice while it is away, takes the mode's client again when it is back
// (a lockstep client catches up from the match's start: restart the
// simulation from its frames), and goes to its menu when it is lost.
func ExampleClientConfig_onConnection() {
	var ls *lockstep.Client
	var c *engine.Client
	cfg := &engine.ClientConfig{OnConnection: func(e engine.ConnectionEvent) {
		switch e.State {
		case engine.Reconnecting:
			fmt.Println("connection lost, reconnecting:", e.Err)
		case engine.Resumed:
			ls = c.Lockstep() // the resumed connection's
			fmt.Printf("back after %v\n", e.Away.Round(time.Millisecond))
		case engine.Lost:
			fmt.Println("could not reconnect:", e.Err)
		}
	}}
	c, err := engine.Dial(context.Background(), "https://eu-1.game.example", "ticket from the game server", cfg)
	if err != nil {
		return
	}
	ls = c.Lockstep()
	for now := range time.Tick(time.Second / 60) {
		if err := c.Update(now); err != nil { // Lost: the error says why
			return
		}
		ls.Advance(now)
	}
}

// ExampleServer_Kick ends a player's access: its connection is told why
// and closed, and the resume credentials it was given, like any ticket
// issued before the kick, are refused from then on.
func ExampleServer_Kick() {
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(context.Background())
	if _, err := srv.CreateWorld("field", engine.WorldConfig{}); err != nil {
		panic(err)
	}
	client, server := memnet.New(1).Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	ticket, _ := srv.Ticket("mallory", "field", engine.RolePlayer, time.Minute)
	spare, _ := srv.Ticket("mallory", "field", engine.RolePlayer, time.Minute)
	if err := srv.Attach(server, ticket); err != nil {
		panic(err)
	}
	c, err := engine.NewClient(context.Background(), client)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	fmt.Println("connections ended:", srv.Kick("mallory", "speed hack"))
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if err = c.Update(time.Now()); err != nil {
			break
		}
	}
	fmt.Println(err)
	again, server2 := memnet.New(2).Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	defer again.Close()
	fmt.Println(errors.Is(srv.Attach(server2, spare), engine.ErrKicked))
	// Output:
	// connections ended: 1
	// engine: closed by server: kicked: speed hack
	// true
}

// A room's standby continues its match on another server (here, in the
// same process): the first server's room feeds its frames and seats to
// the standby's copy, and when the first server stops, the second
// restores the room from that copy, on the original schedule.
func ExampleServer_RestoreRoom() {
	first, _ := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	second, _ := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true}) // the same secret: the players' credentials admit there
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go first.Serve(ctx)
	go second.Serve(ctx)

	cfg := lockstep.Config{Players: 2, Hz: 30, Start: lockstep.StartAtOnce}
	room, _ := first.CreateRoom("duel", cfg)
	var mu sync.Mutex
	var copyOf engine.RoomState // what a standby keeps (package cluster streams it over NATS)
	room.Feed(engine.RoomFeed{
		Frame: func(start time.Time, f lockstep.EncodedFrame) {
			mu.Lock()
			defer mu.Unlock()
			f.Full = append([]byte(nil), f.Full...) // the room's bytes are valid only during the call
			copyOf.Start, copyOf.Frames = start, append(copyOf.Frames, f)
		},
		Seat: func(s engine.SeatRecord) {
			mu.Lock()
			defer mu.Unlock()
			copyOf.Seats = append(copyOf.Seats, s)
		},
	})
	time.Sleep(200 * time.Millisecond) // the match goes on a moment
	first.Shutdown(context.Background())

	mu.Lock()
	st := copyOf
	mu.Unlock()
	restored, err := second.RestoreRoom("duel", cfg, st)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("continued:", restored.Name(), len(st.Frames) > 0)
	// Output: continued: duel true
}

// ExampleMeasureRegions measures a player's round trips to the regions
// it could play in (here one node, on this machine), for its lobby to
// put in its matchmaking ticket.
func ExampleMeasureRegions() {
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Shutdown(context.Background())
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pings, err := engine.MeasureRegions(ctx, []engine.RegionNode{{Region: "local", URL: web.URL}}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range pings {
		fmt.Printf("%s over %s: under 50 ms %v, loss %.0f%%\n", p.Region, p.Over, p.RTT < 50*time.Millisecond, 100*p.Loss)
	}
	rtts := engine.RegionRTTs(pings) // matchmaker.Ticket.RTT
	fmt.Println(len(rtts), "region")
	// Output:
	// local over udp: under 50 ms true, loss 0%
	// 1 region
}

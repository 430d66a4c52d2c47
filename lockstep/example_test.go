package lockstep_test

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// wire connects a room to its clients directly: what the room sends to a
// slot is delivered to that client at once.
type wire struct {
	clients []*lockstep.Client
	now     *time.Time
}

func (w wire) SendUnreliable(slot int, msg []byte) error {
	return w.clients[slot].Deliver(*w.now, msg)
}

func (w wire) SendReliable(slot int, msg []byte) error { return w.SendUnreliable(slot, msg) }

// Example runs a two-player room for a second: each player sends an input,
// the room cuts frames at 15 Hz, and each client plays the frames out.
func Example() {
	cfg := lockstep.Config{Players: 2, Hz: 15}
	start := time.Unix(0, 0)
	now := start
	var clients []*lockstep.Client
	for slot := range cfg.Players {
		c, _ := lockstep.NewClient(cfg, slot)
		clients = append(clients, c)
	}
	room, _ := lockstep.NewRoom(cfg, start, wire{clients, &now})

	clients[0].Input(now, []byte("jump"))
	clients[1].Input(now, []byte("duck"))
	played := 0
	for now = start; now.Before(start.Add(time.Second)); now = now.Add(time.Second / 60) {
		for slot, c := range clients { // every render tick: send, then play
			room.Deliver(slot, c.Packet(now), now)
		}
		room.Tick(now)
		for _, f := range clients[0].Advance(now).Frames {
			for slot, s := range f.Slots {
				if !s.MadeUp {
					fmt.Printf("frame %d: player %d %s\n", f.Number, slot, s.Inputs[0])
				}
			}
			played++
		}
	}
	fmt.Println("frames played:", played, "of", room.NextFrame())
	// Output:
	// frame 2: player 0 jump
	// frame 2: player 1 duck
	// frames played: 15 of 15
}

// Example_verifiedRoom runs a three-player room that verifies game events
// (seed 001 section 6.5): every client reports the goals its simulation
// sees; player 2's client claims a goal of its own that never happened.
// The room names it, and the match result holds the goals the majority
// agreed on.
func Example_verifiedRoom() {
	cfg := lockstep.Config{Players: 3, Hz: 15, VerifyEvents: true}
	start := time.Unix(0, 0)
	now := start
	var clients []*lockstep.Client
	for slot := range cfg.Players {
		c, _ := lockstep.NewClient(cfg, slot)
		clients = append(clients, c)
	}
	room, _ := lockstep.NewRoom(cfg, start, wire{clients, &now})

	clients[0].Input(now, []byte("shoot"))
	for now = start; now.Before(start.Add(3 * time.Second)); now = now.Add(time.Second / 60) {
		for slot, c := range clients {
			room.Deliver(slot, c.Packet(now), now)
			for _, msg := range c.Outbox() { // events ride on the reliable channel
				room.Deliver(slot, msg, now)
			}
		}
		room.Tick(now)
		for slot, c := range clients {
			for _, f := range c.Advance(now).Frames {
				for shooter, s := range f.Slots {
					if !s.MadeUp && string(s.Inputs[0]) == "shoot" {
						c.ReportEvent(f.Number, fmt.Appendf(nil, "goal by %d", shooter))
						if slot == 2 {
							c.ReportEvent(f.Number, []byte("goal by 2")) // the tampered client
						}
					}
				}
			}
		}
	}
	for _, e := range room.Events() {
		fmt.Printf("%s at frame %d: players %v\n", e.Kind, e.Frame, e.Players)
	}
	res := room.Result()
	for _, e := range res.Events {
		fmt.Printf("agreed at frame %d: %s\n", e.Frame, e.Data)
	}
	fmt.Println("player 2 disagreed in", res.Players[2].Disagreed, "frame(s)")
	// Output:
	// verdict at frame 2: players [2]
	// agreed at frame 2: goal by 0
	// player 2 disagreed in 1 frame(s)
}

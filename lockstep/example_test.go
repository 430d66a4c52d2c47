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

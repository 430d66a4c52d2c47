package lockstep_test

import (
	"encoding/binary"
	"errors"
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

// sumGame is the smallest RollbackGame: the sum of every input byte.
type sumGame struct{ frame, sum int64 }

func (g *sumGame) Step(f lockstep.Frame) {
	g.frame++
	for _, s := range f.Slots {
		for _, in := range s.Inputs {
			g.sum += int64(in[0])
		}
	}
}
func (g *sumGame) Hash() uint64 { return uint64(g.frame)<<32 ^ uint64(g.sum) }
func (g *sumGame) SaveState(dst []byte) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(dst, uint64(g.frame)), uint64(g.sum))
}
func (g *sumGame) LoadState(b []byte) error {
	if len(b) != 16 {
		return errors.New("not a sumGame state")
	}
	g.frame, g.sum = int64(binary.LittleEndian.Uint64(b)), int64(binary.LittleEndian.Uint64(b[8:]))
	return nil
}

// Example_rollback plays a 60 Hz room for 3 seconds over a link of 50 ms
// each way. Player 0 runs in the prediction mode: its own input counts in
// the next frame it runs, and player 1's is guessed until the room's
// frames arrive; when player 1 changes its input the guess was wrong, and
// the session loads the state before it and runs the frames again.
func Example_rollback() {
	cfg := lockstep.Config{Players: 2, Hz: 60, InputBytes: 1}
	start := time.Unix(0, 0)
	now := start
	const oneWay = 50 * time.Millisecond
	type msg struct {
		at   time.Time
		slot int
		data []byte
	}
	var down []msg
	c0, _ := lockstep.NewClient(cfg, 0)
	c1, _ := lockstep.NewClient(cfg, 1)
	clients := []*lockstep.Client{c0, c1}
	room, _ := lockstep.NewRoom(cfg, start, senderFunc(func(slot int, b []byte) error {
		down = append(down, msg{now.Add(oneWay), slot, append([]byte(nil), b...)})
		return nil
	}))
	session, _ := lockstep.NewRollback(c0, lockstep.RollbackConfig{})
	game := &sumGame{}
	var up []msg
	for tick := 0; tick < 180; tick++ {
		now = start.Add(time.Duration(tick) * time.Second / 60)
		for len(down) > 0 && !down[0].at.After(now) { // what arrived
			clients[down[0].slot].Deliver(now, down[0].data)
			down = down[1:]
		}
		t := session.Update(now, []byte{1}) // player 0 holds 1
		session.Run(game, t.Requests)
		if tick%30 == 0 {
			c1.Input(now, []byte{byte(tick/30 + 2)}) // player 1 changes its input now and then
		}
		up = append(up, msg{now.Add(oneWay), 0, append([]byte(nil), c0.Packet(now)...)},
			msg{now.Add(oneWay), 1, append([]byte(nil), c1.Packet(now)...)})
		for len(up) > 0 && !up[0].at.After(now) {
			room.Deliver(up[0].slot, up[0].data, now)
			up = up[1:]
		}
		room.Tick(now)
	}
	st := session.Stats()
	fmt.Printf("room cut %d frames; player 0 ran %d, %d of them confirmed\n", room.NextFrame(), session.Present(), session.Confirmed())
	fmt.Printf("rollbacks %d, deepest %d frames, %d frames run again\n", st.Rollbacks, st.MaxDepth, st.Resimulated)
	// Output:
	// room cut 180 frames; player 0 ran 184, 177 of them confirmed
	// rollbacks 32, deepest 7 frames, 141 frames run again
}

// senderFunc is a room's Sender from a function.
type senderFunc func(slot int, msg []byte) error

func (f senderFunc) SendUnreliable(slot int, msg []byte) error { return f(slot, msg) }
func (f senderFunc) SendReliable(slot int, msg []byte) error   { return f(slot, msg) }

// Example_strictRoom runs a strict two-player room: player 1's game stops
// sending for a second (a stalled process), so the room cuts only the few
// frames player 1 had already sealed and then waits, and player 0 is told
// whom it waits for; when player 1 is back, play goes on where it
// stopped: in 3 s, 2 s of frames and those few.
func Example_strictRoom() {
	cfg := lockstep.Config{Players: 2, Hz: 15, Strict: true}
	start := time.Unix(0, 0)
	now := start
	var clients []*lockstep.Client
	for slot := range cfg.Players {
		c, _ := lockstep.NewClient(cfg, slot)
		clients = append(clients, c)
	}
	room, _ := lockstep.NewRoom(cfg, start, wire{clients, &now})

	told := false
	for now = start; now.Before(start.Add(3 * time.Second)); now = now.Add(time.Second / 60) {
		stalled := now.After(start.Add(time.Second)) && now.Before(start.Add(2*time.Second))
		for slot, c := range clients {
			if slot == 1 && stalled {
				continue
			}
			room.Deliver(slot, c.Packet(now), now)
		}
		room.Tick(now)
		st := clients[0].Advance(now)
		if len(st.WaitingFor) > 0 && !told {
			fmt.Println("waiting for player", st.WaitingFor[0])
			told = true
		}
	}
	fmt.Println("frames cut in 3 s:", room.NextFrame())
	// Output:
	// waiting for player 1
	// frames cut in 3 s: 33
}

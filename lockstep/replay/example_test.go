package replay_test

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// Example records ten seconds of a two-player match of the movers test
// game, reads the replay back and re-runs it: the game reaches every
// hash the players reported.
func Example() {
	cfg := lockstep.Config{Players: 2, Hz: 15, HashEvery: 15}.WithDefaults()
	start := time.Unix(1700000000, 0)
	now := start
	var clients []*lockstep.Client
	room, _ := lockstep.NewRoom(cfg, start, directSender{&clients, &now})

	// The room records the match into a file (here, memory) as it plays.
	var file bytes.Buffer
	w, err := replay.NewWriter(&file, replay.Header{Game: movers.Name, Config: cfg, Start: start, Players: []string{"ann", "bob"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	room.Record(w)

	var games []*movers.Game
	for slot := range cfg.Players {
		c, _ := lockstep.NewClient(cfg, slot)
		clients = append(clients, c)
		g, _ := movers.New(cfg.Players, nil)
		games = append(games, g)
	}
	for tick := range 300 { // ten seconds of render ticks at 30 Hz
		now = start.Add(time.Duration(tick) * time.Second / 30)
		for slot, c := range clients { // every render tick: steer, send, then play
			if tick%10 == 0 {
				c.Input(now, []byte{byte(tick * (slot + 1)), 16}) // heading, speed
			}
			room.Deliver(slot, c.Packet(now), now)
		}
		room.Tick(now)
		for slot, c := range clients {
			for _, f := range c.Advance(now).Frames {
				games[slot].Step(f)
				if f.Number%cfg.HashEvery == 0 { // the room compares the players' hashes
					c.ReportHash(f.Number, games[slot].Hash())
				}
			}
			for _, m := range c.Outbox() {
				room.Deliver(slot, m, now)
			}
		}
	}
	w.Close()

	// Read it back and re-run it: a program finds the game's simulation by
	// the name in the header, among the games it registered.
	var known replay.Games
	movers.Register(&known)
	r, err := replay.NewReader(&file)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := r.Header()
	newGame, _ := known.Lookup(h.Game)
	sim, _ := newGame(h.Config.Players, h.Params)
	res, err := replay.Verify(r, sim)
	fmt.Printf("%s, players %q: %d frames, %d hash checks, %d mismatched, err %v\n",
		h.Game, h.Players, res.Frames, res.Checked, res.Mismatch, err)
	// Output:
	// movers, players ["ann" "bob"]: 150 frames, 10 hash checks, 0 mismatched, err <nil>
}

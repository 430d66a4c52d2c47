package interest_test

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// loopback hands the world's packets straight to one client.
type loopback struct{ c *interest.Client }

func (l loopback) SendUnreliable(_ interest.ID, msg []byte) error {
	return l.c.Deliver(time.Unix(0, 0), msg)
}

func (l loopback) SendReliable(id interest.ID, msg []byte) error { return l.SendUnreliable(id, msg) }

// A world with a player and an NPC near it: after a few frames the
// player's client knows the NPC and has its display data on request.
func Example() {
	cfg := interest.Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	lb := &loopback{}
	w, _ := interest.NewWorld(cfg, start, lb)

	player, _ := w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 1000, Y: 1000}, Life: 100}, interest.Display{Name: "you"})
	npc, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 1500, Y: 900}, Life: 80}, interest.Display{Name: "wolf"})
	_ = w.Join(player)
	lb.c, _ = interest.NewClient(cfg, player)

	for n := 1; n <= 4; n++ {
		now := start.Add(time.Duration(n) * w.Config().Period())
		w.Tick(now)
		lb.c.Advance(now)
		if pkt := lb.c.Packet(now); pkt != nil {
			_ = w.Deliver(player, pkt) // acknowledgements and display requests
		}
	}
	v, ok := lb.c.Entity(npc)
	fmt.Println(ok, v.Kind, v.Logic.Pos, v.Logic.Life, v.Display.Name)
	// Output: true npc {1500 900} 80 wolf
}

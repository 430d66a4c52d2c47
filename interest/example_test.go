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

// timedLoopback hands the world's packets straight to one client, at the
// time the example sets.
type timedLoopback struct {
	c   *interest.Client
	now time.Time
}

func (l *timedLoopback) SendUnreliable(_ interest.ID, msg []byte) error {
	return l.c.Deliver(l.now, msg)
}
func (l *timedLoopback) SendReliable(_ interest.ID, msg []byte) error { return l.c.Deliver(l.now, msg) }

// A wolf walks east at 40 units a frame; the player's client draws it two
// frames (125 ms) behind the world, between frames, and itself at once.
func ExampleClient_Render() {
	cfg := interest.Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	lb := &timedLoopback{now: start}
	w, _ := interest.NewWorld(cfg, start, lb)
	player, _ := w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 1000, Y: 1000}, Life: 100}, interest.Display{})
	wolf, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 1500, Y: 900}, Life: 80}, interest.Display{})
	_ = w.Join(player)
	lb.c, _ = interest.NewClient(cfg, player)
	lb.c.SetRender(interest.RenderOptions{Delay: 125 * time.Millisecond}) // fixed here; learned by default

	_ = w.Move(wolf, interest.Vec{X: 3000, Y: 900}, 40)
	var drawn []interest.Drawn
	for tick := 1; tick <= 32; tick++ { // 60 render ticks a second for about half a second
		lb.now = start.Add(time.Duration(tick) * time.Second / 60)
		if !lb.now.Before(w.NextFrame()) {
			w.Tick(lb.now)
		}
		lb.c.Advance(lb.now)
		drawn = lb.c.Render(lb.now, drawn[:0])
	}
	fmt.Printf("world frame %d, drawn at frame %.2f\n", w.Frame(), lb.c.RenderFrame())
	for _, d := range drawn {
		fmt.Printf("entity %d at (%.0f, %.0f), moving %v\n", d.ID, d.X, d.Y, d.Moving)
	}
	_ = player
	// Unordered output:
	// world frame 8, drawn at frame 6.44
	// entity 2 at (1758, 900), moving true
	// entity 1 at (1000, 1000), moving false
}

// The game's skill handler judges a skill's range by where the player
// saw its target (lag compensation): World.Reach measures from where the
// player stood at the action's frame to where the target was at its view.
func ExampleWorld_Reach() {
	cfg := interest.Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	lb := &timedLoopback{now: start}
	w, _ := interest.NewWorld(cfg, start, lb)
	player, _ := w.Spawn(interest.Player, interest.Logic{Pos: interest.Vec{X: 1000, Y: 1000}, Life: 100}, interest.Display{})
	wolf, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 1500, Y: 1000}, Life: 80}, interest.Display{})
	_ = w.Join(player)
	lb.c, _ = interest.NewClient(cfg, player)
	lb.c.SetRender(interest.RenderOptions{Delay: 250 * time.Millisecond})

	const bite = 600 // the skill's range
	w.OnAction(func(a interest.Action) {
		d, _ := w.Reach(a, a.Target)
		now, _ := w.Logic(a.Target)
		fmt.Printf("skill %d at frame %d, seen at frame %.2f: %.0f units away then (in range %v), %d now\n",
			a.Skill, a.Frame, a.View, d, d <= bite, now.Pos.X-1000)
	})
	_ = w.Move(wolf, interest.Vec{X: 3000, Y: 1000}, 40) // the wolf runs away
	for tick := 1; tick <= 30; tick++ {
		lb.now = start.Add(time.Duration(tick) * time.Second / 60)
		if !lb.now.Before(w.NextFrame()) {
			w.Tick(lb.now)
		}
		lb.c.Advance(lb.now)
		lb.c.Render(lb.now, nil)
		if tick == 22 {
			_ = lb.c.Skill(3, wolf) // the player bites what it sees
		}
		if pkt := lb.c.Packet(lb.now); pkt != nil {
			_ = w.Deliver(player, pkt)
		}
	}
	// Output:
	// skill 3 at frame 5, seen at frame 1.75: 570 units away then (in range true), 700 now
}

package game_test

import (
	"fmt"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// Example runs a two-player game for one second: player 0 walks up and
// holds the trigger aiming at the arena's centre, player 1 is a bot. Every client fed these frames
// prints the same.
func Example() {
	g, err := game.New(2, 2024)
	if err != nil {
		panic(err)
	}
	var r fixed.Rand // the bot driver's own generator
	r.Seed(7)
	start := g.Player(0).Pos
	centre := fixed.V(fixed.FromInt(game.Width/2), fixed.FromInt(game.Height/2))
	fmt.Println("player 0 starts at", start)
	walk := game.Input{MoveY: -1, Fire: true, Aim: game.AimOf(centre.Sub(start))}.Append(nil)
	for range game.Hz {
		bot := game.Bot(g, 1, &r).Append(nil)
		f := lockstep.Frame{Number: g.Frame(), Slots: []lockstep.Slot{
			{Inputs: [][]byte{walk}},
			{Inputs: [][]byte{bot}},
		}}
		if err := g.Step(f); err != nil {
			panic(err)
		}
	}
	p := g.Player(0)
	fmt.Println("frame", g.Frame(), "player 0 at", p.Pos, "health", p.Health, "hits", p.Hits)
	fmt.Println("shots in flight", len(g.Shots(nil)))
	fmt.Printf("hash %016x\n", g.Hash())
	// Output:
	// player 0 starts at (900, 580)
	// frame 15 player 0 at (900, 430) health 100 hits 0
	// shots in flight 4
	// hash 0c42c906c211bd01
}

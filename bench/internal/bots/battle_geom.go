package bots

import (
	"fmt"
	"math/rand/v2"

	"github.com/tongbu/tongbu/interest"
)

// The mass battle's geometry, which the in-memory run (bench/world) and
// the bots share.

// BattlePollHz is how often a battle bot polls its client, as a
// browser's frames would (60 a second): a command is had at the poll
// after it arrives.
const BattlePollHz = 64

// BattleBlock returns the fight's block: the 2 x 2 regions at the map's
// centre, as its lowest and highest positions. Every entity in it is in
// every other's 3x3 range.
func BattleBlock(cfg interest.Config) (lo, hi interest.Vec) {
	rs := int32(cfg.RegionSize)
	cx, cy := int32(cfg.Width/2-1), int32(cfg.Height/2-1)
	return interest.Vec{X: cx * rs, Y: cy * rs}, interest.Vec{X: (cx+2)*rs - 1, Y: (cy+2)*rs - 1}
}

// BattleOutside returns a point 3-4 regions outside the block lo..hi, on
// any side: where a runner waits.
func BattleOutside(rng *rand.Rand, cfg interest.Config, lo, hi interest.Vec) interest.Vec {
	rs := int32(cfg.RegionSize)
	d := 3*rs + rng.Int32N(rs)
	p := randIn(rng, interest.Vec{X: lo.X - d, Y: lo.Y - d}, interest.Vec{X: hi.X + d, Y: hi.Y + d})
	switch rng.IntN(4) { // pushed out to one side
	case 0:
		p.X = lo.X - d
	case 1:
		p.X = hi.X + d
	case 2:
		p.Y = lo.Y - d
	default:
		p.Y = hi.Y + d
	}
	return clampVec(p, interest.Vec{}, cfg.Bounds())
}

// BattleSeat names the battle's player i of fighters fighters: "f<i>"
// for a fighter, "r<i>" for a runner; its camp is i's parity.
func BattleSeat(i, fighters int) string {
	if i < fighters {
		return fmt.Sprintf("f%d", i)
	}
	return fmt.Sprintf("r%d", i)
}

// randIn returns a random position in the rectangle lo..hi.
func randIn(rng *rand.Rand, lo, hi interest.Vec) interest.Vec {
	return interest.Vec{X: lo.X + rng.Int32N(hi.X-lo.X+1), Y: lo.Y + rng.Int32N(hi.Y-lo.Y+1)}
}

// clampVec keeps p inside the rectangle lo..hi.
func clampVec(p, lo, hi interest.Vec) interest.Vec {
	return interest.Vec{X: min(max(p.X, lo.X), hi.X), Y: min(max(p.Y, lo.Y), hi.Y)}
}

// Nearest keeps the nearest to From of the entities it is shown: how a
// battle's fighter picks its target.
type Nearest struct {
	From interest.Vec
	ID   interest.ID // 0 until one was shown
	d    int64
}

// Consider shows n entity id at position at.
func (n *Nearest) Consider(id interest.ID, at interest.Vec) {
	if d := n.From.DistSq(at); n.ID == 0 || d < n.d {
		n.ID, n.d = id, d
	}
}

package game

import (
	"bytes"
	"fmt"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// Bot tuning, in world units.
var (
	botFar      = fixed.FromInt(300) // close in beyond this
	botNear     = fixed.FromInt(150) // back off inside this
	botRange    = fixed.FromInt(ShotSpeed*ShotLife - 60)
	botJitter   = fixed.FromInt(8) // aim error, each axis
	botWatch    = fixed.FromInt(120)
	botDodge    = fixed.FromInt(PlayerRadius + ShotRadius + 10)
	botProbe    = fixed.FromInt(3 * PlayerSpeed)
	botBias     = fixed.FromFraction(3, 10)
	botDodgeMul = fixed.FromInt(2)
)

// Bot returns the input a computer player in slot sends after the game's
// latest frame. It only reads g; all its randomness (aim error) comes from
// r, which belongs to whoever drives the bot, so the bot's choices reach
// the other clients as ordinary inputs and the game stays deterministic
// whatever r is. A slot outside the game gets the zero Input.
//
// The bot chases the nearest living opponent, keeps a middle distance and
// strafes around it, aims where the opponent will be when the shot
// arrives, fires when a wall does not block the shot, sidesteps shots
// heading its way, and steers along walls instead of into them.
func Bot(g *Game, slot int, r *fixed.Rand) Input {
	if slot < 0 || slot >= len(g.players) {
		return Input{}
	}
	me := &g.players[slot]
	in := Input{Aim: me.Aim}
	if !me.Alive {
		return in
	}
	target, best := -1, fixed.MaxValue
	for j := range g.players {
		if j != slot && g.players[j].Alive {
			if d := me.Pos.DistSq(g.players[j].Pos); d < best {
				target, best = j, d
			}
		}
	}
	var want fixed.Vec
	if target < 0 {
		want = fixed.V(arenaW.DivInt(2), arenaH.DivInt(2)).Sub(me.Pos).Normalize()
	} else {
		t := &g.players[target]
		to := t.Pos.Sub(me.Pos)
		dist := to.Len()
		// Lead the target by its last move times the shot's flight time.
		flight := dist.DivInt(ShotSpeed)
		at := t.Pos.Add(t.Vel().Scale(flight))
		at = at.Add(fixed.V(r.Range(botJitter.Neg(), botJitter), r.Range(botJitter.Neg(), botJitter)))
		in.Aim = AimOf(at.Sub(me.Pos))
		clear := ClearShot(me.Pos, t.Pos)
		in.Fire = clear && dist < botRange && t.Shield == 0
		n := to.Normalize()
		switch {
		case !clear || dist > botFar:
			want = n
		case dist < botNear:
			want = n.Neg()
		default: // circle the target, changing sides every few seconds
			want = n.Perp()
			if (g.frame/(3*Hz)+slot)%2 == 1 {
				want = want.Neg()
			}
		}
	}
	want = want.Add(dodge(g, slot, me.Pos))
	// A steady sideways bias per slot breaks ties along walls the same way
	// every frame, so the bot slides around an obstacle instead of dithering.
	side := want.Perp().Scale(botBias)
	if slot%2 == 1 {
		side = side.Neg()
	}
	want = want.Add(side)
	in.MoveX, in.MoveY = steer(me.Pos, want)
	return in
}

// dodge returns a push away from the line of every opponent's shot that is
// about to pass close to pos.
func dodge(g *Game, slot int, pos fixed.Vec) fixed.Vec {
	var push fixed.Vec
	for i := range g.shots {
		s := &g.shots[i]
		if s.Owner == slot {
			continue
		}
		v := AimVec(s.Aim)
		rel := pos.Sub(s.Pos)
		along := rel.Dot(v)
		if along <= 0 || along > botWatch {
			continue // behind it, or far ahead
		}
		p := v.Perp()
		off := rel.Dot(p)
		if off.Abs() >= botDodge {
			continue // will miss
		}
		if off < 0 {
			p = p.Neg()
		}
		push = push.Add(p.Scale(botDodgeMul))
	}
	return push
}

// steer picks the move (one of eight directions, or none) closest to want
// whose path a few frames ahead is clear of walls and the arena's edge.
func steer(pos, want fixed.Vec) (x, y int8) {
	if want.X == 0 && want.Y == 0 {
		return 0, 0
	}
	best := fixed.Zero // never move against want
	for dx := int8(-1); dx <= 1; dx++ {
		for dy := int8(-1); dy <= 1; dy++ {
			if dx == 0 && dy == 0 {
				continue
			}
			dir := moveDir[dx+1][dy+1]
			score := dir.Dot(want)
			if score <= best || blocked(pos.Add(dir.Scale(botProbe))) {
				continue
			}
			best, x, y = score, dx, dy
		}
	}
	return x, y
}

// blocked reports whether a player's circle at p would overlap a wall or
// cross the arena's edge.
func blocked(p fixed.Vec) bool {
	if confine(p, playerR) != p {
		return true
	}
	for i := range walls {
		if _, hit := walls[i].pushOut(p, playerR); hit {
			return true
		}
	}
	return false
}

// Pilot drives a computer player the way a bot client does: it keeps its
// own copy of the game, advanced by the frames its lockstep client plays,
// and after each turn asks Bot what to send. The server hosts a Pilot for
// every slot no person holds.
type Pilot struct {
	g    *Game
	slot int
	r    fixed.Rand
	last []byte
}

// NewPilot returns a pilot for slot of a match of players players with
// the match's seed. Its aim error is drawn from a generator seeded by the
// seed and the slot.
func NewPilot(players, slot int, seed uint64) (*Pilot, error) {
	g, err := New(players, seed)
	if err != nil {
		return nil, err
	}
	if slot < 0 || slot >= players {
		return nil, fmt.Errorf("%w: slot %d of %d", ErrPlayers, slot, players)
	}
	p := &Pilot{g: g, slot: slot}
	p.r.Seed(seed ^ uint64(slot+1)*0x9e3779b97f4a7c15)
	return p, nil
}

// Step applies one frame the pilot's client played to the pilot's game.
func (p *Pilot) Step(f lockstep.Frame) error { return p.g.Step(f) }

// Input returns the bot's encoded input for the next turn and whether it
// differs from the one Input returned before (the first call always
// reports a change). Call it after the frames of a turn have been stepped
// and send the input when it changed: the game keeps a player's last input
// until a new one arrives.
func (p *Pilot) Input() ([]byte, bool) {
	b := Bot(p.g, p.slot, &p.r).Append(nil)
	changed := p.last == nil || !bytes.Equal(b, p.last)
	p.last = b
	return b, changed
}

// Game returns the pilot's copy of the game (read only).
func (p *Pilot) Game() *Game { return p.g }

// Slot returns the slot the pilot drives.
func (p *Pilot) Slot() int { return p.slot }

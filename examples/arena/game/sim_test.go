package game

import (
	"testing"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// botMatch plays bots in every slot of a game: before each frame every
// slot's bot reads the game and its input goes into the frame, as though
// each bot's client sent it one turn ahead.
type botMatch struct {
	g     *Game
	rands []fixed.Rand
}

func newBotMatch(t testing.TB, players int, seed uint64) *botMatch {
	t.Helper()
	g, err := New(players, seed)
	if err != nil {
		t.Fatal(err)
	}
	m := &botMatch{g: g, rands: make([]fixed.Rand, players)}
	for i := range m.rands {
		m.rands[i].Seed(seed + uint64(i))
	}
	return m
}

// next returns the frame the bots make for the game's next turn.
func (m *botMatch) next() lockstep.Frame {
	f := lockstep.Frame{Number: m.g.Frame(), Slots: make([]lockstep.Slot, m.g.Players())}
	for i := range f.Slots {
		f.Slots[i].Inputs = [][]byte{Bot(m.g, i, &m.rands[i]).Append(nil)}
	}
	return f
}

func (m *botMatch) step(t testing.TB) lockstep.Frame {
	f := m.next()
	if err := m.g.Step(f); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestBotsPlay checks that bots make a game of it: over three minutes
// of ten-bot play everyone lands shots, kills add up to deaths, bots keep
// moving instead of pressing into walls, and nobody ends up inside a wall.
func TestBotsPlay(t *testing.T) {
	m := newBotMatch(t, MaxPlayers, 1)
	inside := playerR.Sub(fixed.FromFraction(1, 1000))
	wanted, stuck := 0, 0
	for range 3000 {
		m.step(t)
		for i := range m.g.players {
			p := &m.g.players[i]
			if !p.Alive {
				continue
			}
			for _, w := range walls {
				if w.closest(p.Pos).DistSq(p.Pos) < inside.Mul(inside) {
					t.Fatalf("frame %d: player %d at %v inside wall %v", m.g.Frame(), i, p.Pos, w)
				}
			}
			if p.input.MoveX != 0 || p.input.MoveY != 0 {
				wanted++
				if p.Vel().Len() < fixed.One {
					stuck++
				}
			}
		}
	}
	kills, deaths := 0, 0
	for i := range m.g.players {
		p := &m.g.players[i]
		kills += p.Kills
		deaths += p.Deaths
		if p.Hits == 0 {
			t.Errorf("player %d never hit anyone", i)
		}
	}
	if kills != deaths || kills < 20 {
		t.Errorf("%d kills, %d deaths", kills, deaths)
	}
	if stuck*20 > wanted {
		t.Errorf("bots stuck in %d of %d frames they tried to move", stuck, wanted)
	}
}

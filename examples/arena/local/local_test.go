package local

import (
	"errors"
	"testing"
	"time"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// TestMatchInSync plays a minute of a match in synthetic time: a scripted
// person in one slot, bots in the others. The person's game and every
// bot's copy must agree on the state hash at every frame they both ran,
// the bots must score, and the person's inputs must reach the game.
func TestMatchInSync(t *testing.T) {
	for _, tc := range []struct{ players, slot int }{{2, 0}, {6, 3}, {game.MaxPlayers, 9}} {
		start := time.Unix(1000, 0)
		m, err := New(tc.players, tc.slot, 42)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := game.New(tc.players, 42)
		r := fixed.NewRand(7)
		mine := map[int]uint64{}
		botHashes := map[int]map[int]uint64{}
		in := game.Input{}
		moved := false
		const ticks = 60 * 60
		for tick := range ticks {
			now := start.Add(time.Duration(tick) * time.Second / 60)
			st, err := m.Update(now)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range st.Frames {
				if err := g.Step(f); err != nil {
					t.Fatal(err)
				}
				mine[f.Number] = g.Hash()
			}
			for i := range tc.players {
				if p := m.Pilot(i); p != nil {
					if botHashes[i] == nil {
						botHashes[i] = map[int]uint64{}
					}
					botHashes[i][p.Game().Frame()-1] = p.Game().Hash()
				}
			}
			if tick%20 == 0 { // the person changes their mind three times a second
				in = game.Input{MoveX: int8(r.Intn(3) - 1), MoveY: int8(r.Intn(3) - 1), Fire: r.Bool(), Aim: uint16(r.Intn(game.AimSteps))}
				if err := m.Send(now, in.Append(nil)); err != nil {
					t.Fatal(err)
				}
			}
			moved = moved || g.Player(tc.slot).Vel() != (fixed.Vec{})
		}
		if want := 60 * game.Hz; g.Frame() < want-10 {
			t.Errorf("%d players: played %d frames in a minute, want about %d", tc.players, g.Frame(), want)
		}
		compared := 0
		for slot, hs := range botHashes {
			for n, h := range hs {
				if mh, ok := mine[n]; ok && n >= 0 {
					compared++
					if mh != h {
						t.Fatalf("%d players: bot %d and the person disagree at frame %d", tc.players, slot, n)
					}
				}
			}
		}
		if compared < (tc.players-1)*50 {
			t.Errorf("only %d hashes compared", compared)
		}
		if !moved {
			t.Error("the person's inputs never moved them")
		}
		hits := 0
		for i := range tc.players {
			hits += g.Player(i).Hits
		}
		if hits == 0 {
			t.Error("nobody hit anyone in a minute")
		}
	}
}

func TestNewRejects(t *testing.T) {
	for _, tc := range []struct{ players, slot int }{{1, 0}, {game.MaxPlayers + 1, 0}, {4, 4}, {4, -1}} {
		if _, err := New(tc.players, tc.slot, 0); !errors.Is(err, game.ErrPlayers) {
			t.Errorf("%d players, slot %d: err %v", tc.players, tc.slot, err)
		}
	}
}

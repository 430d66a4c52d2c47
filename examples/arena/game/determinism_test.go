package game

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/tongbu/tongbu/lockstep"
)

// TestDeterminism feeds two games the same frames, made by bots playing on
// the first, and compares their hashes after every frame. Halfway through,
// a third game restored from a snapshot of the first joins and must agree
// from then on.
func TestDeterminism(t *testing.T) {
	for _, players := range []int{2, 5, MaxPlayers} {
		t.Run(fmt.Sprint(players), func(t *testing.T) {
			m := newBotMatch(t, players, 99)
			twin, _ := New(players, 99)
			var late *Game
			for n := range 4000 {
				f := m.step(t)
				if err := twin.Step(f); err != nil {
					t.Fatal(err)
				}
				if late != nil {
					if err := late.Step(f); err != nil {
						t.Fatal(err)
					}
				}
				h := m.g.Hash()
				if twin.Hash() != h || (late != nil && late.Hash() != h) {
					t.Fatalf("frame %d: hashes differ", n)
				}
				if n == 2000 {
					late, _ = New(MinPlayers, 0)
					if err := late.Restore(m.g.Snapshot()); err != nil {
						t.Fatal(err)
					}
					if late.Hash() != h {
						t.Fatal("restored game has another hash")
					}
				}
			}
		})
	}
}

// TestGolden pins the hash after thousands of frames of bot play. Run it
// under wasm as well (see README): a platform that computed a different
// bit anywhere in the simulation or the bots fails it.
func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		players int
		seed    uint64
		frames  int
		want    uint64
	}{
		{2, 2, 3000, 0xc9f3f051bd16be46},
		{MaxPlayers, 1, 3000, 0xbb879309d321a3a2},
		{7, 12345, 5000, 0xa1797bf7097d0070},
	} {
		m := newBotMatch(t, tc.players, tc.seed)
		for range tc.frames {
			m.step(t)
		}
		if got := m.g.Hash(); got != tc.want {
			t.Errorf("%d players, seed %d, %d frames: hash %#016x, want %#016x", tc.players, tc.seed, tc.frames, got, tc.want)
		}
	}
}

func TestHashCoversState(t *testing.T) {
	m := newBotMatch(t, 4, 3)
	for range 300 {
		m.step(t)
	}
	if len(m.g.shots) == 0 {
		t.Fatal("no shots in flight to test with")
	}
	base := m.g.Hash()
	for _, tc := range []struct {
		name string
		edit func(g *Game)
	}{
		{"frame", func(g *Game) { g.frame++ }},
		{"rand", func(g *Game) { g.rand.Uint64() }},
		{"pos", func(g *Game) { g.players[1].Pos.X++ }},
		{"prev", func(g *Game) { g.players[1].Prev.Y++ }},
		{"aim", func(g *Game) { g.players[1].Aim ^= 1 }},
		{"health", func(g *Game) { g.players[1].Health ^= 1 }},
		{"alive", func(g *Game) { g.players[1].Alive = !g.players[1].Alive }},
		{"respawn", func(g *Game) { g.players[1].RespawnIn++ }},
		{"shield", func(g *Game) { g.players[1].Shield++ }},
		{"cooldown", func(g *Game) { g.players[1].Cooldown++ }},
		{"kills", func(g *Game) { g.players[1].Kills++ }},
		{"deaths", func(g *Game) { g.players[1].Deaths++ }},
		{"hits", func(g *Game) { g.players[1].Hits++ }},
		{"input", func(g *Game) { g.players[1].input.Fire = !g.players[1].input.Fire }},
		{"shot owner", func(g *Game) { g.shots[0].Owner ^= 1 }},
		{"shot pos", func(g *Game) { g.shots[0].Pos.X++ }},
		{"shot prev", func(g *Game) { g.shots[0].Prev.X++ }},
		{"shot aim", func(g *Game) { g.shots[0].Aim ^= 1 }},
		{"shot life", func(g *Game) { g.shots[0].Life++ }},
		{"shot count", func(g *Game) { g.shots = g.shots[1:] }},
	} {
		g, _ := New(MinPlayers, 0)
		if err := g.Restore(m.g.Snapshot()); err != nil {
			t.Fatal(err)
		}
		tc.edit(g)
		if g.Hash() == base {
			t.Errorf("changing %s leaves the hash unchanged", tc.name)
		}
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	m := newBotMatch(t, MaxPlayers, 5)
	for n := range 1500 {
		m.step(t)
		if n%100 != 0 {
			continue
		}
		snap := m.g.Snapshot()
		g, _ := New(MinPlayers, 0)
		if err := g.Restore(snap); err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		if g.Hash() != m.g.Hash() || !bytes.Equal(g.Snapshot(), snap) {
			t.Fatalf("frame %d: restored game differs", n)
		}
	}
}

func TestRestoreRejects(t *testing.T) {
	m := newBotMatch(t, 3, 8)
	for range 200 {
		m.step(t)
	}
	good := m.g.Snapshot()
	g2, _ := New(2, 0)
	dead := g2.Snapshot()
	g2.players[1].Alive = false // alive flag off, health still full
	deadWithHealth := g2.Snapshot()
	g2.players[1].Alive, g2.players[1].Health = true, 0
	aliveNoHealth := g2.Snapshot()
	g2.players[1].Health = MaxHealth
	g2.rand.SetState([4]uint64{})
	zeroRand := g2.Snapshot()
	one, _ := New(2, 0)
	one.players = one.players[:1]
	onePlayer := one.Snapshot()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"truncated", good[:len(good)/2]},
		{"one byte short", good[:len(good)-1]},
		{"trailing", append(append([]byte(nil), good...), 0)},
		{"version", append([]byte{2}, good[1:]...)},
		{"dead with health", deadWithHealth},
		{"alive without health", aliveNoHealth},
		{"zero generator", zeroRand},
		{"one player", onePlayer},
	} {
		g, _ := New(2, 0)
		before := g.Snapshot()
		if !bytes.Equal(before, dead) {
			t.Fatal("New is not deterministic")
		}
		if err := g.Restore(tc.b); !errors.Is(err, ErrSnapshot) {
			t.Errorf("%s: err %v, want ErrSnapshot", tc.name, err)
		}
		if !bytes.Equal(g.Snapshot(), before) {
			t.Errorf("%s: a failed restore changed the game", tc.name)
		}
	}
}

func FuzzRestore(f *testing.F) {
	for _, players := range []int{2, MaxPlayers} {
		m := newBotMatch(f, players, 4)
		f.Add(m.g.Snapshot())
		for range 400 {
			m.step(f)
		}
		f.Add(m.g.Snapshot())
	}
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, _ := New(MinPlayers, 0)
		if err := g.Restore(b); err != nil {
			if !errors.Is(err, ErrSnapshot) {
				t.Fatalf("error %v does not wrap ErrSnapshot", err)
			}
			return
		}
		if again := g.Snapshot(); !bytes.Equal(again, b) {
			t.Fatalf("restored %x, snapshot again %x", b, again)
		}
		// Whatever the snapshot held, the game plays on.
		for range 3 {
			f := lockstep.Frame{Number: g.Frame(), Slots: make([]lockstep.Slot, g.Players())}
			for i := range f.Slots {
				f.Slots[i].Inputs = [][]byte{Input{MoveX: 1, Fire: true, Aim: uint16(i * 300)}.Append(nil)}
			}
			if err := g.Step(f); err != nil {
				t.Fatal(err)
			}
			g.Hash()
		}
	})
}

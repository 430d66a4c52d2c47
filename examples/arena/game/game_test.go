package game

import (
	"errors"
	"testing"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// arena returns a two-player game with player 0 at a and player 1 at b,
// both unshielded and idle, and no shots.
func arena(t *testing.T, a, b fixed.Vec) *Game {
	t.Helper()
	g, err := New(2, 7)
	if err != nil {
		t.Fatal(err)
	}
	for i, pos := range []fixed.Vec{a, b} {
		p := &g.players[i]
		p.Pos, p.Prev, p.Shield, p.input = pos, pos, 0, Input{}
	}
	return g
}

// frame builds the game's next frame: one input per slot, nil for a slot
// the room made up.
func frame(g *Game, inputs ...*Input) lockstep.Frame {
	f := lockstep.Frame{Number: g.Frame(), Slots: make([]lockstep.Slot, g.Players())}
	for i := range f.Slots {
		if i >= len(inputs) || inputs[i] == nil {
			f.Slots[i].MadeUp = true
			continue
		}
		f.Slots[i].Inputs = [][]byte{inputs[i].Append(nil)}
	}
	return f
}

func step(t *testing.T, g *Game, inputs ...*Input) {
	t.Helper()
	if err := g.Step(frame(g, inputs...)); err != nil {
		t.Fatal(err)
	}
}

func steps(t *testing.T, g *Game, n int) {
	t.Helper()
	for range n {
		step(t, g)
	}
}

func TestNew(t *testing.T) {
	for _, n := range []int{-1, 0, 1, MaxPlayers + 1} {
		if _, err := New(n, 1); !errors.Is(err, ErrPlayers) {
			t.Errorf("New(%d): err %v, want ErrPlayers", n, err)
		}
	}
	g, err := New(MaxPlayers, 1)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[fixed.Vec]bool{}
	for i := range g.Players() {
		p := g.Player(i)
		if !p.Alive || p.Health != MaxHealth || seen[p.Pos] || blocked(p.Pos) {
			t.Errorf("player %d starts %+v", i, p)
		}
		seen[p.Pos] = true
	}
}

func TestStepRejects(t *testing.T) {
	g := arena(t, pt(100, 100), pt(800, 500))
	before := g.Hash()
	for _, f := range []lockstep.Frame{
		{Number: 1, Slots: make([]lockstep.Slot, 2)},
		{Number: -1, Slots: make([]lockstep.Slot, 2)},
		{Number: 0, Slots: make([]lockstep.Slot, 3)},
		{Number: 0},
	} {
		if err := g.Step(f); !errors.Is(err, ErrFrame) {
			t.Errorf("frame %d with %d slots: err %v, want ErrFrame", f.Number, len(f.Slots), err)
		}
	}
	if g.Hash() != before || g.Frame() != 0 {
		t.Error("a rejected frame changed the game")
	}
}

func TestMove(t *testing.T) {
	speed := fixed.FromInt(PlayerSpeed)
	for _, tc := range []struct {
		name     string
		from     fixed.Vec
		in       Input
		want     fixed.Vec
		tolerate int64 // raw units
	}{
		{"idle", pt(100, 100), Input{}, pt(100, 100), 0},
		{"right", pt(100, 100), Input{MoveX: 1}, pt(110, 100), 0},
		{"up", pt(100, 100), Input{MoveY: -1}, pt(100, 90), 0},
		{"diagonal at full speed", pt(100, 100), Input{MoveX: 1, MoveY: 1},
			pt(100, 100).Add(fixed.V(speed, speed).Scale(fixed.FromInt(2).Sqrt().DivInt(2))), 16},
		{"left edge", pt(20, 100), Input{MoveX: -1}, pt(PlayerRadius, 100), 0},
		{"bottom edge", pt(100, Height-20), Input{MoveY: 1}, pt(100, Height-PlayerRadius), 0},
		{"onto a bar from above", pt(250, 120), Input{MoveY: 1}, pt(250, 140-PlayerRadius), int64(pushSlack)},
		{"into the centre block from the left", pt(420, 320), Input{MoveX: 1}, pt(440-PlayerRadius, 320), int64(pushSlack)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := arena(t, tc.from, pt(900, 580))
			step(t, g, &tc.in)
			p := g.Player(0)
			if d := p.Pos.Dist(tc.want); d.Raw() > tc.tolerate {
				t.Errorf("at %v, want %v", p.Pos, tc.want)
			}
			if p.Prev != tc.from || p.Vel() != p.Pos.Sub(tc.from) {
				t.Errorf("prev %v, vel %v", p.Prev, p.Vel())
			}
		})
	}
}

func TestMoveAroundCorner(t *testing.T) {
	// Pressed diagonally into a bar's corner, a player never ends inside it.
	g := arena(t, pt(180, 120), pt(900, 580))
	for range 20 {
		step(t, g, &Input{MoveX: 1, MoveY: 1})
		if blocked(g.Player(0).Pos) {
			t.Fatalf("frame %d: player inside a wall at %v", g.Frame(), g.Player(0).Pos)
		}
	}
}

func TestPlayersPush(t *testing.T) {
	g := arena(t, pt(300, 320), pt(310, 320))
	step(t, g)
	a, b := g.Player(0).Pos, g.Player(1).Pos
	if d := a.Dist(b).Sub(fixed.FromInt(2 * PlayerRadius)).Abs(); d > 2 {
		t.Errorf("after the push the players are %v apart", a.Dist(b))
	}
	if mid := a.X.Add(b.X).DivInt(2); mid != fixed.FromInt(305) || a.Y != b.Y {
		t.Errorf("push not symmetric: %v and %v", a, b)
	}
	// Exactly on top of each other: the higher slot goes right.
	g = arena(t, pt(300, 320), pt(300, 320))
	step(t, g)
	if g.Player(0).Pos.X >= g.Player(1).Pos.X {
		t.Errorf("coincident players: %v and %v", g.Player(0).Pos, g.Player(1).Pos)
	}
}

func TestShots(t *testing.T) {
	right := AimOf(pt(1, 0))
	fire := &Input{Fire: true, Aim: right}
	hold := &Input{Aim: right}
	for _, tc := range []struct {
		name  string
		a, b  fixed.Vec
		setup func(g *Game)
		play  func(t *testing.T, g *Game)
		check func(t *testing.T, g *Game)
	}{
		{
			name: "hit", a: pt(100, 600), b: pt(300, 600),
			play: func(t *testing.T, g *Game) { step(t, g, fire); step(t, g, hold); steps(t, g, 8) },
			check: func(t *testing.T, g *Game) {
				if a, b := g.Player(0), g.Player(1); b.Health != MaxHealth-ShotDamage || a.Hits != 1 || a.Kills != 0 {
					t.Errorf("shooter %+v, target %+v", a, b)
				}
				if len(g.shots) != 0 {
					t.Errorf("%d shots left", len(g.shots))
				}
			},
		},
		{
			name: "shield absorbs", a: pt(100, 600), b: pt(300, 600),
			setup: func(g *Game) { g.players[1].Shield = SpawnShield },
			play:  func(t *testing.T, g *Game) { step(t, g, fire); step(t, g, hold); steps(t, g, 8) },
			check: func(t *testing.T, g *Game) {
				if b := g.Player(1); b.Health != MaxHealth || g.Player(0).Hits != 0 || len(g.shots) != 0 {
					t.Errorf("target %+v, %d shots", b, len(g.shots))
				}
			},
		},
		{
			name: "firing drops the shield", a: pt(100, 600), b: pt(800, 60),
			setup: func(g *Game) { g.players[0].Shield = SpawnShield },
			play:  func(t *testing.T, g *Game) { step(t, g, fire) },
			check: func(t *testing.T, g *Game) {
				if s := g.Player(0).Shield; s != 0 {
					t.Errorf("shield %d after firing", s)
				}
			},
		},
		{
			name: "wall stops a shot", a: pt(100, 152), b: pt(420, 152),
			play: func(t *testing.T, g *Game) { step(t, g, fire); step(t, g, hold); steps(t, g, 12) },
			check: func(t *testing.T, g *Game) {
				if b := g.Player(1); b.Health != MaxHealth || len(g.shots) != 0 {
					t.Errorf("target %+v, %d shots", b, len(g.shots))
				}
			},
		},
		{
			name: "point-blank into a wall", a: pt(440-PlayerRadius, 320), b: pt(800, 60),
			play: func(t *testing.T, g *Game) { step(t, g, fire) },
			check: func(t *testing.T, g *Game) {
				if len(g.shots) != 0 || g.Player(0).Cooldown != Cooldown {
					t.Errorf("%d shots, cooldown %d", len(g.shots), g.Player(0).Cooldown)
				}
			},
		},
		{
			name: "shot fades after its life", a: pt(60, 600), b: pt(60, 60),
			play: func(t *testing.T, g *Game) {
				step(t, g, fire)
				step(t, g, hold)
				steps(t, g, ShotLife-2)
				if len(g.shots) != 1 || g.shots[0].Life != 1 {
					t.Fatalf("after %d frames: %+v", ShotLife, g.shots)
				}
				want := fixed.FromInt(60 + PlayerRadius + ShotRadius + 1 + ShotSpeed*(ShotLife-1))
				if d := g.shots[0].Pos.X.Sub(want).Abs(); d > 64 {
					t.Fatalf("shot at %v, want x %v", g.shots[0].Pos, want)
				}
				step(t, g)
			},
			check: func(t *testing.T, g *Game) {
				if len(g.shots) != 0 {
					t.Errorf("%d shots after their life", len(g.shots))
				}
			},
		},
		{
			name: "cooldown paces a held trigger", a: pt(60, 600), b: pt(60, 60),
			play: func(t *testing.T, g *Game) { step(t, g, fire); steps(t, g, 2*Cooldown) },
			check: func(t *testing.T, g *Game) {
				if len(g.shots) != 3 {
					t.Errorf("%d shots in %d frames, want 3", len(g.shots), 2*Cooldown+1)
				}
			},
		},
		{
			name: "kill, score and respawn", a: pt(100, 600), b: pt(300, 600),
			setup: func(g *Game) { g.players[1].Health = ShotDamage },
			play: func(t *testing.T, g *Game) {
				step(t, g, fire)
				step(t, g, hold)
				for g.Player(1).Alive {
					if g.Frame() > 20 {
						t.Fatal("target never died")
					}
					step(t, g)
				}
				b := g.Player(1)
				if b.Health != 0 || b.Deaths != 1 || b.RespawnIn != RespawnDelay || g.Player(0).Kills != 1 {
					t.Fatalf("after the kill: shooter %+v, target %+v", g.Player(0), b)
				}
				steps(t, g, RespawnDelay-1)
				if g.Player(1).Alive {
					t.Fatal("respawned early")
				}
				step(t, g)
			},
			check: func(t *testing.T, g *Game) {
				b := g.Player(1)
				if !b.Alive || b.Health != MaxHealth || b.Shield != SpawnShield || b.Prev != b.Pos {
					t.Errorf("after respawn: %+v", b)
				}
				// The spawn point farthest from the shooter at (100, 600).
				if b.Pos != pt(900, 60) {
					t.Errorf("respawned at %v, want the far corner", b.Pos)
				}
			},
		},
		{
			name: "a click inside one frame fires", a: pt(60, 600), b: pt(60, 60),
			play: func(t *testing.T, g *Game) {
				f := frame(g)
				f.Slots[0] = lockstep.Slot{Inputs: [][]byte{fire.Append(nil), hold.Append(nil)}}
				if err := g.Step(f); err != nil {
					t.Fatal(err)
				}
				steps(t, g, 2*Cooldown)
			},
			check: func(t *testing.T, g *Game) {
				if len(g.shots) != 1 {
					t.Errorf("%d shots, want 1", len(g.shots))
				}
			},
		},
		{
			name: "made-up and malformed inputs keep the last", a: pt(100, 100), b: pt(900, 580),
			play: func(t *testing.T, g *Game) {
				step(t, g, &Input{MoveX: 1})
				step(t, g) // made up, no inputs
				f := frame(g)
				f.Slots[0] = lockstep.Slot{Inputs: [][]byte{{0xff}, {3, 0, 0}}}
				if err := g.Step(f); err != nil {
					t.Fatal(err)
				}
			},
			check: func(t *testing.T, g *Game) {
				if p := g.Player(0).Pos; p != pt(130, 100) {
					t.Errorf("at %v, want (130, 100)", p)
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := arena(t, tc.a, tc.b)
			if tc.setup != nil {
				tc.setup(g)
			}
			tc.play(t, g)
			tc.check(t, g)
		})
	}
}

// TestGoneTakeover: a slot whose player is gone (the room's frame says so)
// is played by the game's own bot, identically in every copy of the game,
// and restored snapshots carry on alike; a merely late slot keeps its last
// input.
func TestGoneTakeover(t *testing.T) {
	a, _ := New(4, 9)
	b, _ := New(4, 9)
	still := a.Player(2).Pos
	for n := 0; n < 300; n++ {
		f := frame(a, &Input{MoveX: 1}, nil, nil, nil)
		f.Slots[2].Gone = true // slot 2 left; slots 1 and 3 are late
		if err := a.Step(f); err != nil {
			t.Fatal(err)
		}
		if err := b.Step(f); err != nil {
			t.Fatal(err)
		}
		if n == 150 { // a copy restored mid-way runs on the same
			if err := b.Restore(a.Snapshot()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if a.Hash() != b.Hash() {
		t.Fatal("two copies of the game took the gone player over differently")
	}
	if a.Player(2).Pos == still {
		t.Errorf("the gone player's bot did nothing: %+v", a.Player(2))
	}
	if p := a.Player(3); p.Vel() != (fixed.Vec{}) {
		t.Errorf("a late player with no input moved: %+v", p)
	}
}

// TestFired: Fired names the players whose weapon went off in the last
// Step, and only then: not while the weapon cools down, nor after Restore.
func TestFired(t *testing.T) {
	g := arena(t, pt(100, 600), pt(800, 60))
	right := AimOf(pt(1, 0))
	step(t, g, &Input{Fire: true, Aim: right})
	if !g.Fired(0) || g.Fired(1) {
		t.Fatalf("after a shot: fired %v %v, want true false", g.Fired(0), g.Fired(1))
	}
	for range Cooldown - 1 {
		step(t, g, &Input{Fire: true, Aim: right})
		if g.Fired(0) {
			t.Fatalf("fired at frame %d while the weapon cools down", g.Frame()-1)
		}
	}
	step(t, g, &Input{Fire: true, Aim: right})
	if !g.Fired(0) {
		t.Fatal("the held trigger did not fire once the weapon was ready")
	}
	if err := g.Restore(g.Snapshot()); err != nil {
		t.Fatal(err)
	}
	if g.Fired(0) {
		t.Error("Fired survived Restore")
	}
}

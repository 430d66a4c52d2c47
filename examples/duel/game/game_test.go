package game

import (
	"errors"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
	"github.com/tongbu/tongbu/lockstep/locksteptest"
	"github.com/tongbu/tongbu/transport/memnet"
)

// frame builds a frame with each player's input.
func frame(n int, in ...Input) lockstep.Frame {
	f := lockstep.Frame{Number: n, Slots: make([]lockstep.Slot, len(in))}
	for i, x := range in {
		f.Slots[i].Inputs = [][]byte{x.Bytes()}
	}
	return f
}

// TestJabFrameData: a jab pressed on frame k is in startup for 9 frames,
// hits on frame k+9 (the first of 2 active frames), recovers for 13, and
// the fighter is free again on frame k+24; the one it hit is free 3 frames
// later, and 2 frames sooner when it blocked.
func TestJabFrameData(t *testing.T) {
	for _, tc := range []struct {
		name    string
		defend  Input
		stunned Action
		advance int
	}{{"hit", 0, HitStunned, 3}, {"blocked", Guard, BlockStunned, -2}} {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			g.f[1].X = g.f[0].X.Add(fixedInt(Reach - 10)) // in reach
			n, lastStun := 0, -1
			step := func(a Input) {
				g.Step(frame(n, a, tc.defend))
				if g.f[1].Action == tc.stunned {
					lastStun = n
				}
				n++
			}
			step(0)
			k := n
			step(Jab)
			for range JabStartup - 1 {
				step(Jab)
				if g.f[0].Action != Startup || g.f[1].Action == tc.stunned {
					t.Fatalf("frame %d: %v, defender %v", n-1, g.f[0].Action, g.f[1].Action)
				}
			}
			step(Jab) // k+9
			if g.f[0].Action != Active || g.f[1].Action != tc.stunned {
				t.Fatalf("frame k+9: %v, defender %v; want active and %v", g.f[0].Action, g.f[1].Action, tc.stunned)
			}
			hitAt := n - 1
			for n < k+24 {
				step(0)
				if n-1 > k+10 && g.f[0].Action != Recovery {
					t.Fatalf("frame k+%d: %v, want recovery", n-1-k, g.f[0].Action)
				}
			}
			step(Jab) // k+24: free, a new jab starts
			if g.f[0].Action != Startup {
				t.Fatalf("frame k+24: %v, want a new startup", g.f[0].Action)
			}
			for range 5 {
				step(0)
			}
			free := lastStun + 1
			if adv := free - (k + 24); adv != tc.advance {
				t.Errorf("the defender was free on frame k+%d (hit on k+%d): advantage %+d, want %+d", free-k, hitAt-k, adv, tc.advance)
			}
		})
	}
}

// TestKnockOutAndRounds: ten hits knock out, the round restarts after
// RoundPause, and three rounds win the match.
func TestKnockOutAndRounds(t *testing.T) {
	g := New()
	n := 0
	for round := range Rounds {
		for hits := 0; g.f[1].Action != KnockedOut; {
			g.f[1].X = g.f[0].X.Add(fixedInt(Reach - 10))
			in := Input(0)
			if g.f[0].Action == Idle || g.f[0].Action == Walking {
				in = Jab
			}
			g.Step(frame(n, in, 0))
			n++
			if hits++; hits > 1000 {
				t.Fatal("no knockout")
			}
		}
		if g.f[0].Wins != int32(round+1) || g.f[1].Health != 0 {
			t.Fatalf("round %d: %+v", round, g.f)
		}
		if round < Rounds-1 {
			for range RoundPause {
				g.Step(frame(n, 0, 0))
				n++
			}
			if g.f[1].Health != MaxHealth || g.Round() != round+1 {
				t.Fatalf("round %d did not restart: %+v", round+1, g.f[1])
			}
		}
	}
	if g.Winner() != 0 {
		t.Fatalf("winner %d", g.Winner())
	}
}

// TestSaveLoad: a saved state loads into a game that steps and hashes the
// same; bytes that are not a state are refused and leave the game as it
// was.
func TestSaveLoad(t *testing.T) {
	g := New()
	a, b := NewBot(0, 1), NewBot(1, 1)
	for n := range 900 {
		g.Step(frame(n, a.Input(g), b.Input(g)))
	}
	saved := g.SaveState(nil)
	h := New()
	if err := h.LoadState(saved); err != nil || h.Hash() != g.Hash() {
		t.Fatalf("load: %v, hash %x want %x", err, h.Hash(), g.Hash())
	}
	for n := 900; n < 1200; n++ {
		f := frame(n, a.Input(g), b.Input(g))
		g.Step(f)
		h.Step(f)
	}
	if h.Hash() != g.Hash() {
		t.Fatal("a loaded game stepped differently")
	}
	before := h.Hash()
	for _, bad := range [][]byte{nil, saved[:10], append(saved[:len(saved):len(saved)], 0), func() []byte {
		b := append([]byte(nil), saved...)
		b[17+13] = 99 // fighter 0's action
		return b
	}()} {
		if err := h.LoadState(bad); !errors.Is(err, ErrState) || h.Hash() != before {
			t.Errorf("%d bytes: %v", len(bad), err)
		}
	}
}

// TestSyncTest runs lockstep.SyncTest over a minute of bot play, rolling
// back 8 frames on every frame: the duel is deterministic through its
// saves and loads.
func TestSyncTest(t *testing.T) {
	st, err := lockstep.NewSyncTest(RoomConfig(), 8)
	if err != nil {
		t.Fatal(err)
	}
	g, view := New(), New() // the bots decide from a copy run the plain way
	bots := []*Bot{NewBot(0, 3), NewBot(1, 4)}
	for n := range 60 * Hz {
		in := [][]byte{bots[0].Input(view).Bytes(), bots[1].Input(view).Bytes()}
		reqs, err := st.Update(in)
		if err == nil {
			err = st.Run(g, reqs)
		}
		if err != nil {
			t.Fatalf("frame %d: %v", n, err)
		}
		view.Step(frame(n, Input(in[0][0]), Input(in[1][0])))
	}
	if g.Hash() != view.Hash() {
		t.Fatal("the sync-tested game and the plain one ended apart")
	}
	if g.f[0].Hits+g.f[1].Hits < 20 {
		t.Fatalf("the bots hardly fought: %+v", g.f)
	}
}

// TestRollbackMatch plays 30 s of two bots in the prediction mode through
// the real room over a 50 ms ± 10 ms link with 2% loss: no desync.
func TestRollbackMatch(t *testing.T) {
	link := memnet.LinkConfig{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.02}
	r, err := locksteptest.RunRollback(locksteptest.RollbackOptions{
		Config: RoomConfig(), Duration: 30 * time.Second, Up: link, Down: link, Seed: 1,
		NewGame: func() lockstep.RollbackGame { return New() }, Input: BotInputs(1),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d frames, %d rollbacks, %d desyncs, %d checked", r.Frames, len(r.Depths), r.Desyncs, r.Checked)
	if r.Desyncs != 0 || len(r.Depths) == 0 {
		t.Fatalf("desyncs %d, rollbacks %d", r.Desyncs, len(r.Depths))
	}
}

func fixedInt(n int64) fixed.Fixed { return fixed.FromInt(n) }

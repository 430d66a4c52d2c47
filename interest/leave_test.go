package interest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// TestLeaveMessages checks Config.LeaveMessages: every time an entity
// leaves a client's 3x3 range, because the entity moved or because the
// client did, the world sends that client a removal for it, soon. Without
// the option no such removal is promised (the client half removes on its
// own), so the same walk sends far fewer.
func TestLeaveMessages(t *testing.T) {
	removals := map[bool]int{}
	for _, leave := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			cfg := testConfig()
			cfg.LeaveMessages = leave
			link := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 10 * time.Millisecond}
			h := newHarness(t, harnessOptions{cfg: cfg, players: 12, npcs: 300, link: link, seed: 5})
			type pair struct{ to, id ID }
			inRange := map[pair]bool{}
			owed := map[pair]time.Time{}    // left the range, no removal sent yet
			removed := map[pair]time.Time{} // when the last removal was sent
			var late, left int
			h.trace = func(to ID, m *downMsg) {
				if m.tag == tagRemove {
					removals[leave]++
					delete(owed, pair{to, m.id})
					removed[pair{to, m.id}] = time.Now()
				}
			}
			h.run(5*time.Second, false) // every client learns its range first
			for range 60 * 16 {
				before := time.Now()
				h.run(time.Second/16, false)
				now := time.Now()
				for _, p := range h.players {
					for _, id := range append(append([]ID(nil), h.npcs...), playerIDs(h)...) {
						if id == p.id {
							continue
						}
						k := pair{p.id, id}
						in := h.w.InRange(p.id, id)
						if inRange[k] && !in {
							left++
							if at, ok := removed[k]; !ok || at.Before(before) {
								owed[k] = now
							}
						}
						if in {
							delete(owed, k)
						}
						inRange[k] = in
					}
				}
				for k, since := range owed {
					if leave && now.Sub(since) > time.Second {
						late++
						if late < 5 {
							t.Errorf("client %d got no removal of entity %d within 1 s of it leaving the range", k.to, k.id)
						}
						delete(owed, k)
					}
				}
			}
			if left == 0 {
				t.Fatal("no entity ever left a client's range: the walk tests nothing")
			}
			t.Logf("leave messages %v: %d departures from a range, %d removals sent, %d late", leave, left, removals[leave], late)
			if h.leaks > 0 {
				t.Errorf("%d messages about entities outside the receiver's range", h.leaks)
			}
		})
	}
	if removals[true] <= 2*removals[false] {
		t.Errorf("removals with leave messages %d, without %d: the option adds too few", removals[true], removals[false])
	}
}

func playerIDs(h *harness) []ID {
	ids := make([]ID, len(h.players))
	for i, p := range h.players {
		ids[i] = p.id
	}
	return ids
}

// TestZigzagMissedMove covers a client that steps out of an entity's range
// and straight back: it keeps the entity through the removal grace, but
// misses the move the entity made while it was out. The world repairs it:
// the client ends up with the entity where it is, or without it when it
// is out of range, never with a stale copy.
func TestZigzagMissedMove(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	rs := int32(cfg.RegionSize)
	start := time.Unix(0, 0)
	out := &direct{}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	home := Vec{5*rs - 20, rs + rs/2} // region {4,1}, near its east border
	player, _ := w.Spawn(Player, Logic{Pos: home, Life: 100}, Display{Name: "you"})
	npc, _ := w.Spawn(NPC, Logic{Pos: Vec{3*rs + 100, 100}, Life: 100}, Display{Name: "wolf"}) // region {3,0}
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	run := (&stepper{t: t, w: w, out: out, player: player, start: start}).run
	run(48) // the client learns its range
	if _, ok := out.c.Entity(npc); !ok {
		t.Fatal("the client never learned the NPC in its range")
	}
	// Step east into {5,1}, out of range of {3,0}.
	if err := out.c.Move(Vec{5*rs + 40, home.Y}, 64); err != nil {
		t.Fatal(err)
	}
	run(3)
	if w.InRange(player, npc) {
		t.Fatal("the player did not leave the NPC's range")
	}
	// The NPC walks west into {2,0} while the player is out of range.
	if err := w.Move(npc, Vec{2*rs + 100, 100}, 64); err != nil {
		t.Fatal(err)
	}
	run(1)
	// Back west into {4,1}: the NPC is now out of range ({2,0}).
	if err := out.c.Move(home, 64); err != nil {
		t.Fatal(err)
	}
	run(48)
	truth, _ := w.Logic(npc)
	v, known := out.c.Entity(npc)
	switch {
	case w.InRange(player, npc) && (!known || v.Logic.Pos != truth.Pos):
		t.Errorf("the NPC is in range at %v; the client knows %v at %v", truth.Pos, known, v.Logic.Pos)
	case !w.InRange(player, npc) && known:
		t.Errorf("the NPC is out of range at %v; the client still holds it at %v", truth.Pos, v.Logic.Pos)
	}
}

// zigzagWorld makes an 8x8-region world with a player standing at home,
// an NPC at npcAt, and the player's client, which has learned its range.
func zigzagWorld(t *testing.T, home, npcAt Vec) (w *World, out *direct, player, npc ID, run func(int)) {
	t.Helper()
	cfg := Config{Width: 8, Height: 8}.WithDefaults()
	start := time.Unix(0, 0)
	out = &direct{}
	w, err := NewWorld(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	player, _ = w.Spawn(Player, Logic{Pos: home, Life: 100}, Display{Name: "you"})
	npc, _ = w.Spawn(NPC, Logic{Pos: npcAt, Life: 100}, Display{Name: "wolf"})
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	out.c, _ = NewClient(cfg, player)
	run = (&stepper{t: t, w: w, out: out, player: player, start: start}).run
	run(48) // the client learns its range
	return w, out, player, npc, run
}

// checkTruth fails unless the client holds the NPC where it is (or a step
// on, where the client's clock runs a frame ahead) if it is in range, and
// does not hold it if it is not. mayMiss: before the forced sync that
// brings an entity newly in range, the client may lack it, but holds no
// stale copy.
func checkTruth(t *testing.T, w *World, c *Client, player, npc ID, mayMiss bool) {
	t.Helper()
	truth, _ := w.Logic(npc)
	v, known := c.Entity(npc)
	next := Step(truth.Pos, truth.Dest, truth.Speed)
	switch {
	case w.InRange(player, npc) && (!known && !mayMiss || known && v.Logic.Pos != truth.Pos && v.Logic.Pos != next):
		t.Errorf("the NPC is in range at %v; the client knows %v at %v", truth.Pos, known, v.Logic.Pos)
	case !w.InRange(player, npc) && known:
		t.Errorf("the NPC is out of range at %v; the client still holds it at %v", truth.Pos, v.Logic.Pos)
	}
}

// TestLeftThenFollowed covers an entity that walks out of the client's
// range along its own path and is given a command out there, and a player
// who then steps after it within the removal grace: the client, which kept
// the entity and never heard the command, is repaired. It lacks the entity
// until the forced sync of the regions its step took in, never holds a
// stale copy, and ends up with the entity where it is, or without it. The
// step is the client's own (predicted ahead of the world) or the world's
// (a knock-back).
func TestLeftThenFollowed(t *testing.T) {
	for _, byWorld := range []bool{false, true} {
		leftThenFollowed(t, byWorld)
	}
}

func leftThenFollowed(t *testing.T, byWorld bool) {
	rs := int32(Config{}.WithDefaults().RegionSize)
	y := 3*rs + rs/2
	w, out, player, npc, run := zigzagWorld(t, Vec{4*rs - 20, y}, Vec{5*rs - 300, y}) // regions {3,3} and {4,3}
	if _, ok := out.c.Entity(npc); !ok {
		t.Fatal("the client never learned the NPC in its range")
	}
	// East into {5,3}, out of the player's range, a few frames later.
	if err := w.Move(npc, Vec{5*rs + 200, y}, 64); err != nil {
		t.Fatal(err)
	}
	run(6)
	if w.InRange(player, npc) {
		t.Fatal("the NPC did not leave the player's range")
	}
	// Out there, it turns south, toward {5,6}.
	if err := w.Move(npc, Vec{5*rs + 200, 7 * rs}, 64); err != nil {
		t.Fatal(err)
	}
	run(1)
	// The player steps east into {4,3}: the NPC is back in range.
	step := Vec{4*rs + 20, y}
	if byWorld {
		if err := w.Move(player, step, 64); err != nil {
			t.Fatal(err)
		}
	} else if err := out.c.Move(step, 64); err != nil {
		t.Fatal(err)
	}
	run(4)
	if !w.InRange(player, npc) {
		t.Fatal("the player's step did not bring the NPC back in range")
	}
	checkTruth(t, w, out.c, player, npc, true)
	run(48) // it walks on south, out of range
	checkTruth(t, w, out.c, player, npc, false)
}

// TestCrossedOutOfPendingRegion covers an entity that crosses from a
// region whose forced sync the player waits for (just taken into range)
// into one the player has long had in range: the crossing is announced
// only to those for whom the new region is new, and the first region's
// forced sync no longer finds it there, so the world sends it on its own
// when that sync comes.
func TestCrossedOutOfPendingRegion(t *testing.T) {
	rs := int32(Config{}.WithDefaults().RegionSize)
	y := 3*rs + rs/2
	w, out, player, npc, run := zigzagWorld(t, Vec{4*rs - 20, y}, Vec{5*rs + 100, y}) // regions {3,3} and {5,3}
	if _, ok := out.c.Entity(npc); ok {
		t.Fatal("the client knows an NPC out of its range")
	}
	// The NPC sets off west, slowly, out of the player's range: the
	// client hears nothing of it.
	if err := w.Move(npc, Vec{5*rs - 200, y}, 16); err != nil {
		t.Fatal(err)
	}
	run(1)
	// The player steps east into {4,3}: {5,3} is due for forced sync.
	if err := out.c.Move(Vec{4*rs + 20, y}, 64); err != nil {
		t.Fatal(err)
	}
	run(24) // the NPC walks into {4,3} before that sync, and stands
	if g := w.RegionOf(Vec{5*rs - 1, 0}); !w.InRange(player, npc) || w.RegionOf(mustLogic(t, w, npc).Pos).X != g.X {
		t.Fatalf("the NPC is not in {4,3}: at %v", mustLogic(t, w, npc).Pos)
	}
	run(24)
	checkTruth(t, w, out.c, player, npc, false)
}

// TestMovedOwesToldEntity: an entity that crosses from a region whose
// forced sync the client waits for into one whose sync is also pending
// but began earlier, and that the client was sent whole in between, is
// owed on its own: the later region's sync takes it as sent, but the
// client may have dropped it when the first region left its range.
func TestMovedOwesToldEntity(t *testing.T) {
	for _, tc := range []struct {
		name string
		told bool
		owed int
	}{{"sent whole in between", true, 1}, {"never sent", false, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			w, _, player, npc, run := zigzagWorld(t, Vec{1000, 1000}, Vec{3000, 1000})
			run(1)
			o := w.get(player).obs
			me := w.get(player).reg
			c := w.regionAt(me)
			from, to := w.regionIndex(Region{c.X + 1, c.Y + 1}), w.regionIndex(Region{c.X + 1, c.Y})
			sf, st := slotOf(c, w.regionAt(from)), slotOf(c, w.regionAt(to))
			o.open[st], o.enter[st], o.due[st] = true, w.frame-10, w.frame+20
			if tc.told {
				o.tell(w, npc) // sent whole after to came in range...
			}
			run(2)
			o.open[sf], o.enter[sf], o.due[sf] = true, w.frame, w.frame+30 // ...and from left it and came back
			w.lastBc[npc] = o.enter[st] - 1
			o.owed = o.owed[:0]
			o.moved(w, w.get(npc), from, to)
			if len(o.owed) != tc.owed {
				t.Errorf("owed %d entities, want %d", len(o.owed), tc.owed)
			}
		})
	}
}

func mustLogic(t *testing.T, w *World, id ID) Logic {
	t.Helper()
	lg, ok := w.Logic(id)
	if !ok {
		t.Fatalf("no entity %d", id)
	}
	return lg
}

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

package interest

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport"
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
			link := transport.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 10 * time.Millisecond}
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

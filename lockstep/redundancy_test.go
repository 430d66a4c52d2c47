package lockstep

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// TestRedundancyAdapts (seed 001 §5.2): a player's downlink redundancy
// rises within seconds when its link starts losing 20% of packets, enough
// that losing every copy of a frame is rarer than 1 in 1000, and falls
// back to the room's setting once the link is clean again. Another
// player's, on a clean link throughout, does not move.
func TestRedundancyAdapts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clean := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 5 * time.Millisecond}
		lossy := clean
		lossy.Loss = 0.2
		m := newMatch(t, Config{Players: 2}, 31, clean, clean)
		base := m.cfg.Redundancy
		m.run(10*time.Second, 0.5)
		if got := m.room.PlayerStats(0).Redundancy; got != base {
			t.Fatalf("redundancy %d on a clean link, want the room's %d", got, base)
		}
		// The downlink to player 0 loses 20%.
		if err := m.sside[0].SetLink(lossy); err != nil {
			t.Fatal(err)
		}
		m.run(20*time.Second, 0.5)
		// 0.2^(r+1) < 1e-3 needs r >= 4.
		st := m.room.PlayerStats(0)
		if st.Redundancy < 4 || st.Loss < 0.1 || st.Loss > 0.3 {
			t.Fatalf("under 20%% loss: redundancy %d, loss estimate %.3f", st.Redundancy, st.Loss)
		}
		if other := m.room.PlayerStats(1).Redundancy; other != base {
			t.Fatalf("the clean player's redundancy moved to %d", other)
		}
		raised := st.Redundancy
		if err := m.sside[0].SetLink(clean); err != nil {
			t.Fatal(err)
		}
		m.run(60*time.Second, 0.5)
		st = m.room.PlayerStats(0)
		if st.Redundancy != base || st.Loss > 0.01 {
			t.Fatalf("a minute after the link cleaned up: redundancy %d (was %d), loss %.4f", st.Redundancy, raised, st.Loss)
		}
		m.check()
		t.Logf("redundancy %d -> %d under 20%% loss -> %d on a clean link again", base, raised, st.Redundancy)
	})
}

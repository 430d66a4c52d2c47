package lockstep

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport"
)

func TestMatchUnderLoss(t *testing.T) {
	minutes := 20
	if testing.Short() {
		minutes = 2
	}
	synctest.Test(t, func(t *testing.T) {
		link := transport.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.2}
		m := newMatch(t, Config{Players: 10}, 1, link, link)
		m.run(time.Duration(minutes)*time.Minute, 0.3)
		m.check()
		st := m.room.Stats()
		t.Logf("frames %d, inputs %d, made up %d, packets %d, retransmits %d, drops %v",
			st.Frames, st.Inputs, st.MadeUp, st.Packets, st.Retransmits, st.Dropped)
		for i := range m.clients {
			ps := m.room.PlayerStats(i)
			pl := m.clients[i].Playout()
			t.Logf("player %d: redundancy %d loss %.3f late %d stalls %d (%v) lead %.2f",
				i, ps.Redundancy, ps.Loss, ps.LateDrops, pl.Stalls, pl.Stalled, m.clients[i].Lead())
		}
	})
}

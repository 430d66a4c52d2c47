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

// TestUplinkRepetition (seed 001 §5.3): a client repeats every input the
// room has not acknowledged in each packet it sends, so an input survives
// any run of lost uplink packets: after 1, 3 or 6 lost packets (at 60
// packets a second, within the lead) it reaches its own frame; after 30
// lost packets (half a second) it is late, and the room moves it to the
// next frame (Late: LateNextFrame) and tells the client. Either way it is
// in exactly one frame, once.
func TestUplinkRepetition(t *testing.T) {
	for _, lost := range []int{1, 3, 6, 30} {
		start := time.Unix(0, 0)
		now := start
		var clients []*Client
		cfg := Config{Players: 2, Hz: 15, Late: LateNextFrame}
		for slot := range cfg.Players {
			c, _ := NewClient(cfg, slot)
			clients = append(clients, c)
		}
		room, _ := NewRoom(cfg, start, directWire{clients, &now})
		var target, dropped int
		for i := 0; i < 180; i++ {
			now = start.Add(time.Duration(i) * time.Second / 60)
			if i == 60 {
				target, _ = clients[0].Input(now, []byte("fire"))
				dropped = lost
			}
			for slot, c := range clients {
				p := c.Packet(now)
				if slot == 0 && dropped > 0 {
					dropped-- // lost on the way
					continue
				}
				room.Deliver(slot, p, now)
			}
			room.Tick(now)
			for _, c := range clients {
				c.Advance(now)
			}
		}
		var in []int
		for n := range room.NextFrame() {
			f, _ := room.Frame(n)
			for _, data := range f.Slots[0].Inputs {
				if string(data) == "fire" && !f.Slots[0].MadeUp {
					in = append(in, n)
				}
			}
		}
		notices := clients[0].Notices()
		switch {
		case len(in) != 1:
			t.Errorf("%d packets lost: the input is in frames %v, want one", lost, in)
		case lost <= 6 && (in[0] != target || len(notices) != 0):
			t.Errorf("%d packets lost: the input for frame %d is in frame %d, notices %+v", lost, target, in[0], notices)
		case lost > 6 && (in[0] <= target || len(notices) != 1 || notices[0].Applied != in[0]):
			t.Errorf("%d packets lost: the input for frame %d is in frame %d, notices %+v", lost, target, in[0], notices)
		}
	}
}

// directWire connects a room to its clients with no network: what the
// room sends a slot is delivered to its client at once.
type directWire struct {
	clients []*Client
	now     *time.Time
}

func (w directWire) SendUnreliable(slot int, msg []byte) error {
	return w.clients[slot].Deliver(*w.now, msg)
}

func (w directWire) SendReliable(slot int, msg []byte) error { return w.SendUnreliable(slot, msg) }

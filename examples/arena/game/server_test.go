package game

import (
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// router connects a room to its clients directly: every message sent to a
// slot waits in that slot's queue for the next delivery.
type router struct{ q [][][]byte }

func (r *router) SendUnreliable(slot int, msg []byte) error {
	r.q[slot] = append(r.q[slot], append([]byte(nil), msg...))
	return nil
}
func (r *router) SendReliable(slot int, msg []byte) error { return r.SendUnreliable(slot, msg) }

// seat is one player: a lockstep client and the arena's Pilot.
type seat struct {
	c *lockstep.Client
	p *Pilot
}

// TestServerSimulation plays a two-player arena room that runs the game
// itself (Config.Simulation): the room's hash agrees with both pilots'
// frame by frame, and a player who crashes and rejoins is caught up from
// the room's snapshot (not the frame log) and ends with the same state as
// the other. Both report their kills; the room's game agrees with them,
// so event verification names nobody, and then names a player that
// claims a kill that did not happen.
func TestServerSimulation(t *testing.T) {
	const players = 2
	seed := RoomSeed("arena-test")
	cfg := RoomConfig(players)
	cfg.Simulation = Simulation(players, seed)
	cfg.VerifyEvents = true
	cheat := -1 // the slot that reports a kill of its own invention, from cheatFrom
	cheatFrom := 0
	start := time.Unix(0, 0)
	out := &router{q: make([][][]byte, players)}
	room, err := lockstep.NewRoom(cfg, start, out)
	if err != nil {
		t.Fatal(err)
	}
	newSeat := func(slot int) *seat {
		c, err := lockstep.NewClient(cfg, slot)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPilot(players, slot, seed)
		if err != nil {
			t.Fatal(err)
		}
		return &seat{c, p}
	}
	seats := []*seat{newSeat(0), newSeat(1)}
	snapshots, compared := 0, 0
	now := start
	play := func(ticks int) {
		for range ticks {
			now = now.Add(time.Second / 60)
			room.Tick(now)
			for slot, s := range seats {
				for _, m := range out.q[slot] {
					if err := s.c.Deliver(now, m); err != nil {
						t.Fatalf("slot %d: %v", slot, err)
					}
				}
				out.q[slot] = out.q[slot][:0]
				step := s.c.Advance(now)
				if step.Snapshot != nil {
					snapshots++
					if err := s.p.Game().Restore(step.Snapshot); err != nil {
						t.Fatalf("slot %d: restore: %v", slot, err)
					}
					if s.p.Game().Frame() != step.SnapshotFrame {
						t.Fatalf("slot %d: restored at frame %d, snapshot of %d", slot, s.p.Game().Frame(), step.SnapshotFrame)
					}
				}
				for _, f := range step.Frames {
					if err := s.p.Step(f); err != nil {
						t.Fatalf("slot %d: %v", slot, err)
					}
					for _, e := range s.p.Game().Events() {
						if err := s.c.ReportEvent(f.Number, e); err != nil {
							t.Fatalf("slot %d: %v", slot, err)
						}
					}
					if slot == cheat && f.Number >= cheatFrom && f.Number%15 == 0 {
						if err := s.c.ReportEvent(f.Number, []byte{EventKill, byte(slot), byte(1 - slot)}); err != nil {
							t.Fatal(err)
						}
					}
					if h, ok := room.SimHash(f.Number); ok {
						compared++
						if h != s.p.Game().Hash() {
							t.Fatalf("slot %d, frame %d: hash %x, the room's game %x", slot, f.Number, s.p.Game().Hash(), h)
						}
					}
				}
				if in, ok := s.p.Input(); ok {
					s.c.Input(now, in)
				}
				for _, m := range append([][]byte{s.c.Packet(now)}, s.c.Outbox()...) {
					if m != nil {
						if err := room.Deliver(slot, m, now); err != nil {
							t.Fatalf("slot %d: room: %v", slot, err)
						}
					}
				}
			}
		}
	}
	play(60 * 20)
	if room.SimFrame() < 250 {
		t.Fatalf("the room's game ran %d frames in 20 s", room.SimFrame())
	}
	// Slot 1 crashes, and a fresh client takes the seat 10 s later.
	if err := room.Leave(1); err != nil {
		t.Fatal(err)
	}
	seats[1].c = nil
	keep := seats
	seats = seats[:1]
	play(60 * 10)
	seats = keep
	seats[1] = newSeat(1)
	if err := room.Join(1, now); err != nil {
		t.Fatal(err)
	}
	play(60 * 10)
	if compared < 20 { // the room keeps a hash every HashEvery frames
		t.Errorf("only %d frames compared with the room's game", compared)
	}
	t.Logf("%d frames compared with the room's game; rejoined at frame %d", compared, seats[1].p.Game().Frame())
	if snapshots != 1 {
		t.Errorf("%d snapshots taken in, want 1", snapshots)
	}
	a, b := seats[0].p.Game(), seats[1].p.Game()
	if a.Frame() != b.Frame() || a.Hash() != b.Hash() {
		t.Errorf("after the rejoin: frame %d hash %x against frame %d hash %x", a.Frame(), a.Hash(), b.Frame(), b.Hash())
	}
	if st := room.Stats(); st.Snapshots == 0 {
		t.Errorf("room stats: %d snapshots sent", st.Snapshots)
	}
	for _, e := range room.Events() {
		if e.Kind == lockstep.EventDesync || e.Kind == lockstep.EventVerdict {
			t.Errorf("%v: %+v", e.Kind, e)
		}
	}
	res := room.Result()
	kills := 0
	for _, e := range res.Events {
		if len(e.Data) > 0 && e.Data[0] == EventKill {
			kills++
		}
	}
	for slot, v := range res.Players {
		if v.Disagreed != 0 {
			t.Errorf("honest slot %d disagreed on %d frames", slot, v.Disagreed)
		}
	}
	if kills == 0 {
		t.Errorf("no kills agreed in %d frames: the pilots never fought", res.Frames)
	}
	t.Logf("%d kills agreed over %d frames", kills, res.Frames)

	// Slot 0 now claims kills that never happened.
	cheat, cheatFrom = 0, seats[0].p.Game().Frame()
	play(60 * 5)
	named := false
	for _, e := range room.Events() {
		if e.Kind != lockstep.EventVerdict {
			continue
		}
		for _, p := range e.Players {
			if p == 0 {
				named = true
			} else {
				t.Errorf("honest slot %d named at frame %d", p, e.Frame)
			}
		}
	}
	if !named {
		t.Error("the cheating slot was not named")
	}
}

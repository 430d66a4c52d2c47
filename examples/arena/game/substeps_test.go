package game

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// substepWire hands what the room sends to a slot's client at once.
type substepWire struct {
	clients []*lockstep.Client
	now     *time.Time
}

func (w *substepWire) SendUnreliable(slot int, msg []byte) error {
	return w.clients[slot].Deliver(*w.now, msg)
}
func (w *substepWire) SendReliable(slot int, msg []byte) error { return w.SendUnreliable(slot, msg) }

// TestSubsteps plays the arena with a room at 15 Hz and 4 logic frames per
// relay frame (seed 001's client FPS extension): the clients step the game
// 60 times a second, about one logic frame per 60 Hz render tick; the
// room runs its own copy through the same logic frames, and every hash,
// kill report and the replay agree with it; a player who drops and comes
// back is caught up from the room's snapshot at the right logic frame.
func TestSubsteps(t *testing.T) {
	const players, seed, n = 4, 77, 4
	cfg := RoomConfig(players)
	cfg.Substeps = n
	cfg.Simulation = Simulation(players, seed)
	cfg.VerifyEvents = true
	cfg = cfg.WithDefaults()
	start := time.Unix(1000, 0)
	now := start
	w := &substepWire{now: &now}
	room, err := lockstep.NewRoom(cfg, start, w)
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	params := binary.LittleEndian.AppendUint64(nil, seed)
	rw, err := replay.NewWriter(&file, replay.Header{Game: Name, Params: params, Config: cfg, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	room.Record(rw)
	pilots := make([]*Pilot, players)
	join := func(i int) {
		c, err := lockstep.NewClient(cfg, i)
		if err != nil {
			t.Fatal(err)
		}
		if i < len(w.clients) {
			w.clients[i] = c
		} else {
			w.clients = append(w.clients, c)
		}
		if pilots[i], err = NewPilot(players, i, seed); err != nil {
			t.Fatal(err)
		}
	}
	for i := range players {
		join(i)
	}
	next := make([]int, players) // each client's next logic frame
	most := 0                    // the most logic frames one live tick handed out
	away := false
	const ticks = 60 * 30
	for k := range ticks {
		now = start.Add(time.Duration(k) * time.Second / 60)
		switch k {
		case 60 * 10:
			room.Leave(3)
			away = true
		case 60 * 13:
			join(3)
			next[3] = 0
			room.Join(3, now)
			away = false
		}
		for i, c := range w.clients {
			if i == 3 && away {
				continue
			}
			room.Deliver(i, c.Packet(now), now)
		}
		room.Tick(now)
		for i, c := range w.clients {
			if i == 3 && away {
				continue
			}
			st := c.Advance(now)
			p := pilots[i]
			if st.Snapshot != nil {
				if err := p.Game().Restore(st.Snapshot); err != nil {
					t.Fatal(err)
				}
				if p.Game().Frame() != st.SnapshotFrame || st.SnapshotFrame%n != 0 {
					t.Fatalf("client %d: snapshot at logic frame %d, the game at %d", i, st.SnapshotFrame, p.Game().Frame())
				}
				next[i] = st.SnapshotFrame
			}
			if !st.CatchingUp && k > 60 && k%60 != 0 {
				most = max(most, len(st.Frames))
			}
			for _, f := range st.Frames {
				if f.Number != next[i] {
					t.Fatalf("client %d: logic frame %d, want %d", i, f.Number, next[i])
				}
				next[i]++
				if err := p.Step(f); err != nil {
					t.Fatal(err)
				}
				if cfg.HashFrame(f.Number) {
					c.ReportHash(f.Number, p.Game().Hash())
				}
				for _, e := range p.Game().Events() {
					if err := c.ReportEvent(f.Number, e); err != nil {
						t.Fatal(err)
					}
				}
				if in, ok := p.Input(); ok {
					c.Input(now, in)
				}
			}
			for _, m := range c.Outbox() {
				room.Deliver(i, m, now)
			}
		}
	}
	relay := room.NextFrame()
	for i, f := range next {
		if f < (relay-cfg.Hz)*n {
			t.Errorf("client %d ran %d logic frames; the room cut %d relay frames", i, f, relay)
		}
	}
	if most > 2 {
		t.Errorf("a live 60 Hz tick handed out %d logic frames: not spread over the frame period", most)
	}
	checked := 0
	for f := 0; f < relay; f += cfg.HashEvery {
		if _, ok := room.MajorityHash(f); ok {
			checked++
		}
	}
	for _, e := range room.Events() {
		if e.Kind == lockstep.EventDesync || e.Kind == lockstep.EventDispute || e.Kind == lockstep.EventVerdict {
			t.Errorf("event %+v", e)
		}
	}
	if checked < relay/cfg.HashEvery-3 {
		t.Errorf("%d of %d hash frames compared", checked, relay/cfg.HashEvery)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err := replay.NewReader(&file)
	if err != nil {
		t.Fatal(err)
	}
	sim, _ := newReplaySim(players, params)
	res, err := replay.Verify(rr, sim)
	if err != nil || res.Mismatch != 0 || res.Checked < checked-1 || res.Frames != relay {
		t.Fatalf("replay: %+v, %v", res, err)
	}
	t.Logf("%d relay frames, %d logic frames each; %d hash frames agreed; replay %+v; at most %d logic frames a tick", relay, n, checked, res, most)
}

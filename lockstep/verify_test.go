package lockstep

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/transport/memnet"
)

// scoreEvents makes every client report a score event for every input
// whose id is a multiple of 3: the slot and its score so far. The client
// in cheat (or -1) rewrites its own score.
func scoreEvents(m *match, cheat int) [][]int {
	scores := make([][]int, m.cfg.Players)
	for i := range scores {
		scores[i] = make([]int, m.cfg.Players)
	}
	m.onFrame = func(slot int, c *Client, f Frame, _ *chainSim) {
		if slot >= m.cfg.Players {
			return
		}
		for i, s := range f.Slots {
			for _, in := range s.Inputs {
				if binary.LittleEndian.Uint32(in[1:])%3 != 0 {
					continue
				}
				scores[slot][i]++
				score := scores[slot][i]
				if slot == cheat && i == cheat {
					score += 100
				}
				if err := c.ReportEvent(f.Number, binary.AppendUvarint([]byte{byte(i)}, uint64(score))); err != nil {
					m.t.Errorf("client %d: %v", slot, err)
				}
			}
		}
	}
	return scores
}

// TestEventVerdictTamperedScore: over many seeded matches, a client that
// rewrites its own score event is named, alone, every time; the agreed
// result is the honest one.
func TestEventVerdictTamperedScore(t *testing.T) {
	seeds := 20
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		synctest.Test(t, func(t *testing.T) {
			link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
			m := newMatch(t, Config{Players: 5, VerifyEvents: true}, uint64(seed), link, link)
			cheat := seed % 5
			scores := scoreEvents(m, cheat)
			m.run(20*time.Second, 0.3)
			res := m.room.Result()
			v := eventsOf(m.room.Events(), EventVerdict)
			if len(v) != 1 || !slices.Equal(v[0].Players, []int{cheat}) {
				t.Fatalf("seed %d, cheat %d: verdicts %+v", seed, cheat, v)
			}
			for i, pv := range res.Players {
				if (i == cheat) != (pv.Disagreed > 0) {
					t.Fatalf("seed %d: player %d verdict %+v", seed, i, pv)
				}
				if pv.Through < m.room.NextFrame()-2*m.cfg.Hz {
					t.Fatalf("player %d reported through %d of %d frames", i, pv.Through, m.room.NextFrame())
				}
			}
			if pv := res.Players[cheat]; pv.First != v[0].Frame || pv.Disagreed < 5 {
				t.Fatalf("cheat's verdict %+v, event %+v", pv, v[0])
			}
			// The agreed events are the honest clients' scores.
			honest := (cheat + 1) % 5
			final := make([]int, 5)
			for _, e := range res.Events {
				score, _ := binary.Uvarint(e.Data[1:])
				final[e.Data[0]] = int(score)
			}
			for i := range final {
				if d := scores[honest][i] - final[i]; d < 0 || d > 3 || final[i] == 0 {
					t.Fatalf("agreed score of %d: %d, honest client counted %d", i, final[i], scores[honest][i])
				}
			}
			if len(res.NoMajority) != 0 || res.Frames < m.room.NextFrame()-2*m.cfg.Hz {
				t.Fatalf("result over %d frames of %d, no majority at %v", res.Frames, m.room.NextFrame(), res.NoMajority)
			}
		})
	}
}

// TestEventVerdictHonest: nobody cheats, nobody is named, over a match
// with a crash and a rejoin from the frame log.
func TestEventVerdictHonest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
		m := newMatch(t, Config{Players: 4, VerifyEvents: true}, 5, link, link)
		scores := scoreEvents(m, -1)
		m.run(20*time.Second, 0.3)
		m.crash(2)
		m.run(3*time.Second, 0.3)
		m.rejoin(2)
		clear(scores[2]) // the rejoined client counts from frame 0 again
		m.run(15*time.Second, 0.3)
		res := m.room.Result()
		if v := eventsOf(m.room.Events(), EventVerdict); len(v) != 0 {
			t.Fatalf("verdicts %+v", v)
		}
		if len(res.Events) < 20 || res.Players[2].Through < m.room.NextFrame()-2*m.cfg.Hz {
			t.Fatalf("result %+v", res.Players)
		}
	})
}

// scoreSim is chainSim that also reports scoreEvents' events, honestly:
// the room's reference.
type scoreSim struct {
	chainSim
	scores []int
	evs    [][]byte
}

func (s *scoreSim) Step(f Frame) {
	s.chainSim.Step(f)
	s.evs = s.evs[:0]
	if s.scores == nil {
		s.scores = make([]int, len(f.Slots))
	}
	for i, sl := range f.Slots {
		for _, in := range sl.Inputs {
			if binary.LittleEndian.Uint32(in[1:])%3 == 0 {
				s.scores[i]++
				s.evs = append(s.evs, binary.AppendUvarint([]byte{byte(i)}, uint64(s.scores[i])))
			}
		}
	}
}

func (s *scoreSim) StepEvents() [][]byte { return s.evs }

// TestEventVerdictTwoPlayersWithSim: with the room's simulation reporting
// events, a cheat among two players is named alone.
func TestEventVerdictTwoPlayersWithSim(t *testing.T) {
	for cheat := range 2 {
		synctest.Test(t, func(t *testing.T) {
			link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
			cfg := Config{Players: 2, VerifyEvents: true, Simulation: func() Simulation { return &scoreSim{} }}
			m := newMatch(t, cfg, uint64(cheat+40), link, link)
			scoreEvents(m, cheat)
			m.run(20*time.Second, 0.3)
			res := m.room.Result()
			v := eventsOf(m.room.Events(), EventVerdict)
			if len(v) != 1 || !slices.Equal(v[0].Players, []int{cheat}) || res.Players[1-cheat].Disagreed != 0 || len(res.Events) < 10 {
				t.Fatalf("cheat %d: verdicts %+v, result %+v", cheat, v, res.Players)
			}
		})
	}
}

// TestEventsHostile: event reports that break the rules are dropped with
// their reason, and the room carries on.
func TestEventsHostile(t *testing.T) {
	start := time.Unix(0, 0)
	room, err := NewRoom(Config{Players: 3, VerifyEvents: true}, start, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := NewRoom(Config{Players: 3}, start, &recorder{})
	now := room.Config().cutTime(start, 40)
	room.Tick(now)
	plain.Tick(now)
	spec, _ := room.AddSpectator(0, now)
	msg := func(e eventReport) []byte {
		var w codec.Writer
		e.encode(&w)
		return w.Bytes()
	}
	ev := func(f int, b ...byte) GameEvent { return GameEvent{Frame: f, Data: b} }
	many := make([]GameEvent, MaxEventsPerFrame+1)
	for i := range many {
		many[i] = ev(12, byte(i))
	}
	if err := room.Deliver(1, msg(eventReport{through: 10, events: []GameEvent{ev(3, 1)}}), now); err != nil {
		t.Fatal(err)
	}
	huge := msg(eventReport{through: 12, events: []GameEvent{ev(11, 1)}})
	huge[len(huge)-2] = 0xff // the length field of the last event's bytes: past the end
	tests := []struct {
		name string
		room *Room
		peer int
		msg  []byte
		why  int
	}{
		{"events from a spectator", room, spec, msg(eventReport{through: 5, events: []GameEvent{ev(1, 1)}}), DropSpectator},
		{"a room that does not verify", plain, 0, msg(eventReport{through: 5}), DropEvent},
		{"through a frame not cut", room, 0, msg(eventReport{through: 42}), DropEvent},
		{"an event for a far-future frame", room, 0, msg(eventReport{through: 1 << 30, events: []GameEvent{ev(1<<30-1, 1)}}), DropEvent},
		{"an event for a frame reported complete", room, 1, msg(eventReport{through: 12, events: []GameEvent{ev(5, 2)}}), DropEvent},
		{"too many events in a frame", room, 2, msg(eventReport{through: 13, events: many}), DropEvent},
		{"event past its report", room, 0, append(msg(eventReport{through: 5}), 0xff), DropEvent},
		{"a truncated event", room, 0, huge, DropEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.room.Stats().Dropped[tt.why]
			if tt.room.Deliver(tt.peer, tt.msg, now) == nil {
				t.Fatal("no error")
			}
			if got := tt.room.Stats().Dropped[tt.why]; got <= before {
				t.Fatalf("dropped[%s] %d -> %d", DropName(tt.why), before, got)
			}
		})
	}
	// Oversized events never leave a client.
	c, _ := NewClient(Config{Players: 3, VerifyEvents: true}, 0)
	if err := c.ReportEvent(0, make([]byte, MaxEventBytes+1)); !errors.Is(err, ErrEvent) {
		t.Fatalf("oversized event: %v", err)
	}
	if err := c.ReportEvent(0, []byte{1}); !errors.Is(err, ErrEvent) {
		t.Fatalf("event for a frame not run: %v", err)
	}
}

func FuzzDecodeEventReport(f *testing.F) {
	for _, e := range []eventReport{{through: 7}, {through: 90, events: []GameEvent{{3, []byte("goal")}, {3, nil}, {80, []byte{1, 2}}}}} {
		var w codec.Writer
		e.encode(&w)
		f.Add(w.Bytes())
	}
	// A delta that wraps the frame around to an earlier one (10, then 5).
	var w codec.Writer
	writeLife(&w, lifeEvents)
	w.WriteUvarint(90)
	w.WriteUint(2, maxEventsPerMsg)
	w.WriteUvarint(10)
	w.WriteBytes(nil, MaxEventBytes)
	w.WriteUvarint(1<<64 - 5)
	w.WriteBytes(nil, MaxEventBytes)
	f.Add(w.Bytes())
	f.Fuzz(func(t *testing.T, msg []byte) {
		if sub, r, err := lifeKind(msg); err == nil && sub == lifeEvents {
			if e, err := decodeEventReport(r); err == nil {
				prev := 0
				for _, ev := range e.events {
					if ev.Frame < prev || ev.Frame >= e.through || len(ev.Data) > MaxEventBytes {
						t.Fatalf("decoded out of bounds: %+v", e)
					}
					prev = ev.Frame
				}
			}
		}
		start := time.Unix(0, 0)
		room, _ := NewRoom(Config{Players: 2, VerifyEvents: true}, start, &recorder{})
		room.Tick(start.Add(2 * time.Second))
		room.Deliver(0, msg, start.Add(2*time.Second))
		room.Result()
	})
}

package lockstep

import (
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

func TestMatchUnderLoss(t *testing.T) {
	minutes := 20
	if testing.Short() {
		minutes = 2
	}
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 40 * time.Millisecond, Jitter: 20 * time.Millisecond, Loss: 0.2}
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

func TestMatchBurstyLossReorderDuplicate(t *testing.T) {
	minutes := 5
	if testing.Short() {
		minutes = 1
	}
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{
			Latency: 50 * time.Millisecond, Jitter: 30 * time.Millisecond, Dist: memnet.Pareto,
			Burst:     &memnet.GilbertElliott{GoodToBad: 0.03, BadToGood: 0.3, LossGood: 0.01, LossBad: 0.7},
			Reorder:   0.05,
			Duplicate: 0.05,
		}
		m := newMatch(t, Config{Players: 10, Fill: FillRepeat}, 2, link, link)
		m.run(time.Duration(minutes)*time.Minute, 0.3)
		m.check()
	})
}

func TestMatchLateNextFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 60 * time.Millisecond, Jitter: 80 * time.Millisecond, Dist: memnet.Pareto, Loss: 0.1}
		m := newMatch(t, Config{Players: 4, Late: LateNextFrame}, 3, link, link)
		m.run(time.Minute, 0.5)
		m.check()
	})
}

// TestDeadUplink: a player whose uplink dies does not hold anyone up; the
// room makes its input up in every frame after.
func TestDeadUplink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 5 * time.Millisecond}
		m := newMatch(t, Config{Players: 4}, 4, link, link)
		m.run(20*time.Second, 0.5)
		deadFrom := m.room.NextFrame()
		before := append([]int(nil), m.stalls...)
		if err := m.cside[2].SetLink(memnet.LinkConfig{Loss: 1}); err != nil {
			t.Fatal(err)
		}
		m.run(40*time.Second, 0.5)
		for n := deadFrom + m.cfg.Hz; n < m.room.NextFrame(); n++ { // a second for inputs in flight
			if f, _ := m.room.Frame(n); !f.Slots[2].MadeUp {
				t.Fatalf("frame %d has real input from the dead player", n)
			}
		}
		for i := range m.clients {
			if i == 2 {
				continue
			}
			if got := m.stalls[i] - before[i]; got > 0 {
				t.Errorf("player %d stalled %d times after player 2's uplink died", i, got)
			}
			if m.clients[i].Have() < m.room.NextFrame()-m.cfg.Hz {
				t.Errorf("player %d fell behind: %d of %d", i, m.clients[i].Have(), m.room.NextFrame())
			}
		}
		// The dead player's downlink still works: it keeps receiving frames.
		if m.clients[2].Have() < m.room.NextFrame()-m.cfg.Hz {
			t.Errorf("the dead player's downlink stopped: %d of %d", m.clients[2].Have(), m.room.NextFrame())
		}
	})
}

// recorder is a Sender that keeps what the room sent.
type recorder struct {
	unreliable, reliable [][]byte
	slots                []int
}

func (r *recorder) SendUnreliable(slot int, msg []byte) error {
	r.unreliable = append(r.unreliable, append([]byte(nil), msg...))
	r.slots = append(r.slots, slot)
	return nil
}

func (r *recorder) SendReliable(slot int, msg []byte) error {
	r.reliable = append(r.reliable, append([]byte(nil), msg...))
	return nil
}

func TestLateInput(t *testing.T) {
	for _, late := range []Late{LateDrop, LateNextFrame} {
		t.Run(fmt.Sprint(late), func(t *testing.T) {
			start := time.Unix(0, 0)
			rec := &recorder{}
			room, err := NewRoom(Config{Players: 2, Late: late}, start, rec)
			if err != nil {
				t.Fatal(err)
			}
			at := func(n int) time.Time { return room.Config().cutTime(start, n) }
			room.Tick(at(5)) // frames 0..5 cut
			c, _ := NewClient(room.Config(), 1)
			// An input stamped for frame 2, which is already cut.
			c.unacked = append(c.unacked, sentInput{seq: 1, frame: 2, data: []byte("jump")})
			c.nextSeq = 2
			if err := room.Deliver(1, c.Packet(start), at(5)); err != nil {
				t.Fatal(err)
			}
			room.Tick(at(6))
			if len(rec.reliable) != 1 {
				t.Fatalf("%d notices sent", len(rec.reliable))
			}
			if err := c.Deliver(start, rec.reliable[0]); err != nil {
				t.Fatal(err)
			}
			ns := c.Notices()
			if len(ns) != 1 || ns[0].Seq != 1 || ns[0].Target != 2 {
				t.Fatalf("notices %+v", ns)
			}
			f6, _ := room.Frame(6)
			switch late {
			case LateDrop:
				if ns[0].Applied != -1 || room.Stats().Dropped[DropLate] != 1 || !f6.Slots[1].MadeUp {
					t.Fatalf("dropped: notice %+v, stats %v, frame 6 %+v", ns[0], room.Stats().Dropped, f6)
				}
			case LateNextFrame:
				if ns[0].Applied != 6 || f6.Slots[1].MadeUp || string(f6.Slots[1].Inputs[0]) != "jump" {
					t.Fatalf("moved: notice %+v, frame 6 %+v", ns[0], f6)
				}
			}
		})
	}
}

func TestHostilePacketsDroppedAndCounted(t *testing.T) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 3, InputsPerFrame: 2}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	at := func(n int) time.Time { return room.Config().cutTime(start, n) }
	room.Tick(at(10))
	now := at(10)
	packet := func(u uplink) []byte {
		w := codecWriter()
		u.encode(w)
		return append([]byte(nil), w.Bytes()...)
	}
	tests := []struct {
		name   string
		slot   int
		msg    []byte
		reason int
	}{
		{"garbage", 0, []byte{0xff, 0x13, 0x37}, DropMalformed},
		{"empty", 0, nil, DropMalformed},
		{"a frames packet sent up", 0, []byte{kindFrames}, DropMalformed},
		{"another slot", 7, packet(uplink{}), DropSlot},
		{"negative slot", -1, packet(uplink{}), DropSlot},
		{"acknowledges the future", 0, packet(uplink{have: 500}), DropAck},
		{"input from the far future", 0, packet(uplink{firstSeq: 1, inputs: []upInput{{frame: 1 << 20, data: []byte{1}}}}), DropFuture},
		{"oversized input", 0, packet(uplink{firstSeq: 2, inputs: []upInput{{frame: 12, data: make([]byte, 100)}}}), DropSize},
		{"sequence far ahead", 0, packet(uplink{firstSeq: 1 << 30, inputs: []upInput{{frame: 12, data: []byte{1}}}}), DropSequence},
		{"too many inputs for a frame", 1, packet(uplink{firstSeq: 1, inputs: []upInput{{12, []byte{1}}, {12, []byte{2}}, {12, []byte{3}}}}), DropTooMany},
		{"truncated", 0, packet(uplink{firstSeq: 1, inputs: []upInput{{12, []byte("abcdef")}}})[:4], DropMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := room.Stats().Dropped[tt.reason]
			room.Deliver(tt.slot, tt.msg, now)
			if got := room.Stats().Dropped[tt.reason]; got != before+1 {
				t.Fatalf("%s: dropped[%s] %d -> %d", tt.name, DropName(tt.reason), before, got)
			}
		})
	}
	// The honest player in slot 2 is unaffected.
	c, _ := NewClient(room.Config(), 2)
	c.unacked = append(c.unacked, sentInput{seq: 1, frame: 11, data: []byte("ok")})
	c.nextSeq = 2
	if err := room.Deliver(2, c.Packet(now), now); err != nil {
		t.Fatal(err)
	}
	room.Tick(at(12))
	f, _ := room.Frame(11)
	if f.Slots[2].MadeUp || string(f.Slots[2].Inputs[0]) != "ok" {
		t.Fatalf("honest input lost: %+v", f.Slots[2])
	}
	if f, _ := room.Frame(12); f.Slots[1].MadeUp || len(f.Slots[1].Inputs) != 2 {
		t.Fatalf("slot 1 may put 2 inputs in frame 12: %+v", f.Slots[1])
	}
}

// TestLateNoticesBounded: a client flooding late inputs between two ticks
// makes the room hold a bounded number of notices.
func TestLateNoticesBounded(t *testing.T) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, _ := NewRoom(Config{Players: 1}, start, rec)
	at := func(n int) time.Time { return room.Config().cutTime(start, n) }
	room.Tick(at(20))
	seq := uint32(1)
	for range 100 {
		u := uplink{firstSeq: seq}
		for range maxUplinkInputs {
			u.inputs = append(u.inputs, upInput{frame: 1, data: []byte{1}})
		}
		w := codecWriter()
		u.encode(w)
		room.Deliver(0, w.Bytes(), at(20))
		seq += maxUplinkInputs
	}
	if n := len(room.players[0].notices); n > maxNotices {
		t.Fatalf("%d notices held", n)
	}
	room.Tick(at(21))
	if len(rec.reliable) != 2 { // 64 notices: one message of 63 and one of 1
		t.Fatalf("%d notice messages", len(rec.reliable))
	}
}

// TestInputWindow: the room takes an input stamped up to MaxAhead frames
// past its next cut, as a predicting client's are, and refuses one beyond
// with a notice (Applied -1) that the client reads.
func TestInputWindow(t *testing.T) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 1, Hz: 60, MaxAhead: 20}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	at := func(n int) time.Time { return room.Config().cutTime(start, n) }
	room.Tick(at(10)) // next cut: 11
	c, _ := NewClient(room.Config(), 0)
	if _, err := c.inputFor(at(10), 31, []byte{1}); err != nil { // 11 + 20: the edge
		t.Fatal(err)
	}
	if err := room.Deliver(0, c.Packet(at(10)), at(10)); err != nil {
		t.Fatalf("input at the window's edge: %v", err)
	}
	if _, err := c.inputFor(at(10), 32, []byte{2}); err != nil {
		t.Fatal(err)
	}
	if err := room.Deliver(0, c.Packet(at(10)), at(10)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("input beyond the window: %v", err)
	}
	if room.Stats().Dropped[DropFuture] != 1 {
		t.Fatalf("dropped %v", room.Stats().Dropped)
	}
	room.Tick(at(11))
	for _, m := range rec.reliable {
		c.Deliver(at(11), m)
	}
	ns := c.Notices()
	if len(ns) != 1 || ns[0].Target != 32 || ns[0].Applied != -1 || ns[0].Seq != 2 {
		t.Fatalf("notices %+v", ns)
	}
}

// TestCutLateFromSecondFrame: a room whose start lies in the past (the
// engine spreads its rooms' starts over the period) cuts frame 0 at once
// without counting it late; later frames count as ever.
func TestCutLateFromSecondFrame(t *testing.T) {
	now := time.Unix(1000, 0)
	cfg := Config{Players: 2, Hz: 20}
	room, err := NewRoom(cfg, now.Add(-40*time.Millisecond), &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if !room.NextCut().Before(now) {
		t.Fatalf("frame 0 due at %v, want before %v", room.NextCut(), now)
	}
	room.Tick(now)
	if room.NextFrame() != 1 || room.Stats().MaxCutLate != 0 {
		t.Fatalf("after the first tick: next frame %d, max cut late %v; want 1 and 0", room.NextFrame(), room.Stats().MaxCutLate)
	}
	room.Tick(room.NextCut().Add(3 * time.Millisecond))
	if got := room.Stats().MaxCutLate; got != 3*time.Millisecond {
		t.Errorf("frame 1 cut 3 ms late: max cut late %v", got)
	}
}

func TestSecondLeast(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{5}, 5},
		{[]float64{5, 3}, 5},
		{[]float64{3, 5}, 5},
		{[]float64{2, 2, 9}, 2},
		{[]float64{9, 1, 4, -3, 7}, 1},
		{[]float64{-1, -1, -1}, -1},
	} {
		if got := secondLeast(tc.in); got != tc.want {
			t.Errorf("secondLeast(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

// TestStartAt: a room's frame 0 moves to the first moment of its
// schedule at or after the time given, whether later or earlier than
// NewRoom's start; a packet heard before the move is timed from the new
// start; once a frame is cut the start stays.
func TestStartAt(t *testing.T) {
	start := time.Unix(100, 0)
	room, err := NewRoom(Config{Players: 2, Hz: 10}, start, nopSender{})
	if err != nil {
		t.Fatal(err)
	}
	w := codecWriter()
	(&uplink{firstSeq: 1}).encode(w)
	heardAt := start.Add(5 * time.Second)
	if err := room.Deliver(0, w.Bytes(), heardAt); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at, want time.Duration // from NewRoom's start
	}{
		{20*time.Second + 30*time.Millisecond, 20*time.Second + 100*time.Millisecond},
		{20 * time.Second, 20 * time.Second},
		{-time.Second - 50*time.Millisecond, -time.Second},
	} {
		if !room.StartAt(start.Add(tc.at)) {
			t.Fatalf("StartAt(%v) refused before any cut", tc.at)
		}
		if got := room.NextCut().Sub(start); got != tc.want {
			t.Fatalf("StartAt(%v): frame 0 at %v, want %v", tc.at, got, tc.want)
		}
		if got, want := room.players[0].heard, heardAt.Sub(room.NextCut()); got != want {
			t.Fatalf("StartAt(%v): the packet heard at %v from the start, want %v", tc.at, got, want)
		}
		if room.players[1].heard != neverHeard {
			t.Fatal("a player never heard from was given a time")
		}
	}
	room.Tick(room.NextCut().Add(-time.Millisecond))
	if room.NextFrame() != 0 {
		t.Fatal("a frame was cut before the start")
	}
	at := room.NextCut()
	room.Tick(at)
	if room.NextFrame() != 1 {
		t.Fatalf("%d frames cut at the start, want 1", room.NextFrame())
	}
	if room.StartAt(at.Add(time.Hour)) || room.NextCut() != at.Add(100*time.Millisecond) {
		t.Fatal("StartAt moved a room that had cut a frame")
	}
}

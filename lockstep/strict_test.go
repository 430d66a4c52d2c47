package lockstep

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// slowLink gives slot its own links, in place of the match's.
func (m *match) slowLink(slot int, up, down memnet.LinkConfig) {
	m.cside[slot], m.sside[slot] = m.net.Pipe(up, down)
}

// inTarget counts, for each player, the inputs the room placed in the
// frame their client aimed them at, and those it placed elsewhere or not
// at all (but the last second's, which may be in flight).
func (m *match) inTarget() (in, off []int) {
	cut := m.room.NextFrame()
	where := map[[2]uint32]int{}
	for n := range cut {
		f, _ := m.room.Frame(n)
		for slot, s := range f.Slots {
			for _, data := range s.Inputs {
				if !s.MadeUp {
					where[[2]uint32{uint32(slot), binary.LittleEndian.Uint32(data[1:])}] = n
				}
			}
		}
	}
	in, off = make([]int, m.cfg.Players), make([]int, m.cfg.Players)
	for slot, sent := range m.sent[:m.cfg.Players] {
		for id, target := range sent {
			n, ok := where[[2]uint32{uint32(slot), id}]
			switch {
			case ok && n == target:
				in[slot]++
			case !ok && target >= cut-m.cfg.Hz:
			default:
				off[slot]++
			}
		}
	}
	return in, off
}

// TestStrictEveryInputInItsFrame: in a strict room one player on a slow,
// jittery, lossy link gets every input into the frame its client aimed it
// at, as do the others; the same match in a room that cuts on its clock
// has that player's inputs late. Every client plays the room's frames.
func TestStrictEveryInputInItsFrame(t *testing.T) {
	fast := memnet.LinkConfig{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05}
	slow := memnet.LinkConfig{Latency: 120 * time.Millisecond, Jitter: 60 * time.Millisecond, Loss: 0.1, Dist: memnet.Pareto}
	play := func(t *testing.T, strict bool) *match {
		m := newMatch(t, Config{Players: 4, Strict: strict}, 5, fast, fast)
		m.slowLink(3, slow, slow)
		m.run(60*time.Second, 0.5)
		m.check()
		return m
	}
	synctest.Test(t, func(t *testing.T) {
		m := play(t, false)
		st := m.room.PlayerStats(3)
		if st.LateDrops+st.LateMoved == 0 {
			t.Fatalf("the slow player had no late input in a room on its clock: %+v", st)
		}
		t.Logf("on the clock: the slow player's late inputs %d (of %d)", st.LateDrops+st.LateMoved, st.Inputs)
	})
	synctest.Test(t, func(t *testing.T) {
		m := play(t, true)
		in, off := m.inTarget()
		for slot := range 4 {
			st := m.room.PlayerStats(slot)
			if off[slot] != 0 || st.LateDrops+st.LateMoved != 0 || in[slot] < 500 {
				t.Errorf("slot %d: %d inputs in their frames, %d not, %d late", slot, in[slot], off[slot], st.LateDrops+st.LateMoved)
			}
		}
		rs := m.room.Stats()
		if rs.GivenUp != 0 || m.room.NextFrame() < 60*15*8/10 {
			t.Errorf("strict: %d frames in 60 s, %d given up on", m.room.NextFrame(), rs.GivenUp)
		}
		t.Logf("strict: %d frames, waited %v in all, %d waits told; inputs in their frames %v", m.room.NextFrame(), rs.Waited, rs.Waits, in)
	})
}

// TestStrictWaitsThenGivesUp: a player who stops sending holds a strict
// room: the others are told whom they wait for, and no frame is cut;
// after StrictWait the room plays on without it, and takes it back when
// it is in time again. A shorter pause is waited out whole. Every client
// plays the same frames and reaches the same states, and the clients'
// playout comes back to its depth after the waits.
func TestStrictWaitsThenGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05}
		m := newMatch(t, Config{Players: 3, Strict: true, StrictWait: time.Second}, 9, link, link)
		m.run(5*time.Second, 0.3)

		// A short pause: waited out.
		m.away[2] = true
		before := m.room.NextFrame()
		m.run(600*time.Millisecond, 0.3)
		if n := m.room.NextFrame() - before; n > 2 {
			t.Fatalf("%d frames cut while a player was silent for 600 ms", n)
		}
		m.away[2] = false
		m.run(3*time.Second, 0.3)
		evs := m.room.Events()
		if w := eventsOf(evs, EventWaiting); len(w) != 1 || !slices.Equal(w[0].Players, []int{2}) {
			t.Fatalf("waiting events %+v", w)
		}
		if w := eventsOf(evs, EventWaited); len(w) != 1 || len(w[0].Players) != 0 || w[0].After < 500*time.Millisecond {
			t.Fatalf("waited events %+v", w)
		}
		for slot := range 2 {
			if !m.waitSeen[slot][2] {
				t.Errorf("client %d was never told the room waits for slot 2", slot)
			}
		}

		// A long one: the room plays on after StrictWait.
		m.away[2] = true
		before = m.room.NextFrame()
		m.run(4*time.Second, 0.3)
		if n := m.room.NextFrame() - before; n < 2*15 {
			t.Fatalf("%d frames in the 3 s after giving up on a player", n)
		}
		m.away[2] = false
		m.run(10*time.Second, 0.3)
		evs = m.room.Events()
		if w := eventsOf(evs, EventWaited); len(w) != 1 || !slices.Equal(w[0].Players, []int{2}) || w[0].After < time.Second {
			t.Fatalf("waited events %+v", w)
		}
		if rs := m.room.Stats(); rs.GivenUp != 1 {
			t.Fatalf("given up %d times", rs.GivenUp)
		}
		// Back in time: waited for again.
		m.away[2] = true
		before = m.room.NextFrame()
		m.run(500*time.Millisecond, 0.3)
		if n := m.room.NextFrame() - before; n > 2 {
			t.Fatalf("%d frames cut while the player taken back was silent", n)
		}
		m.away[2] = false
		m.run(5*time.Second, 0.3)
		m.check()
		if n := m.sameHashes(0, 1, 2); n < 20 {
			t.Fatalf("only %d hash comparisons", n)
		}
		for slot, target := range m.targets[:3] {
			if target > 3 {
				t.Errorf("client %d aims its playout %.1f frames deep after the waits", slot, target)
			}
		}
		in, off := m.inTarget()
		t.Logf("inputs in their frames %v, elsewhere %v; room %+v", in, off, m.room.Stats())
	})
}

// TestStrictSealBounds: a seal beyond the frames a client may aim at is
// dropped with an error; a room whose players never seal waits
// StrictWait for them, then plays on without them.
func TestStrictSealBounds(t *testing.T) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 2, Hz: 15, Strict: true, StrictWait: time.Second}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	var w = codecWriter()
	u := uplink{sealed: 1 << 20}
	u.encode(w)
	if err := room.Deliver(0, w.Bytes(), start); err == nil {
		t.Fatal("a seal a million frames ahead was taken")
	}
	if room.Stats().Dropped[DropFuture] != 1 {
		t.Fatalf("drops %v", room.Stats().Dropped)
	}
	for at := time.Duration(0); at < 990*time.Millisecond; at += 10 * time.Millisecond {
		room.Tick(start.Add(at))
	}
	if room.NextFrame() != 1 {
		t.Fatalf("%d frames cut in the wait for players who never sealed", room.NextFrame())
	}
	for at := time.Second; at < 2*time.Second; at += 10 * time.Millisecond {
		room.Tick(start.Add(at))
	}
	if n := room.NextFrame(); n < 15 || room.Stats().GivenUp != 2 {
		t.Fatalf("%d frames in the second after giving up; %+v", n, room.Stats())
	}
	evs := room.Events()
	if w := eventsOf(evs, EventWaited); len(w) != 1 || !slices.Equal(w[0].Players, []int{0, 1}) {
		t.Fatalf("events %+v", evs)
	}
}

// TestStrictPausesAcrossAFailover: a client that carries its state to a
// room that continues the match (RestoreRoom, on Room.Start, which the
// pauses moved) folds the pauses so far into its clock: the room's frame
// it estimates is the same, and that room's own pauses count from zero.
func TestStrictPausesAcrossAFailover(t *testing.T) {
	cfg := Config{Players: 2, Hz: 15, Strict: true}
	c, _ := NewClient(cfg, 0)
	start := time.Unix(100, 0)
	c.frame(start, Frame{Number: 0, Slots: make([]Slot, 2)})
	c.strict.learnPause(10, 1500)
	c.jb.paused = c.strict.paused()
	now := start.Add(5 * time.Second)
	before, target := c.serverFrame(now), c.jb.paused-c.jb.paused0
	c.Reconnected()
	if after := c.serverFrame(now); math.Abs(after-before) > 1e-9 || c.strict.paused() != 0 || c.jb.paused-c.jb.paused0 != target {
		t.Fatalf("estimate %v then %v; pauses %v; buffer %v, was %v", before, after, c.strict.pauses, c.jb.paused-c.jb.paused0, target)
	}
	c.strict.learnPause(40, 200) // the continuing room's first wait
	if got := c.strict.pausedAt(41); got != 200 {
		t.Fatalf("the continuing room's pause read as %v", got)
	}
}

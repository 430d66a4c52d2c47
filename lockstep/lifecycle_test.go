package lockstep

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// crash takes a player's client away: the room is told it left.
func (m *match) crash(slot int) {
	m.away[slot] = true
	clear(m.sent[slot]) // what it had in flight is lost with it
	if err := m.room.Leave(slot); err != nil {
		m.t.Fatal(err)
	}
}

// rejoin gives the slot a fresh client over a fresh connection.
func (m *match) rejoin(slot int) {
	c, s := m.net.Pipe(m.up, m.down)
	m.cside[slot], m.sside[slot] = c, s
	cl, err := NewClient(m.cfg, slot)
	if err != nil {
		m.t.Fatal(err)
	}
	m.clients[slot] = cl
	m.sims[slot], m.hashes[slot], m.played[slot], m.snapAt[slot] = &chainSim{}, map[int]uint64{}, nil, 0
	m.away[slot] = false
	if err := m.room.Join(slot, time.Now()); err != nil {
		m.t.Fatal(err)
	}
}

// spectate adds a spectator with delay and returns its index in m.clients.
func (m *match) spectate(delay time.Duration) int {
	id, err := m.room.AddSpectator(delay, time.Now())
	if err != nil {
		m.t.Fatal(err)
	}
	c, s := m.net.Pipe(m.up, m.down)
	m.cside = append(m.cside, c)
	m.sside = append(m.sside, s)
	cl, err := NewSpectator(m.cfg)
	if err != nil {
		m.t.Fatal(err)
	}
	m.addClient(cl)
	if id != len(m.clients)-1 {
		m.t.Fatalf("spectator id %d, want %d", id, len(m.clients)-1)
	}
	return id
}

// sameHashes checks that every client reached the same hash at every
// checked frame they all ran.
func (m *match) sameHashes(slots ...int) int {
	t := m.t
	t.Helper()
	compared := 0
	for f, h0 := range m.hashes[slots[0]] {
		for _, s := range slots[1:] {
			if h, ok := m.hashes[s][f]; ok {
				compared++
				if h != h0 {
					t.Fatalf("frame %d: client %d hash %x, client %d hash %x", f, s, h, slots[0], h0)
				}
			}
		}
	}
	return compared
}

func eventsOf(evs []Event, k EventKind) []Event {
	var out []Event
	for _, e := range evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// TestReconnect: a player crashes at minute 19 of a 20-minute 10-player
// match under 10% loss, rejoins with a fresh client, catches up from
// frame 0 and ends with the same state as everyone else.
func TestReconnect(t *testing.T) {
	total, at := 20*time.Minute, 19*time.Minute
	if testing.Short() {
		total, at = 2*time.Minute, 90*time.Second
	}
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 25 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
		m := newMatch(t, Config{Players: 10}, 11, link, link)
		m.run(at, 0.3)
		m.crash(4)
		m.run(5*time.Second, 0.3)
		m.rejoin(4)
		joinedAt := m.room.NextFrame()
		m.run(total-at-5*time.Second, 0.3)
		m.check()
		if m.caught[4] < joinedAt-m.cfg.Hz {
			t.Errorf("the rejoined client ran %d frames catching up, %d were cut before it joined", m.caught[4], joinedAt)
		}
		if n := m.sameHashes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9); n < 9*joinedAt/m.cfg.HashEvery {
			t.Errorf("only %d hash comparisons", n)
		}
		evs := m.room.Events()
		live := eventsOf(evs, EventLive)
		if len(live) != 1 || live[0].Slot != 4 {
			t.Fatalf("live events %+v", live)
		}
		if d := eventsOf(evs, EventDesync); len(d) != 0 {
			t.Fatalf("desync events %+v", d)
		}
		q := m.room.Quality()
		p := q.Peers[4]
		if p.Reconnects != 1 || p.ToLive != live[0].After || p.CatchUpBytes == 0 {
			t.Fatalf("quality of the rejoined player: %+v", p)
		}
		t.Logf("to live %v after %d frames, %d catch-up bytes; match quality %+v", live[0].After, joinedAt, p.CatchUpBytes, q.Match)
	})
}

// TestDesync: one of 5 players diverges by one bit; the room names it and
// the first checked frame after the divergence, and the dumps it asks for
// arrive.
func TestDesync(t *testing.T) {
	for _, at := range []int{31, 45, 200} {
		synctest.Test(t, func(t *testing.T) {
			link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
			m := newMatch(t, Config{Players: 5, DumpOnDesync: true}, uint64(at), link, link)
			m.corrupt[3] = at
			m.run(30*time.Second, 0.3)
			evs := m.room.Events()
			d := eventsOf(evs, EventDesync)
			want := (at + m.cfg.HashEvery - 1) / m.cfg.HashEvery * m.cfg.HashEvery
			if len(d) != 1 || !slices.Equal(d[0].Players, []int{3}) || d[0].Frame != want {
				t.Fatalf("corrupted after frame %d: desync events %+v, want player 3 at frame %d", at, d, want)
			}
			dumps := eventsOf(evs, EventDump)
			if len(dumps) != 2 {
				t.Fatalf("dump events %+v", dumps)
			}
			for _, e := range dumps {
				if e.Frame != want || (e.Slot == 3) == e.Agrees || !bytes.Contains(e.Dump, []byte("frame")) {
					t.Fatalf("dump %+v", e)
				}
			}
			if q := m.room.Quality(); q.Peers[3].DesyncFrame != want || q.Peers[0].DesyncFrame != -1 || q.Desyncs != 1 {
				t.Fatalf("quality desync frames %d %d, desyncs %d", q.Peers[3].DesyncFrame, q.Peers[0].DesyncFrame, q.Desyncs)
			}
		})
	}
}

// TestDesyncTrials: over many seeded trials, one of 10 clients diverges by
// one bit after a random frame, under 10% loss; the room names that
// player, and only it, at the first checked frame after the divergence:
// within HashEvery (15) frames of it.
func TestDesyncTrials(t *testing.T) {
	trials := 30
	if testing.Short() {
		trials = 8
	}
	rng := rand.New(rand.NewPCG(2026, 5))
	for trial := range trials {
		slot, at := rng.IntN(10), 1+rng.IntN(150)
		synctest.Test(t, func(t *testing.T) {
			link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
			m := newMatch(t, Config{Players: 10}, uint64(100+trial), link, link)
			m.corrupt[slot] = at
			// The divergence, its checked frame, and the room's 3 s wait
			// for every hash of a frame, with room to spare.
			m.run(time.Duration(at)*m.cfg.Period()+6*time.Second, 0.3)
			d := eventsOf(m.room.Events(), EventDesync)
			want := (at + m.cfg.HashEvery - 1) / m.cfg.HashEvery * m.cfg.HashEvery
			if len(d) != 1 || !slices.Equal(d[0].Players, []int{slot}) || d[0].Frame != want {
				t.Fatalf("trial %d: player %d corrupted after frame %d: desync events %+v, want player %d at frame %d",
					trial, slot, at, d, slot, want)
			}
			if late := d[0].Frame - at; late < 0 || late >= 15 {
				t.Fatalf("trial %d: divergence after frame %d reported at frame %d", trial, at, d[0].Frame)
			}
			if q := m.room.Quality(); q.Peers[slot].DesyncFrame != want {
				t.Fatalf("trial %d: quality desync frame %d, want %d", trial, q.Peers[slot].DesyncFrame, want)
			}
		})
	}
}

// TestDesyncTwoPlayers: with two players there is no majority: the room
// reports a dispute, with both hashes, and names no one.
func TestDesyncTwoPlayers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 20 * time.Millisecond}
		m := newMatch(t, Config{Players: 2}, 5, link, link)
		m.corrupt[1] = 100
		m.run(20*time.Second, 0.3)
		evs := m.room.Events()
		if d := eventsOf(evs, EventDesync); len(d) != 0 {
			t.Fatalf("desync events %+v, want none", d)
		}
		d := eventsOf(evs, EventDispute)
		if len(d) != 1 || !slices.Equal(d[0].Players, []int{0, 1}) || d[0].Frame != 105 || len(d[0].Hashes) != 2 || d[0].Hashes[0] == d[0].Hashes[1] {
			t.Fatalf("dispute events %+v, want one at frame 105 naming both with their two hashes", d)
		}
	})
}

// TestSpectators: a spectator with a delay receives every frame no earlier
// than the delay after its cut; one who comes late catches up.
func TestSpectators(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}
		m := newMatch(t, Config{Players: 4}, 6, link, link)
		const delay = 3 * time.Second
		early := m.spectate(delay)
		m.run(40*time.Second, 0.3)
		late := m.spectate(delay)
		m.run(30*time.Second, 0.3)
		m.check()
		for _, s := range []int{early, late} {
			if len(m.played[s]) < m.room.NextFrame()-4*m.cfg.Hz {
				t.Fatalf("spectator %d played %d of %d frames", s, len(m.played[s]), m.room.NextFrame())
			}
			for k, f := range m.played[s] {
				want, _ := m.room.Frame(k)
				if f.Number != k || !sameFrame(f, want, m.cfg.Fill) {
					t.Fatalf("spectator %d played frame %d as %+v", s, k, f)
				}
			}
		}
		for n, after := range m.recvAt[early] {
			if after < delay {
				t.Fatalf("spectator saw frame %d %v after its cut, delay %v", n, after, delay)
			}
		}
		if m.caught[late] < 30*m.cfg.Hz || m.caught[early] != 0 {
			t.Fatalf("catching up: late spectator %d frames, early %d", m.caught[late], m.caught[early])
		}
		m.sameHashes(0, 1, early, late)
		if st := m.room.Stats(); st.Dropped[DropSpectator] != 0 {
			t.Fatalf("spectator inputs %d", st.Dropped[DropSpectator])
		}
	})
}

// recordedMatch plays a short match that a recorder records, attached
// mid-match (TestReplayRoundTrip, in record_test.go, records it with a
// replay file's writer): record makes it for the match's configuration
// and start; done runs in the match's bubble when the match ends, with
// the frames the room cut.
func recordedMatch(t *testing.T, record func(t *testing.T, cfg Config, start time.Time) Recorder, done func(t *testing.T, frames int)) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}
		m := newMatch(t, Config{Players: 4, Fill: FillRepeat}, 8, link, link)
		rec := record(t, m.cfg, m.room.start)
		m.run(10*time.Second, 0.5)
		if err := m.room.Record(rec); err != nil { // mid-match: the frames so far first
			t.Fatal(err)
		}
		m.run(20*time.Second, 0.5)
		m.crash(2)
		m.run(3*time.Second, 0.5)
		m.rejoin(2)
		m.run(15*time.Second, 0.5)
		done(t, m.room.NextFrame())
		// The room's hash checks resolve up to 3 s after their frame.
		m.check()
	})
}

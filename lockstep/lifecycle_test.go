package lockstep

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
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

// recordedMatch plays a short match that a replay writer records.
func recordedMatch(t *testing.T) ([]byte, *match) {
	var buf bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}
		m := newMatch(t, Config{Players: 4, Fill: FillRepeat}, 8, link, link)
		rw, err := NewReplayWriter(&buf, ReplayHeader{Game: "chain", Config: m.cfg, Start: m.room.start, Players: []string{"a", "b", "c", "d"}})
		if err != nil {
			t.Fatal(err)
		}
		m.run(10*time.Second, 0.5)
		if err := m.room.Record(rw); err != nil { // mid-match: the frames so far first
			t.Fatal(err)
		}
		m.run(20*time.Second, 0.5)
		m.crash(2)
		m.run(3*time.Second, 0.5)
		m.rejoin(2)
		m.run(15*time.Second, 0.5)
		if err := rw.Close(); err != nil {
			t.Fatal(err)
		}
		st := rw.Stats()
		if st.Frames != m.room.NextFrame() || st.Blocks < 4 {
			t.Fatalf("writer stats %+v, %d frames cut", st, m.room.NextFrame())
		}
		// The room's hash checks resolve up to 3 s after their frame.
		m.check()
	})
	return buf.Bytes(), nil
}

func TestReplayRoundTrip(t *testing.T) {
	file, _ := recordedMatch(t)
	rr, err := NewReplayReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	h := rr.Header()
	if h.Game != "chain" || h.Config.Players != 4 || h.Players[3] != "d" || h.Config.Fill != FillRepeat {
		t.Fatalf("header %+v", h)
	}
	res, err := Verify(rr, &chainSim{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mismatch != 0 || res.Checked < 30 || res.Desyncs != 0 || res.Records < res.Checked+2 {
		t.Fatalf("verify %+v", res)
	}
	t.Logf("replay of %d frames: %d bytes; %+v", res.Frames, len(file), res)

	// A different simulation does not verify.
	rr, _ = NewReplayReader(bytes.NewReader(file))
	if res, err := Verify(rr, &offSim{}); err != nil || res.Mismatch == 0 || res.FirstMismatch != 0 {
		t.Fatalf("a wrong simulation: %+v, %v", res, err)
	}

	// Every truncation is reported as such; nothing panics.
	for cut := 0; cut < len(file); cut += 1 + cut/8 {
		err := readAll(file[:cut])
		if !errors.Is(err, ErrReplayTruncated) && !errors.Is(err, ErrReplay) {
			t.Fatalf("cut at %d of %d: %v", cut, len(file), err)
		}
	}
	if err := readAll(file[:len(file)-1]); !errors.Is(err, ErrReplayTruncated) {
		t.Fatalf("last byte cut: %v", err)
	}
	// Every flipped byte is caught.
	for i := 0; i < len(file); i += 1 + i/16 {
		bad := slices.Clone(file)
		bad[i] ^= 0x20
		if err := readAll(bad); err == nil {
			t.Fatalf("byte %d flipped: read without error", i)
		}
	}
	if err := readAll(append(slices.Clone(file), 0)); !errors.Is(err, ErrReplay) {
		t.Fatalf("trailing byte: %v", err)
	}
}

func TestTinyReplay(t *testing.T) {
	file := tinyReplay()
	rr, err := NewReplayReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var checks, joins, leaves, others int
	for {
		_, err := rr.Next()
		for _, r := range rr.Records() {
			switch r.Kind {
			case RecordCheck:
				checks++
				if len(r.Check.Others) > 0 && r.Check.Majority {
					others++
					if r.Check.Others[0].Slot != 1 || r.Check.Others[0].Hash != uint64(r.Frame)+1 || r.Check.Hash != uint64(r.Frame) {
						t.Fatalf("check %+v", r.Check)
					}
				}
			case RecordJoin:
				joins++
			case RecordLeave:
				leaves++
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if checks < 70 || others < 20 || joins != 1 || leaves != 1 {
		t.Fatalf("%d checks (%d with dissent), %d joins, %d leaves", checks, others, joins, leaves)
	}
}

type offSim struct{ chainSim }

func (s *offSim) Hash() uint64 { return s.chainSim.Hash() + 1 }

func readAll(b []byte) error {
	rr, err := NewReplayReader(bytes.NewReader(b))
	if err != nil {
		return err
	}
	for {
		_, err := rr.Next()
		rr.Records()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// tinyReplay records a room driven by hand: inputs, hash reports (one
// player off at frame 60), a leave and a join.
func tinyReplay() []byte {
	var buf bytes.Buffer
	start := time.Unix(0, 0)
	cfg := Config{Players: 3, HashEvery: 5}.WithDefaults()
	room, _ := NewRoom(cfg, start, &recorder{})
	rw, _ := NewReplayWriter(&buf, ReplayHeader{Game: "chain", Config: cfg, Start: start, Params: []byte{1, 2}})
	room.Record(rw)
	seq := make([]uint32, 3)
	for n := range 400 {
		now := cfg.cutTime(start, n)
		for p := range 3 {
			u := uplink{sent: uint16(n)}
			if n%(p+2) == 0 {
				seq[p]++
				u.firstSeq, u.inputs = seq[p], []upInput{{n + 1, []byte{byte(n), byte(p)}}}
			}
			if f := n - 3; f >= 0 && f%5 == 0 {
				u.hasHash, u.hashFrame, u.hash = true, f, uint64(f)
				if p == 1 && f >= 60 {
					u.hash++
				}
			}
			var w codec.Writer
			u.encode(&w)
			room.Deliver(p, w.Bytes(), now)
		}
		if n == 200 {
			room.Leave(2)
		}
		if n == 250 {
			room.Join(2, now)
			seq[2] = 0
		}
		room.Tick(now)
	}
	rw.Close()
	return buf.Bytes()
}

func FuzzReplayReader(f *testing.F) {
	file := tinyReplay()
	f.Add(file)
	f.Add(file[:len(file)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		rr, err := NewReplayReader(bytes.NewReader(b))
		if err != nil {
			return
		}
		cfg := rr.Header().Config
		for n := 0; ; n++ {
			fr, err := rr.Next()
			if err != nil {
				return
			}
			if fr.Number != n || len(fr.Slots) != cfg.Players {
				t.Fatalf("frame %d decoded as %d with %d slots", n, fr.Number, len(fr.Slots))
			}
			for _, rec := range rr.Records() {
				if rec.Slot < 0 || rec.Slot >= cfg.Players || rec.Frame < 0 {
					t.Fatalf("record %+v", rec)
				}
			}
		}
	})
}

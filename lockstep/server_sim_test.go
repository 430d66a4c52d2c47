package lockstep

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/transport/memnet"
)

func chainFactory() Simulation { return &chainSim{} }

// TestSimDesyncTwoPlayers: with the room's own simulation as the reference,
// a desync in a two-player room names the diverging player alone (without
// it, two players who disagree are both named).
func TestSimDesyncTwoPlayers(t *testing.T) {
	for _, tt := range []struct {
		slot, at int
	}{{0, 31}, {1, 45}, {1, 200}} {
		synctest.Test(t, func(t *testing.T) {
			link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
			m := newMatch(t, Config{Players: 2, Simulation: chainFactory}, uint64(tt.at), link, link)
			m.corrupt[tt.slot] = tt.at
			m.run(30*time.Second, 0.3)
			d := eventsOf(m.room.Events(), EventDesync)
			want := (tt.at + m.cfg.HashEvery - 1) / m.cfg.HashEvery * m.cfg.HashEvery
			if len(d) != 1 || !slices.Equal(d[0].Players, []int{tt.slot}) || d[0].Frame != want {
				t.Fatalf("player %d corrupted after frame %d: desync events %+v, want player %d at frame %d", tt.slot, tt.at, d, tt.slot, want)
			}
			honest := 1 - tt.slot
			compared := 0
			for f, h := range m.hashes[honest] {
				ref, ok := m.room.SimHash(f)
				if !ok {
					continue
				}
				compared++
				if ref != h {
					t.Fatalf("frame %d: the room's simulation hashed %x, the honest client %x", f, ref, h)
				}
				if mh, ok := m.room.MajorityHash(f); m.room.NextFrame()-f > 3*m.cfg.Hz && (!ok || mh != ref) {
					t.Fatalf("frame %d: reference hash %x %v, want %x", f, mh, ok, ref)
				}
			}
			if compared < 20 {
				t.Fatalf("only %d frames compared with the room's simulation", compared)
			}
			if st := m.room.Stats(); st.SimFrames < m.room.NextFrame()-1 || st.SimBehind != 0 {
				t.Fatalf("simulation stats %+v after %d frames", st, m.room.NextFrame())
			}
		})
	}
}

// TestReconnectSnapshot: in a room running the game, a player who crashes
// and rejoins is sent a snapshot and the frames after it, not the frame
// log, and ends with the same state hash as everyone else.
func TestReconnectSnapshot(t *testing.T) {
	total, at := 3*time.Minute, 150*time.Second
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 25 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.1}
		m := newMatch(t, Config{Players: 10, Simulation: chainFactory}, 12, link, link)
		m.run(at, 0.3)
		m.crash(4)
		m.run(5*time.Second, 0.3)
		m.rejoin(4)
		joinedAt := m.room.NextFrame()
		m.run(total-at-5*time.Second, 0.3)
		m.check()
		st := m.room.Stats()
		if st.Snapshots != 1 {
			t.Fatalf("%d snapshots taken, want 1", st.Snapshots)
		}
		if m.snapAt[4] < joinedAt-m.cfg.SimStepsPerTick-defaultSimSteps || m.snapAt[4] > joinedAt {
			t.Fatalf("the rejoined client restored a snapshot at frame %d, joined at %d", m.snapAt[4], joinedAt)
		}
		if m.caught[4] > 2*m.cfg.Hz {
			t.Errorf("the rejoined client ran %d frames catching up", m.caught[4])
		}
		if n := m.sameHashes(0, 1, 2, 3, 4, 5, 6, 7, 8, 9); n < 9*int((total-at-10*time.Second)/time.Second) {
			t.Errorf("only %d hash comparisons", n)
		}
		// The rejoined client's last hash is the room's simulation's.
		last := -1
		for f := range m.hashes[4] {
			last = max(last, f)
		}
		ref, ok := m.room.SimHash(last)
		if last < joinedAt || !ok || ref != m.hashes[4][last] {
			t.Fatalf("the rejoined client's hash at frame %d is %x, the room's simulation %x (%v)", last, m.hashes[4][last], ref, ok)
		}
		evs := m.room.Events()
		if live := eventsOf(evs, EventLive); len(live) != 1 || live[0].Slot != 4 {
			t.Fatalf("live events %+v", live)
		}
		if d := eventsOf(evs, EventDesync); len(d) != 0 {
			t.Fatalf("desync events %+v", d)
		}
		p := m.room.Quality().Peers[4]
		if p.CatchUpBytes == 0 || p.CatchUpBytes > 4096 {
			t.Fatalf("catch-up bytes %d", p.CatchUpBytes)
		}
		t.Logf("snapshot at frame %d (joined at %d), %d catch-up bytes, to live %v", m.snapAt[4], joinedAt, p.CatchUpBytes, p.ToLive)
	})
}

// snapshotMessages returns what a room running chainSim sends a player
// who joins at frame 150: snapshot parts, then the end of the stream.
func snapshotMessages(t testing.TB) [][]byte {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 2, Simulation: chainFactory}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	room.Tick(start.Add(10 * time.Second))
	room.Join(1, start.Add(10*time.Second))
	room.Tick(start.Add(10*time.Second + room.Config().Period()))
	var out [][]byte
	for _, m := range rec.reliable {
		if sub, _, err := lifeKind(m); err == nil && (sub == lifeSnapshot || sub == lifeCatchUp) {
			out = append(out, m)
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d catch-up messages", len(out))
	}
	return out
}

// TestSnapshotHostile: a client refuses snapshots that are garbage, out of
// order or too late, with an error, and keeps a good one.
func TestSnapshotHostile(t *testing.T) {
	good := snapshotMessages(t)
	part := func(d snapshotPart) []byte {
		var w codec.Writer
		d.encode(&w)
		return w.Bytes()
	}
	now := time.Unix(20, 0)
	for _, tt := range []struct {
		name string
		msgs [][]byte
	}{
		{"not snappy", [][]byte{part(snapshotPart{frame: 5, parts: 1, data: []byte{9, 9, 9}})}},
		{"decoded length over the cap", [][]byte{part(snapshotPart{frame: 5, parts: 1, data: []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f}})}},
		{"fill state truncated", [][]byte{part(snapshotPart{frame: 5, parts: 1, data: []byte{0, 0xff}})}},
		{"part out of order", [][]byte{part(snapshotPart{frame: 5, part: 1, parts: 2, data: []byte{0}})}},
		{"frame 0", [][]byte{part(snapshotPart{frame: 0, parts: 1, data: []byte{0, 0}})}},
		{"after the stream ended", append(slices.Clone(good), good[0])},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := NewClient(Config{Players: 2}, 1)
			var err error
			for _, m := range tt.msgs {
				err = c.Deliver(now, m)
			}
			if err == nil {
				t.Fatal("no error")
			}
		})
	}
	c, _ := NewClient(Config{Players: 2}, 1)
	for _, m := range good {
		if err := c.Deliver(now, m); err != nil {
			t.Fatal(err)
		}
	}
	st := c.Advance(now)
	var sim chainSim
	if st.Snapshot == nil || sim.Restore(st.Snapshot) != nil || st.SnapshotFrame != sim.frames {
		t.Fatalf("step %+v", st)
	}
}

// TestSimBehind: a room whose simulation may run one frame a tick falls
// behind when it cuts several at once, reports it once, and catches up.
func TestSimBehind(t *testing.T) {
	start := time.Unix(0, 0)
	room, err := NewRoom(Config{Players: 2, Simulation: chainFactory, SimStepsPerTick: 1}, start, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	period := room.Config().Period()
	room.Tick(start.Add(3 * time.Second)) // 46 frames at once, 1 simulated
	if ev := eventsOf(room.Events(), EventSimBehind); len(ev) != 1 || ev[0].Behind != 45 || ev[0].Frame != 1 {
		t.Fatalf("events %+v", ev)
	}
	for n := range 100 {
		room.Tick(start.Add(3*time.Second + time.Duration(n+1)*period/2)) // two ticks a frame: one step each
	}
	st := room.Stats()
	if st.SimFrames != room.NextFrame() || st.SimBehind != 1 || st.MaxSimLag != 45 {
		t.Fatalf("stats %+v, %d frames cut", st, room.NextFrame())
	}
	if len(room.Events()) != 0 {
		t.Fatal("reported again")
	}
}

func FuzzClientSnapshot(f *testing.F) {
	for _, m := range snapshotMessages(f) {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if sub, r, err := lifeKind(msg); err == nil && sub == lifeSnapshot {
			if d, err := decodeSnapshotPart(r); err == nil {
				if d.part >= d.parts || d.parts > maxSnapshotParts || len(d.data) > SnapshotPartBytes || d.frame <= 0 {
					t.Fatalf("decoded out of bounds: %+v", d)
				}
				if prev, game, err := decodeSnapshotPayload(d.data, 2); err == nil && (len(prev) != 2 || len(game) > MaxSnapshotBytes) {
					t.Fatalf("payload out of bounds")
				}
			}
		}
		c, _ := NewClient(Config{Players: 2}, 1)
		c.Deliver(time.Unix(0, 0), msg)
		c.Advance(time.Unix(1, 0))
	})
}

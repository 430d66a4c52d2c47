package view

import (
	"errors"
	"testing"
	"time"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep"
)

// scripted is a Net that plays out the frames a test queues and records
// what the view sends.
type scripted struct {
	players, slot int
	queue         [][]lockstep.Frame // frames for each coming Update
	snap          []byte             // a snapshot for the next Update, with snapFrame
	snapFrame     int
	sent          [][]byte
	updateErr     error
}

func (n *scripted) Slot() int    { return n.slot }
func (n *scripted) Players() int { return n.players }
func (n *scripted) Send(_ time.Time, in []byte) error {
	n.sent = append(n.sent, in)
	return nil
}
func (n *scripted) Update(time.Time) (lockstep.Step, error) {
	var s lockstep.Step
	if len(n.queue) > 0 {
		s.Frames, n.queue = n.queue[0], n.queue[1:]
	}
	s.Snapshot, s.SnapshotFrame, n.snap = n.snap, n.snapFrame, nil
	return s, n.updateErr
}
func (n *scripted) Stats() NetStats { return NetStats{} }

func idleFrames(from, count, players int) []lockstep.Frame {
	fs := make([]lockstep.Frame, count)
	for i := range fs {
		fs[i] = lockstep.Frame{Number: from + i, Slots: make([]lockstep.Slot, players)}
		for k := range fs[i].Slots {
			fs[i].Slots[k].MadeUp = true
		}
	}
	return fs
}

func TestSessionSendsChangesOncePerFrame(t *testing.T) {
	n := &scripted{players: 2}
	s, err := newSession(n, 1)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(0, 0)
	right := game.Input{MoveX: 1}
	left := game.Input{MoveX: -1}
	for i, tc := range []struct {
		frames int // frames played out on this tick
		in     game.Input
		sent   bool
	}{
		{0, right, true},  // the first input goes at once
		{0, left, false},  // changed, but no frame has run since
		{1, left, true},   // a frame ran: send
		{0, left, false},  // unchanged
		{0, right, false}, // changed, no frame
		{2, right, true},
		{1, right, false},
	} {
		if tc.frames > 0 {
			n.queue = append(n.queue, idleFrames(s.g.Frame(), tc.frames, 2))
		}
		if got := s.tick(now, tc.in); got != tc.sent {
			t.Errorf("tick %d: sent %v, want %v", i, got, tc.sent)
		}
	}
	if len(n.sent) != 3 {
		t.Errorf("%d inputs sent, want 3", len(n.sent))
	}
	if s.g.Frame() != 4 {
		t.Errorf("game at frame %d, want 4", s.g.Frame())
	}
}

func TestSessionHashes(t *testing.T) {
	n := &scripted{players: 3, slot: 2}
	s, err := newSession(n, 9)
	if err != nil {
		t.Fatal(err)
	}
	twin, _ := game.New(3, 9)
	total := hashHistory + 300
	frames := idleFrames(0, total, 3)
	for i := 0; i < total; i += 7 {
		n.queue = append(n.queue, frames[i:min(i+7, total)])
	}
	want := map[int]uint64{}
	for _, f := range frames {
		if err := twin.Step(f); err != nil {
			t.Fatal(err)
		}
		want[f.Number] = twin.Hash()
	}
	for len(n.queue) > 0 {
		s.tick(time.Unix(0, 0), game.Input{})
	}
	for _, tc := range []struct {
		n  int
		ok bool
	}{{-1, false}, {0, false}, {total - hashHistory - 1, false}, {total - hashHistory, true}, {total - 1, true}, {total, false}} {
		h, ok := s.hashAt(tc.n)
		if ok != tc.ok || (ok && h != want[tc.n]) {
			t.Errorf("hashAt(%d) = %x, %v; want %x, %v", tc.n, h, ok, want[tc.n], tc.ok)
		}
	}
}

func TestSessionErrors(t *testing.T) {
	if _, err := newSession(&scripted{players: 1}, 0); !errors.Is(err, game.ErrPlayers) {
		t.Errorf("one player: %v", err)
	}
	if _, err := newSession(&scripted{players: 2, slot: 2}, 0); !errors.Is(err, game.ErrPlayers) {
		t.Errorf("slot 2 of 2: %v", err)
	}
	boom := errors.New("boom")
	n := &scripted{players: 2, updateErr: boom}
	s, _ := newSession(n, 0)
	// A frame out of order is refused and reported; the network error too.
	n.queue = [][]lockstep.Frame{idleFrames(3, 1, 2)}
	s.tick(time.Unix(0, 0), game.Input{})
	if !errors.Is(s.err, game.ErrFrame) || s.g.Frame() != 0 {
		t.Errorf("out-of-order frame: err %v, frame %d", s.err, s.g.Frame())
	}
	s.tick(time.Unix(1, 0), game.Input{})
	if !errors.Is(s.err, boom) {
		t.Errorf("err %v, want the Update error", s.err)
	}
}

// TestSessionSnapshot checks that a session caught up from the room's
// snapshot restores it before running the frames after it, and ends in the
// state of a game that ran every frame.
func TestSessionSnapshot(t *testing.T) {
	const players = 2
	ref, err := game.New(players, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range idleFrames(0, 20, players) {
		if err := ref.Step(f); err != nil {
			t.Fatal(err)
		}
	}
	n := &scripted{players: players, snap: ref.Snapshot(), snapFrame: 20, queue: [][]lockstep.Frame{idleFrames(20, 5, players)}}
	s, err := newSession(n, 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range idleFrames(20, 5, players) {
		if err := ref.Step(f); err != nil {
			t.Fatal(err)
		}
	}
	s.tick(time.Unix(0, 0), game.Input{})
	if s.err != nil {
		t.Fatal(s.err)
	}
	if s.g.Frame() != 25 || s.g.Hash() != ref.Hash() {
		t.Errorf("after the snapshot and 5 frames: frame %d hash %x, want 25 %x", s.g.Frame(), s.g.Hash(), ref.Hash())
	}
	if _, ok := s.hashAt(19); ok {
		t.Error("a hash for a frame before the snapshot, which the session never ran")
	}
	if h, ok := s.hashAt(24); !ok || h != ref.Hash() {
		t.Errorf("hashAt(24) = %x, %v; want %x", h, ok, ref.Hash())
	}

	// A snapshot that does not restore is an error, and no frame runs.
	n2 := &scripted{players: players, snap: []byte{9, 9}, snapFrame: 20, queue: [][]lockstep.Frame{idleFrames(20, 5, players)}}
	s2, _ := newSession(n2, 7)
	s2.tick(time.Unix(0, 0), game.Input{})
	if !errors.Is(s2.err, game.ErrSnapshot) || s2.g.Frame() != 0 {
		t.Errorf("a bad snapshot: err %v, frame %d", s2.err, s2.g.Frame())
	}
}

// TestSessionCountsShots: a tap (one frame with the trigger, then its
// release) fires once, and the session counts it; a held trigger fires
// every Cooldown frames.
func TestSessionCountsShots(t *testing.T) {
	n := &scripted{players: 2}
	s, err := newSession(n, 3)
	if err != nil {
		t.Fatal(err)
	}
	frames := func(in game.Input, count int) {
		fs := idleFrames(s.g.Frame(), count, 2)
		for i := range fs {
			fs[i].Slots[0] = lockstep.Slot{Inputs: [][]byte{in.Append(nil)}}
		}
		n.queue = append(n.queue, fs)
		s.tick(time.Unix(0, 0), in)
	}
	frames(game.Input{Fire: true}, 1)
	frames(game.Input{}, 2*game.Cooldown)
	if s.fired != 1 {
		t.Fatalf("a tap fired %d times, want 1", s.fired)
	}
	frames(game.Input{Fire: true}, 2*game.Cooldown)
	if s.fired != 3 {
		t.Fatalf("%d shots after a tap and a hold of %d frames, want 3", s.fired, 2*game.Cooldown)
	}
}

// TestSessionSeats: the scoreboard tells a seat nobody has played yet
// from a player in the match and from one who left (the game's bot plays
// a gone slot).
func TestSessionSeats(t *testing.T) {
	n := &scripted{players: 3}
	s, err := newSession(n, 3)
	if err != nil {
		t.Fatal(err)
	}
	fs := idleFrames(0, 2, 3)
	fs[0].Slots[1] = lockstep.Slot{Inputs: [][]byte{game.Input{MoveX: 1}.Append(nil)}}
	n.queue = append(n.queue, fs)
	s.tick(time.Unix(0, 0), game.Input{})
	if got := []string{s.seat(0), s.seat(1), s.seat(2)}; got[0] != seatPlaying || got[1] != seatPlaying || got[2] != seatOpen {
		t.Fatalf("seats %q, want you, playing, open", got)
	}
	fs = idleFrames(2, 1, 3)
	fs[0].Slots[1].Gone = true
	n.queue = append(n.queue, fs)
	s.tick(time.Unix(0, 0), game.Input{})
	if got := s.seat(1); got != seatAway {
		t.Fatalf("a gone player's seat %q, want %q", got, seatAway)
	}
	n.queue = append(n.queue, idleFrames(3, 1, 3)) // back: playing again
	s.tick(time.Unix(0, 0), game.Input{})
	if got := s.seat(1); got != seatPlaying {
		t.Fatalf("a player back from away: seat %q, want playing", got)
	}
}

// seated is a scripted Net that also says what the room says of the seats.
type seated struct {
	scripted
	seats []string
}

func (n *seated) Seat(i int) string {
	if i < len(n.seats) {
		return n.seats[i]
	}
	return ""
}

// TestSessionSeatsFromRoom: with the room's word, a late player shows as
// late, which the frames alone cannot tell; gone still comes from the
// frames.
func TestSessionSeatsFromRoom(t *testing.T) {
	n := &seated{scripted: scripted{players: 3}}
	s, err := newSession(n, 3)
	if err != nil {
		t.Fatal(err)
	}
	fs := idleFrames(0, 1, 3)
	fs[0].Slots[1] = lockstep.Slot{Inputs: [][]byte{game.Input{MoveX: 1}.Append(nil)}}
	fs[0].Slots[2].Gone = true
	n.queue = append(n.queue, fs)
	s.tick(time.Unix(0, 0), game.Input{})
	n.seats = []string{"playing", "late", "gone"}
	if got := []string{s.seat(0), s.seat(1), s.seat(2)}; got[0] != seatPlaying || got[1] != seatLate || got[2] != seatAway {
		t.Fatalf("seats %q, want you, late, bot", got)
	}
	n.seats = []string{"open", "open", "open"} // the room's word on the local slot is ignored
	if got := s.seat(0); got != seatPlaying {
		t.Fatalf("the local seat %q", got)
	}
}

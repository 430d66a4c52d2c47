package lockstep

import (
	"bytes"
	"testing"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
)

// TestPendingOrder checks that a frame holds a player's inputs in the order
// they arrived, whatever the order of the frames they target, and that
// the bound on inputs per frame holds.
func TestPendingOrder(t *testing.T) {
	start := time.Unix(0, 0)
	r, err := NewRoom(Config{Players: 1, InputsPerFrame: 2}, start, nopSender{})
	if err != nil {
		t.Fatal(err)
	}
	p := &r.players[0]
	for i, in := range []struct {
		frame int
		data  byte
	}{{3, 1}, {1, 2}, {3, 3}, {2, 4}, {1, 5}, {3, 6}} {
		err := r.input(p, uint32(i+1), upInput{frame: in.frame, data: []byte{in.data}}, 0)
		if want := in.data == 6; (err != nil) != want {
			t.Fatalf("input %d: error %v, want one: %v", i, err, want)
		}
	}
	r.Tick(r.cfg.cutTime(start, 3))
	want := [][]byte{nil, {2, 5}, {4}, {1, 3}}
	for n, w := range want {
		f, ok := r.Frame(n)
		if !ok {
			t.Fatalf("frame %d not cut", n)
		}
		var got []byte
		for _, in := range f.Slots[0].Inputs {
			got = append(got, in...)
		}
		if !bytes.Equal(got, w) || f.Slots[0].MadeUp != (w == nil) {
			t.Errorf("frame %d: inputs %v (made up %v), want %v", n, got, f.Slots[0].MadeUp, w)
		}
	}
	if len(p.pending) != 0 {
		t.Errorf("%d inputs still pending", len(p.pending))
	}
}

// TestPlayerLayout keeps what every packet touches of a player in its
// first three cache lines, and players a whole number of lines apart.
func TestPlayerLayout(t *testing.T) {
	var p player
	if size := unsafe.Sizeof(p); size%64 != 0 {
		t.Errorf("player is %d bytes, not a multiple of 64", size)
	}
	hot := map[string]uintptr{
		"have": unsafe.Offsetof(p.have), "inSeen": unsafe.Offsetof(p.inSeen), "retransWait": unsafe.Offsetof(p.retransWait),
		"pending": unsafe.Offsetof(p.pending), "madeUp": unsafe.Offsetof(p.madeUp), "recent": unsafe.Offsetof(p.recent),
		"q.rttMax": unsafe.Offsetof(p.q) + unsafe.Offsetof(p.q.rttMax),
	}
	for name, off := range hot {
		if off >= 192 {
			t.Errorf("player.%s at byte %d, past the first three cache lines", name, off)
		}
	}
}

// recordMidMatch plays TestRecordMidMatchRelativeBodies's room (in
// record_test.go, which records it with a replay file's writer) and
// returns it: record makes a recorder for the room's configuration and
// start, which the room takes after frames were cut whose relative bodies
// no packet needed (every player held every frame but the newest).
func recordMidMatch(t *testing.T, record func(t *testing.T, cfg Config, start time.Time) Recorder) *Room {
	start := time.Unix(0, 0)
	cfg := Config{Players: 3}.WithDefaults()
	room, err := NewRoom(cfg, start, nopSender{})
	if err != nil {
		t.Fatal(err)
	}
	rec := record(t, cfg, start)
	seq := make([]uint32, cfg.Players)
	for n := range 120 {
		now := cfg.cutTime(start, n)
		for p := range cfg.Players {
			u := uplink{have: n, sent: uint16(n)}
			if (n/3+p)%2 == 0 { // runs of equal inputs, so that relative bodies differ from full ones
				seq[p]++
				u.firstSeq, u.inputs = seq[p], []upInput{{n + 1, []byte{byte(n / 6), byte(p)}}}
			}
			var w codec.Writer
			u.encode(&w)
			if err := room.Deliver(p, w.Bytes(), now); err != nil {
				t.Fatal(err)
			}
		}
		room.Tick(now)
		if n == 60 {
			if err := room.Record(rec); err != nil {
				t.Fatal(err)
			}
		}
	}
	return room
}

// TestGoneFlag: a frame tells a late player (made up) from a gone one
// (made up and gone: it left or was dropped), on the wire as in the room's
// log, under FillAbsent; the flag ends when the player rejoins.
func TestGoneFlag(t *testing.T) {
	start := time.Unix(0, 0)
	now := start
	cfg := Config{Players: 3, Hz: 15, Fill: FillAbsent}.WithDefaults()
	var clients []*Client
	room, err := NewRoom(cfg, start, senderTo{&clients, &now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Players {
		c, _ := NewClient(cfg, i)
		clients = append(clients, c)
	}
	var got []Frame // what client 0 received
	for n := 0; n < 60; n++ {
		now = cfg.cutTime(start, n)
		switch n {
		case 10:
			room.Leave(2)
		case 30:
			clients[2], _ = NewClient(cfg, 2)
			room.Join(2, now)
		}
		for i, c := range clients {
			if i == 0 || (i == 1 && n%2 == 0) { // player 1 sends nothing for every other frame
				c.inputFor(now, n+1, []byte{byte(i)})
			}
			room.Deliver(i, c.Packet(now), now)
		}
		room.Tick(now)
		got = append(got, clients[0].Advance(now.Add(time.Second)).Frames...)
	}
	if len(got) < 50 {
		t.Fatalf("client 0 played %d frames", len(got))
	}
	for _, f := range got {
		logged, _ := room.Frame(f.Number)
		for i, s := range f.Slots {
			if s.MadeUp != logged.Slots[i].MadeUp || s.Gone != logged.Slots[i].Gone {
				t.Fatalf("frame %d slot %d: received %+v, logged %+v", f.Number, i, s, logged.Slots[i])
			}
		}
		away := f.Number >= 10 && f.Number < 30 // cut while slot 2 was gone
		if s := f.Slots[2]; s.Gone != away || (away && (!s.MadeUp || s.Inputs != nil)) {
			t.Errorf("frame %d: slot 2 %+v, gone %v", f.Number, s, away)
		}
		if s := f.Slots[1]; s.Gone || s.MadeUp != (f.Number%2 == 0) {
			t.Errorf("frame %d: late slot 1 %+v", f.Number, s)
		}
	}
}

// senderTo delivers the room's messages to the clients at once.
type senderTo struct {
	clients *[]*Client
	now     *time.Time
}

func (s senderTo) SendUnreliable(p int, msg []byte) error {
	return (*s.clients)[p].Deliver(*s.now, msg)
}
func (s senderTo) SendReliable(p int, msg []byte) error { return s.SendUnreliable(p, msg) }

// TestSubstepFrames: a relay frame is Substeps logic frames, its inputs in
// the first (or in all, with SubstepRepeat); the conversions and the hash
// frames count logic frames.
func TestSubstepFrames(t *testing.T) {
	f := Frame{Number: 5, Slots: []Slot{{Inputs: [][]byte{{7}}}, {MadeUp: true}}}
	for _, repeat := range []bool{false, true} {
		cfg := Config{Players: 2, Substeps: 4, SubstepRepeat: repeat, HashEvery: 3}.WithDefaults()
		got := cfg.Expand(nil, f)
		if len(got) != 4 {
			t.Fatalf("%d logic frames", len(got))
		}
		for k, g := range got {
			if g.Number != 20+k {
				t.Errorf("logic frame %d numbered %d", k, g.Number)
			}
			has := len(g.Slots[0].Inputs) == 1
			if want := k == 0 || repeat; has != want || (k > 0 && !repeat && g.Slots[1].MadeUp) {
				t.Errorf("repeat %v: logic frame %d slots %+v", repeat, k, g.Slots)
			}
		}
		if cfg.LogicFrame(5) != 20 || cfg.RelayFrame(23) != 5 || cfg.RelayFrame(24) != 6 {
			t.Error("conversions")
		}
		for l, want := range map[int]bool{3: true, 0: false, 2: false, 15: true, 19: false, 27: true, 26: false} {
			if cfg.HashFrame(l) != want {
				t.Errorf("HashFrame(%d) = %v", l, !want)
			}
		}
	}
	if c := (Config{Players: 2, HashEvery: 3}.WithDefaults()); !c.HashFrame(6) || c.HashFrame(7) {
		t.Error("without substeps, every HashEvery-th frame")
	}
}

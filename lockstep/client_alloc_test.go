package lockstep

import (
	"testing"
	"time"
)

// TestClientReceiveAllocs: a client's frames packet costs at most three
// allocations a frame (its slots, its inputs' slices and bytes), not two
// an input (17 a packet of ten players' frame before), whether the frame
// is new or already held; its uplink packet allocates nothing. A
// browser client runs this every frame, under a collector slower than
// the server's.
func TestClientReceiveAllocs(t *testing.T) {
	const players = 10
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: players}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	cfg := room.Config()
	clients := make([]*Client, players)
	for i := range clients {
		if clients[i], err = NewClient(cfg, i); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	frame := func() {
		now := cfg.cutTime(start, n)
		for i, c := range clients {
			c.Input(now, []byte{byte(i), byte(n)})
			if err := room.Deliver(i, c.Packet(now), now); err != nil {
				t.Fatal(err)
			}
		}
		rec.unreliable, rec.slots = rec.unreliable[:0], rec.slots[:0]
		room.Tick(cfg.cutTime(start, n+1))
		for k, msg := range rec.unreliable {
			if err := clients[rec.slots[k]].Deliver(now, msg); err != nil {
				t.Fatal(err)
			}
		}
		for _, c := range clients {
			c.Advance(now)
		}
		n++
	}
	// The packets the room made for slot 0, for a fresh client of that
	// slot to take alone.
	var packets [][]byte
	for range 500 {
		frame()
		for k, msg := range rec.unreliable {
			if rec.slots[k] == 0 {
				packets = append(packets, msg)
			}
		}
	}
	c, err := NewClient(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	at := start
	deliver := func() {
		if err := c.Deliver(at, packets[i%len(packets)]); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 50 {
		deliver()
	}
	if a := testing.AllocsPerRun(200, deliver); a > 3 {
		t.Errorf("%.2f allocations a frames packet (one new frame each), want at most 3", a)
	}
	// The same packets again: every frame already held.
	i = 0
	held := c.Have()
	if a := testing.AllocsPerRun(200, deliver); a > 3 {
		t.Errorf("%.2f allocations a frames packet of frames held, want at most 3", a)
	}
	c.Input(at, []byte{1, 2})
	if a := testing.AllocsPerRun(200, func() { c.Packet(at) }); a > 0 {
		t.Errorf("%.2f allocations an uplink packet", a)
	}
	if held < 240 || c.Have() != held {
		t.Fatalf("the client holds %d frames, then %d", held, c.Have())
	}
}

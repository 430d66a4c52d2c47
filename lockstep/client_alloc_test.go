package lockstep

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// TestClientReceiveAllocs: a client's frames packet costs under half an
// allocation (its frame's slots, inputs' slices and bytes are cut from
// the client's arena, a few allocations every 64 frames; three a frame
// before, and 17 a packet of ten players' frame before that), whether
// the frame is new or already held; its uplink packet allocates
// nothing. A browser client runs this every frame, under a collector
// slower than the server's.
func TestClientReceiveAllocs(t *testing.T) {
	cfg, packets, _ := slotPackets(t, 500)
	c, err := NewClient(cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	at := time.Unix(0, 0)
	deliver := func() {
		if err := c.Deliver(at, packets[i%len(packets)]); err != nil {
			t.Fatal(err)
		}
		i++
	}
	for range 50 {
		deliver()
	}
	if a := testing.AllocsPerRun(200, deliver); a > 0.5 {
		t.Errorf("%.2f allocations a frames packet (one new frame each), want at most 0.5", a)
	}
	// The same packets again: every frame already held.
	i = 0
	held := c.Have()
	if a := testing.AllocsPerRun(200, deliver); a > 0.5 {
		t.Errorf("%.2f allocations a frames packet of frames held, want at most 0.5", a)
	}
	c.Input(at, []byte{1, 2})
	if a := testing.AllocsPerRun(200, func() { c.Packet(at) }); a > 0 {
		t.Errorf("%.2f allocations an uplink packet", a)
	}
	if held < 240 || c.Have() != held {
		t.Fatalf("the client holds %d frames, then %d", held, c.Have())
	}
}

// slotPackets plays a room of ten, every player's client sending an input
// a frame and taking its frames, for frames frames, and returns the
// room's configuration and the frames packets it sent slot 0, with when
// each was sent.
func slotPackets(tb testing.TB, frames int) (Config, [][]byte, []time.Time) {
	tb.Helper()
	const players = 10
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: players}, start, rec)
	if err != nil {
		tb.Fatal(err)
	}
	cfg := room.Config()
	clients := make([]*Client, players)
	for i := range clients {
		if clients[i], err = NewClient(cfg, i); err != nil {
			tb.Fatal(err)
		}
	}
	var packets [][]byte
	var at []time.Time
	for n := range frames {
		now := cfg.cutTime(start, n)
		for i, c := range clients {
			c.Input(now, []byte{byte(i), byte(n)})
			if err := room.Deliver(i, c.Packet(now), now); err != nil {
				tb.Fatal(err)
			}
		}
		rec.unreliable, rec.slots = rec.unreliable[:0], rec.slots[:0]
		cut := cfg.cutTime(start, n+1)
		room.Tick(cut)
		for k, msg := range rec.unreliable {
			if err := clients[rec.slots[k]].Deliver(cut, msg); err != nil {
				tb.Fatal(err)
			}
			if rec.slots[k] == 0 {
				packets, at = append(packets, msg), append(at, cut)
			}
		}
		for _, c := range clients {
			c.Advance(cut)
		}
	}
	return cfg, packets, at
}

// BenchmarkClientFrame is a player's client over one frame of a room of
// ten: the room's frames packet taken, the frame played, an input and the
// uplink packet made; what a browser does each frame, and the relay
// bench's bots 4,000 times a frame.
func BenchmarkClientFrame(b *testing.B) {
	cfg, packets, at := slotPackets(b, 2000)
	var c *Client
	var err error
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		k := i % len(packets)
		if k == 0 {
			b.StopTimer()
			if c, err = NewClient(cfg, 0); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := c.Deliver(at[k], packets[k]); err != nil {
			b.Fatal(err)
		}
		c.Advance(at[k])
		c.Input(at[k], []byte{0, byte(i)})
		c.Packet(at[k])
	}
}

// TestClientMarginFindsItsStamp: the room's margin report names an
// input by its seq, which the client finds among its stamps by its
// distance from the first (they are consecutive, across the uint32 wrap
// too); a seq it no longer has, or never sent, is ignored.
func TestClientMarginFindsItsStamp(t *testing.T) {
	cfg := Config{Players: 2}.WithDefaults()
	for _, first := range []uint32{100, math.MaxUint32 - 2} {
		c, err := NewClient(cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		for k := range uint32(5) {
			c.stamps = append(c.stamps, stamp{seq: first + k, lead: float64(k)})
		}
		period := cutMs(1, cfg.Hz)
		for _, tc := range []struct {
			seq   uint32
			found bool
			lead  float64
		}{
			{first - 1, false, 0}, {first, true, 0}, {first + 3, true, 3}, {first + 4, true, 4},
			{first + 5, false, 0}, {first + 1000, false, 0}, {first - 1000, false, 0},
		} {
			n := c.excessN
			c.margin(tc.seq, 10)
			if got := c.excessN > n; got != tc.found {
				t.Fatalf("first %d, seq %d: taken %v, want %v", first, tc.seq, got, tc.found)
			}
			if tc.found {
				if got, want := c.excess[n%marginWindow], 10/period-tc.lead; got != want {
					t.Fatalf("first %d, seq %d: excess %v, want %v", first, tc.seq, got, want)
				}
			}
		}
	}
}

// TestClientArenaKeepsFrames: frames a client decoded from its arena stay as
// they were decoded while it decodes hundreds more (each compared with
// the same packet decoded alone), and a game's append to a kept input or
// slot list writes none of the frames after it.
func TestClientArenaKeepsFrames(t *testing.T) {
	cfg, packets, _ := slotPackets(t, 300)
	var shared downlink
	var kept, alone []Frame
	for _, p := range packets {
		if err := decodeDownlink(p, cfg.Players, &shared); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, shared.frames...)
		var own downlink
		if err := decodeDownlink(p, cfg.Players, &own); err != nil {
			t.Fatal(err)
		}
		alone = append(alone, own.frames...)
		if n := len(kept); n > 1 { // the game appends to what it keeps
			f := kept[n-2]
			_ = append(f.Slots, Slot{Gone: true})
			for _, s := range f.Slots {
				for _, in := range s.Inputs {
					_ = append(in, 0xee, 0xee)
				}
				_ = append(s.Inputs, []byte{0xee})
			}
		}
	}
	if len(kept) != len(alone) || len(kept) < 300 {
		t.Fatalf("%d frames kept, %d alone", len(kept), len(alone))
	}
	for i := range kept {
		if !reflect.DeepEqual(kept[i], alone[i]) {
			t.Fatalf("frame %d: %+v, decoded alone %+v", kept[i].Number, kept[i], alone[i])
		}
	}
}

package lockstep

import (
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

func codecWriter() *codec.Writer { return &codec.Writer{} }

// uplinkSeeds are real input packets.
func uplinkSeeds() [][]byte {
	var out [][]byte
	for _, u := range []uplink{
		{},
		{have: 40, mask: 0b1011, maskLen: 4, recv: 99, lossRun: 2},
		{have: 7, firstSeq: 3, inputs: []upInput{{9, []byte("a")}, {9, []byte("a")}, {10, []byte("bb")}}},
		{have: 7, firstSeq: 3, inputs: []upInput{{9, []byte("a")}}, sealed: 10}, // a strict room's
		{have: 2, sealed: 4},
	} {
		w := codecWriter()
		u.encode(w)
		out = append(out, append([]byte(nil), w.Bytes()...))
	}
	return out
}

// downlinkSeeds are real frames packets and notices from a room.
func downlinkSeeds() [][]byte {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, _ := NewRoom(Config{Players: 3}, start, rec)
	c, _ := NewClient(room.Config(), 0)
	c.Input(start, []byte("go"))
	room.Deliver(0, c.Packet(start), start)
	for n := range 6 {
		room.Tick(start.Add(time.Duration(n) * room.Config().Period()))
	}
	w := codecWriter()
	encodeNotices(w, []Notice{{Seq: 4, Target: 2, Applied: -1}, {Seq: 5, Target: 3, Applied: 4}})
	out := append(rec.unreliable, append([]byte(nil), w.Bytes()...))
	// A strict room's, after a wait: frames with a pause, and the wait.
	rec = &recorder{}
	room, _ = NewRoom(Config{Players: 3, Strict: true}, start, rec)
	for n := range 6 {
		room.Tick(start.Add(time.Duration(n) * 100 * time.Millisecond))
	}
	room.Leave(0)
	room.Leave(1)
	room.Leave(2)
	room.Tick(start.Add(time.Second))
	return append(append(out, rec.unreliable...), rec.reliable...)
}

func FuzzDecodeUplink(f *testing.F) {
	for _, s := range uplinkSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var u uplink
		if err := decodeUplink(msg, &u); err != nil {
			return
		}
		if u.have < 0 || u.have > maxFrame || len(u.inputs) > maxUplinkInputs {
			t.Fatalf("decoded out of bounds: %+v", u)
		}
		for _, in := range u.inputs {
			if in.frame < 0 || in.frame > maxFrame || len(in.data) > MaxInputBytes {
				t.Fatalf("input out of bounds: %+v", in)
			}
		}
	})
}

func FuzzDecodeDownlink(f *testing.F) {
	for _, s := range downlinkSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var d downlink
		if decodeDownlink(msg, 3, &d) == nil {
			for _, fr := range d.frames {
				if len(fr.Slots) != 3 || fr.Number < 0 || fr.Number > maxFrame {
					t.Fatalf("frame out of bounds: %+v", fr)
				}
			}
		}
		decodeNotices(msg, nil)
		// A client takes anything without panicking.
		c, _ := NewClient(Config{Players: 3}, 1)
		c.Deliver(time.Unix(0, 0), msg)
		c.Advance(time.Unix(1, 0))
	})
}

// FuzzRoomDeliver feeds arbitrary packets to a room between ticks: it
// never panics, and what it cuts stays within its bounds.
func FuzzRoomDeliver(f *testing.F) {
	for _, s := range uplinkSeeds() {
		f.Add(s, uint8(0))
	}
	f.Fuzz(func(t *testing.T, msg []byte, slot uint8) {
		start := time.Unix(0, 0)
		room, _ := NewRoom(Config{Players: 3, Strict: slot >= 128}, start, &recorder{})
		for n := range 4 {
			now := start.Add(time.Duration(n) * room.Config().Period())
			room.Deliver(int(slot%128%4), msg, now)
			room.Tick(now)
		}
		for n := range room.NextFrame() {
			fr, _ := room.Frame(n)
			for _, s := range fr.Slots {
				if len(s.Inputs) > room.Config().InputsPerFrame {
					t.Fatalf("frame %d holds %d inputs", n, len(s.Inputs))
				}
			}
		}
	})
}

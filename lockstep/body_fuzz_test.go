package lockstep

import (
	"reflect"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// FuzzFrameBody decodes arbitrary bytes as two frame bodies of a packet,
// the second relative to the first, for 1..MaxPlayers players: what
// decodes encodes back to bodies that decode to the same frames.
func FuzzFrameBody(f *testing.F) {
	for _, fr := range [][2]Frame{
		{{Slots: []Slot{{Inputs: [][]byte{[]byte("go")}}, {MadeUp: true}}}, {Slots: []Slot{{Inputs: [][]byte{[]byte("go")}}, {Inputs: [][]byte{{1}, {2}}}}}},
		{{Slots: []Slot{{MadeUp: true}, {MadeUp: true}}}, {Slots: []Slot{{MadeUp: true}, {MadeUp: true}}}},
	} {
		var w codec.Writer
		encodeFrameBody(&w, &fr[0], nil)
		encodeFrameBody(&w, &fr[1], &fr[0])
		f.Add(uint8(2), w.Bytes())
	}
	f.Fuzz(func(t *testing.T, players uint8, b []byte) {
		n := 1 + int(players)%MaxPlayers
		r := codec.NewReader(b)
		first, err := ReadFrame(r, 7, n, nil)
		if err != nil {
			return
		}
		second, err := ReadFrame(r, 8, n, &first)
		if err != nil {
			return
		}
		var w codec.Writer
		encodeFrameBody(&w, &first, nil)
		encodeFrameBody(&w, &second, &first)
		r2 := codec.NewReader(w.Bytes())
		again1, err1 := ReadFrame(r2, 7, n, nil)
		again2, err2 := ReadFrame(r2, 8, n, &again1)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(again1, first) || !reflect.DeepEqual(again2, second) {
			t.Fatalf("re-encoded frames decode to %+v %+v (%v %v), want %+v %+v", again1, again2, err1, err2, first, second)
		}
	})
}

// FuzzCatchUp decodes arbitrary bytes as a catch-up message: no panic,
// frames numbered from the header's first, and what decodes encodes back
// to a message that decodes to the same frames.
func FuzzCatchUp(f *testing.F) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, _ := NewRoom(Config{Players: 2}, start, rec)
	c, _ := NewClient(room.Config(), 0)
	for n := range 40 {
		now := start.Add(time.Duration(n) * room.Config().Period())
		c.Input(now, []byte{byte(n)})
		room.Deliver(0, c.Packet(now), now)
		room.Tick(now)
	}
	room.Join(1, start.Add(10*time.Second))
	room.Tick(start.Add(11 * time.Second))
	for _, m := range rec.reliable {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		sub, r, err := lifeKind(msg)
		if err != nil || sub != lifeCatchUp {
			return
		}
		frames, _, last, err := decodeCatchUp(msg, r, 2, nil, nil)
		if err != nil || len(frames) == 0 {
			return
		}
		first := frames[0].Number
		var body codec.Writer
		for i := range frames {
			if frames[i].Number != first+i {
				t.Fatalf("frame %d numbered %d", i, frames[i].Number)
			}
			var prev *Frame
			if i > 0 {
				prev = &frames[i-1]
			}
			encodeFrameBody(&body, &frames[i], prev)
		}
		var w codec.Writer
		catchUpHeader(&w, first, len(frames), last)
		again := codec.Compress(append([]byte(nil), w.Bytes()...), body.Bytes())
		sub, r, err = lifeKind(again)
		if err != nil || sub != lifeCatchUp {
			t.Fatalf("re-encoded message: %v", err)
		}
		back, _, lastAgain, err := decodeCatchUp(again, r, 2, nil, nil)
		if err != nil || lastAgain != last || !reflect.DeepEqual(back, frames) {
			t.Fatalf("re-encoded catch-up decodes to %+v (%v, last %v), want %+v", back, err, lastAgain, frames)
		}
	})
}

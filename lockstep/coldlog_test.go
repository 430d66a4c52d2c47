package lockstep

import (
	"bytes"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/transport/memnet"
)

// playColdFrames plays TestColdFrames's match (in record_test.go, which
// records it with a replay file's writer): long enough that most of its
// frames are cold (bodies only). Every frame reads back as it was cut, a
// player who rejoins catches up through them, and the cold log costs a few
// bytes a frame. After the rejoin, record makes a recorder for the match's
// configuration and start, which the room takes late; done runs in the
// match's bubble when the match ends.
func playColdFrames(t *testing.T, record func(t *testing.T, cfg Config, start time.Time) Recorder, done func(t *testing.T)) {
	synctest.Test(t, func(t *testing.T) {
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 10 * time.Millisecond, Loss: 0.05}
		m := newMatch(t, Config{Players: 4, Fill: FillRepeat}, 21, link, link)
		// Keep every frame as cut, to compare with the cold ones later.
		var cut []Frame
		m.run(10*time.Second, 0.5)
		for n := range m.room.NextFrame() {
			f, _ := m.room.Frame(n)
			cut = append(cut, cloneFrame(f))
		}
		m.run(4*time.Minute, 0.5)
		r := m.room
		if r.log.cold.len() < 2*hotFrames {
			t.Fatalf("%d cold frames of %d: the match is too short to test them", r.log.cold.len(), r.next)
		}
		if len(r.log.frames) >= 2*hotFrames {
			t.Fatalf("%d hot frames, over the window", len(r.log.frames))
		}
		for n, want := range cut {
			if r.log.hot(n) != nil {
				t.Fatalf("frame %d still hot", n)
			}
			got, ok := r.Frame(n)
			if !ok || !sameFrame(got, want, FillIdle) {
				t.Fatalf("cold frame %d: %+v, cut as %+v", n, got, want)
			}
		}
		// Bodies: full ones as cut; relative ones decode against the
		// frame before to the frame itself.
		for n := 1; n < r.log.cold.len(); n += 97 {
			body, bits := r.body(0, n, false)
			prev := r.log.frameAt(n - 1)
			f, err := ReadFrame(codec.NewReader(bytes.Clone(body[:(bits+7)/8])), n, 4, prev)
			if err != nil || !sameFrame(f, *r.log.frameAt(n), FillIdle) {
				t.Fatalf("relative body of cold frame %d: %v", n, err)
			}
		}
		// A cold frame costs its body and 6 bytes (bench room-idle measures
		// what a room holds an hour).
		t.Logf("the cold log takes %.1f bytes a frame, inputs included", float64(r.log.cold.bytes())/float64(r.log.cold.len()))
		// A player who rejoins now catches up through the cold frames.
		m.crash(1)
		m.run(3*time.Second, 0.5)
		m.rejoin(1)
		joinedAt := r.NextFrame()
		if err := r.Record(record(t, m.cfg, r.start)); err != nil { // late: most of the match is cold
			t.Fatal(err)
		}
		m.run(20*time.Second, 0.5)
		done(t)
		m.check()
		if m.caught[1] < joinedAt-m.cfg.Hz {
			t.Errorf("the rejoined client ran %d frames catching up, %d were cut before it joined", m.caught[1], joinedAt)
		}
	})
}

func cloneFrame(f Frame) Frame {
	c := Frame{Number: f.Number, Slots: make([]Slot, len(f.Slots))}
	for i, s := range f.Slots {
		c.Slots[i] = s
		c.Slots[i].Inputs = nil
		for _, in := range s.Inputs {
			c.Slots[i].Inputs = append(c.Slots[i].Inputs, bytes.Clone(in))
		}
	}
	return c
}

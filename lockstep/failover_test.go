package lockstep

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"
)

// router is a Sender that hands each packet to its client at once.
type router struct {
	clients []*Client
	now     *time.Time
}

func (r router) SendUnreliable(slot int, msg []byte) error { return r.deliver(slot, msg) }
func (r router) SendReliable(slot int, msg []byte) error   { return r.deliver(slot, msg) }

func (r router) deliver(slot int, msg []byte) error {
	if slot >= len(r.clients) || r.clients[slot] == nil {
		return errors.New("no client")
	}
	r.clients[slot].Deliver(*r.now, append([]byte(nil), msg...))
	return nil
}

// playFrames plays frames of room with the clients: each sends an input
// for every frame, and the room cuts.
func playFrames(t *testing.T, room *Room, clients []*Client, now *time.Time, frames int) {
	t.Helper()
	for range frames {
		for slot, c := range clients {
			c.Input(*now, []byte{byte(slot), byte(room.NextFrame())})
			if err := room.Deliver(slot, c.Packet(*now), *now); err != nil {
				t.Fatalf("slot %d: %v", slot, err)
			}
		}
		room.Tick(*now)
		*now = now.Add(room.Config().Period())
	}
}

// TestRestoreCarryRejoin: a room's standby lags it by a few frames when
// the room's server dies; the room restored from the standby's log takes
// the missing frames from the clients, takes the clients back where they
// stand, and the match goes on with every frame the same everywhere.
func TestRestoreCarryRejoin(t *testing.T) {
	cfg := Config{Players: 3, Hz: 15}
	start := time.Unix(1000, 0)
	now := start
	clients := make([]*Client, 3)
	for i := range clients {
		c, err := NewClient(cfg, i)
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = c
	}
	a, err := NewRoom(cfg, start, router{clients, &now})
	if err != nil {
		t.Fatal(err)
	}
	var standby []EncodedFrame
	a.Tap(func(f EncodedFrame) {
		f.Full = append([]byte(nil), f.Full...)
		standby = append(standby, f)
	})
	playFrames(t, a, clients, &now, 40)
	// The crash: the standby never got the last 3 frames.
	lost := 3
	standby = standby[:len(standby)-lost]

	// A silent gap while the standby takes over.
	now = now.Add(700 * time.Millisecond)
	b, err := RestoreRoom(cfg, a.Start(), standby, router{clients, &now})
	if err != nil {
		t.Fatal(err)
	}
	if b.NextFrame() != len(standby) || b.Restored() != len(standby) {
		t.Fatalf("restored next %d, restored %d, want %d", b.NextFrame(), b.Restored(), len(standby))
	}
	carried := clients[1].Carry(b.NextFrame())
	if len(carried) != lost {
		t.Fatalf("client carried %d frames, want %d", len(carried), lost)
	}
	for _, c := range clients {
		other := c.Carry(b.NextFrame())
		for i := range other {
			if !bytes.Equal(other[i].Full, carried[i].Full) || other[i].FullBits != carried[i].FullBits {
				t.Fatalf("clients carry frame %d differently", other[i].Number)
			}
		}
	}
	if err := b.Extend(carried); err != nil {
		t.Fatal(err)
	}
	for n := range a.NextFrame() {
		fa, _ := a.Frame(n)
		fb, _ := b.Frame(n)
		if fmt.Sprint(fa) != fmt.Sprint(fb) {
			t.Fatalf("frame %d: %v, restored %v", n, fa, fb)
		}
	}
	for slot, c := range clients {
		c.Reconnected()
		if err := b.Rejoin(slot, c.Have(), c.Acked(), now); err != nil {
			t.Fatal(err)
		}
	}
	// The owed frames are cut at once, then the match goes on.
	resumed := b.NextFrame()
	playFrames(t, b, clients, &now, 30)
	for slot, c := range clients {
		if c.Have() != b.NextFrame() {
			t.Fatalf("client %d holds %d frames, the room cut %d", slot, c.Have(), b.NextFrame())
		}
		for n := max(0, c.Have()-CarryFrames); n < c.Have(); n++ {
			held := c.held[n%CarryFrames]
			f, _ := b.Frame(n)
			if held.Number != n || len(held.Slots) != len(f.Slots) {
				t.Fatalf("client %d frame %d: holds %v", slot, n, held)
			}
			for i := range f.Slots {
				if f.Slots[i].MadeUp != held.Slots[i].MadeUp {
					t.Fatalf("client %d frame %d slot %d: %v, room %v", slot, n, i, held.Slots[i], f.Slots[i])
				}
			}
		}
	}
	// The players' inputs reach the restored room's frames.
	last, _ := b.Frame(b.NextFrame() - 2)
	for i, s := range last.Slots {
		if s.MadeUp {
			t.Fatalf("slot %d made up in frame %d after the rejoin: %v", i, last.Number, last)
		}
	}
	// No frame the clients waited through is gone: a player coming back
	// is late, not gone.
	for n := resumed; n < b.NextFrame(); n++ {
		f, _ := b.Frame(n)
		for i, s := range f.Slots {
			if s.Gone {
				t.Fatalf("frame %d slot %d gone after a restore", n, i)
			}
		}
	}
	if got := b.Stats().Dropped; got != [len(got)]uint64{} {
		t.Fatalf("restored room dropped %v", got)
	}
}

// TestExtendRules: a restored room takes carried frames only in order,
// only before it cut one of its own, and only bodies that decode.
func TestExtendRules(t *testing.T) {
	cfg := Config{Players: 2, Hz: 15}
	start := time.Unix(0, 0)
	a, _ := NewRoom(cfg, start, &recorder{})
	var log []EncodedFrame
	a.Tap(func(f EncodedFrame) { f.Full = append([]byte(nil), f.Full...); log = append(log, f) })
	a.Tick(start.Add(time.Second))
	b, err := RestoreRoom(cfg, start, log[:5], &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Extend(log[6:8]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a gap: %v", err)
	}
	bad := log[5]
	bad.Full = []byte{0xff, 0xff}
	bad.FullBits = 16
	if err := b.Extend([]EncodedFrame{bad}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a bad body: %v", err)
	}
	if err := b.Extend(log[5:7]); err != nil {
		t.Fatal(err)
	}
	b.Tick(start.Add(2 * time.Second))
	if err := b.Extend(log[7:8]); !errors.Is(err, ErrConfig) {
		t.Fatalf("after a cut: %v", err)
	}
	if err := b.Rejoin(0, b.NextFrame()+1, 0, start); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a client ahead of the room: %v", err)
	}
	if _, err := RestoreRoom(cfg, start, log[1:3], &recorder{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a log not from frame 0: %v", err)
	}
}

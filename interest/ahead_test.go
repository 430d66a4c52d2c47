package interest

import (
	"testing"
	"time"
)

// loop hands the world's packets straight to one client.
type loop struct {
	c   *Client
	now time.Time
}

func (l *loop) SendUnreliable(_ ID, msg []byte) error { return l.c.Deliver(l.now, msg) }
func (l *loop) SendReliable(_ ID, msg []byte) error   { return l.c.Deliver(l.now, msg) }

// A move stamped one frame ahead of the world (the client has advanced to
// the frame the world is about to run, MaxAhead allows it) must put the
// player where the client has it: the world holds the entity at the
// command's source until the command's frame, as the client does, so the
// client's next move is not corrected.
func TestMoveAheadOfWorld(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	l := &loop{now: start}
	w, _ := NewWorld(cfg, start, l)
	id, _ := w.Spawn(Player, Logic{Pos: Vec{X: 1000, Y: 1000}, Life: 100}, Display{Name: "p"})
	_ = w.Join(id)
	l.c, _ = NewClient(cfg, id)
	for range 4 { // the client syncs
		l.now = w.NextFrame()
		w.Tick(l.now)
		l.c.Advance(l.now)
		if p := l.c.Packet(l.now); p != nil {
			_ = w.Deliver(id, p)
		}
	}
	// The client advances to the next frame before the world runs it,
	// moves, and its packet arrives before World.Tick.
	l.now = w.NextFrame()
	l.c.Advance(l.now)
	if l.c.Frame() != w.Frame()+1 {
		t.Fatalf("client at %d, world at %d", l.c.Frame(), w.Frame())
	}
	if err := l.c.Move(Vec{X: 4000, Y: 1000}, 60); err != nil {
		t.Fatal(err)
	}
	_ = w.Deliver(id, l.c.Packet(l.now))
	w.Tick(l.now)
	for range 3 {
		l.now = w.NextFrame()
		w.Tick(l.now)
		l.c.Advance(l.now)
		me, _ := l.c.Self()
		lg, _ := w.Logic(id)
		if me.Pos != lg.Pos {
			t.Errorf("frame %d: client at %v, world at %v", w.Frame(), me.Pos, lg.Pos)
		}
	}
}

package interest

import (
	"bytes"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// moveLink carries a world's packets to one client, dropping those the
// test says to, and reads what each carried.
type moveLink struct {
	c    *Client
	now  time.Time
	drop func(moves []downMsg) bool // drop the packet that carries these moves
	seen []downMsg                  // every move delivered
}

func (l *moveLink) SendUnreliable(_ ID, msg []byte) error {
	var moves []downMsg
	var hdr downHeader
	var m downMsg
	if err := decodeDown(&l.c.lay, bytes.Clone(msg), l.c.frame, &hdr, &m, func(m *downMsg) {
		if m.tag == tagMove {
			moves = append(moves, *m)
		}
	}); err != nil {
		return err
	}
	if l.drop != nil && l.drop(moves) {
		return nil
	}
	l.seen = append(l.seen, moves...)
	return l.c.Deliver(l.now, msg)
}

func (l *moveLink) SendReliable(id ID, msg []byte) error { return l.c.Deliver(l.now, msg) }

// TestMovesGoOn: a move that starts where the entity's previous path took
// it goes without its source, and the client finds the source on the path
// it holds; a client that missed the move before cannot, asks for the
// entity instead, and holds the world's path again a round trip later.
func TestMovesGoOn(t *testing.T) {
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	link := &moveLink{}
	w, err := NewWorld(cfg, start, link)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{X: 1000, Y: 1000}, Life: 100}, Display{})
	wolf, _ := w.Spawn(NPC, Logic{Pos: Vec{X: 1500, Y: 900}, Life: 100}, Display{})
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	link.c, _ = NewClient(cfg, player)
	c := link.c
	n := 0
	step := func(frames int) {
		for range frames {
			n++
			link.now = start.Add(time.Duration(n) * w.Config().Period())
			w.Tick(link.now)
			c.Advance(link.now)
			if pkt := c.Packet(link.now); pkt != nil {
				if err := w.Deliver(player, pkt); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	agree := func(what string) {
		t.Helper()
		v, ok := c.Entity(wolf)
		lg, _ := w.Logic(wolf)
		if !ok || v.Logic.Pos != lg.Pos || v.Logic.Dest != lg.Dest || v.Logic.Speed != lg.Speed {
			t.Fatalf("%s: the client holds the wolf as %+v (%v), the world %+v", what, v.Logic, ok, lg)
		}
	}
	lastMove := func() downMsg {
		t.Helper()
		for i := len(link.seen) - 1; i >= 0; i-- {
			if link.seen[i].id == wolf {
				return link.seen[i]
			}
		}
		t.Fatal("no move of the wolf delivered")
		return downMsg{}
	}
	step(3)

	// From where it stands, then on from where that path takes it, with
	// the same speed and then another.
	w.Move(wolf, Vec{X: 1900, Y: 900}, 20)
	step(5)
	if m := lastMove(); !m.cont || m.off != (Vec{X: 400}) || m.lg.Speed != 20 {
		t.Errorf("the first move went as %+v, want going on from the spawn, 400 along x at speed 20", m)
	}
	agree("after the first move")
	w.Move(wolf, Vec{X: 1700, Y: 1300}, 20)
	step(2)
	if m := lastMove(); !m.cont || m.lg.Speed != 0 || m.off != (Vec{X: 100, Y: 400}) {
		t.Errorf("the second move went as %+v, want going on from 1600,900 at the same speed", m)
	}
	agree("after the second move")

	// A teleport goes with its source.
	w.Place(wolf, Vec{X: 1200, Y: 1200})
	step(2)
	if m := lastMove(); m.cont || m.lg.Pos != (Vec{X: 1200, Y: 1200}) {
		t.Errorf("the teleport went as %+v, want with its source", m)
	}
	agree("after the teleport")

	// The next move is lost; the one after goes on from it, which the
	// client does not hold.
	w.Move(wolf, Vec{X: 1600, Y: 1200}, 30)
	lost := false
	link.drop = func(moves []downMsg) bool {
		for _, m := range moves {
			if m.id == wolf && !lost {
				lost = true
				return true
			}
		}
		return false
	}
	step(1)
	link.drop = nil
	if !lost {
		t.Fatal("no packet carried the wolf's move")
	}
	w.Move(wolf, Vec{X: 1600, Y: 1500}, 30)
	before := c.Stats()
	step(1)
	if got := c.Stats().MovesUnresolved - before.MovesUnresolved; got != 1 {
		t.Errorf("%d moves unresolved, want the one after the lost move", got)
	}
	step(8) // the world repairs the lost packet, the client's request is answered
	agree("after the repair")
	for range 6 { // and both go on alike
		step(1)
		agree("after the repair, a frame on")
	}
	w.Move(wolf, Vec{X: 1300, Y: 1500}, 30)
	step(2)
	if m := lastMove(); !m.cont {
		t.Errorf("the move after the repair went as %+v", m)
	}
	agree("after the repair and a move")
	if s := c.Stats(); s.Malformed != 0 {
		t.Errorf("%d malformed packets", s.Malformed)
	}
}

// TestMoveShortOffsets: a move's offset takes the short form within half
// a region, the long one beyond, and both read back.
func TestMoveShortOffsets(t *testing.T) {
	l := newLayout(Config{Width: 8, Height: 8}.WithDefaults())
	for _, c := range []struct {
		name       string
		cont       bool
		src, dest  Vec
		speed      int32
		prev       int32
		wantBits   int
		wantSpeedZ bool
	}{
		{"short, with source", false, Vec{X: 3000, Y: 3000}, Vec{X: 3000 + 511, Y: 3000 - 512}, 24, 0, 3 + 1 + 26 + 1 + 1 + 20 + 6, false},
		{"long, with source", false, Vec{X: 3000, Y: 3000}, Vec{X: 3000 + 512, Y: 3000}, 24, 0, 3 + 1 + 26 + 1 + 1 + 2*14 + 6, false},
		{"short, going on, same speed", true, Vec{X: 3000, Y: 3000}, Vec{X: 2900, Y: 3100}, 24, 24, 3 + 1 + 1 + 1 + 20 + 1, true},
		{"short, going on, new speed", true, Vec{X: 3000, Y: 3000}, Vec{X: 2900, Y: 3100}, 30, 24, 3 + 1 + 1 + 1 + 20 + 1 + 6, false},
		{"standing, going on", true, Vec{X: 3000, Y: 3000}, Vec{X: 3000, Y: 3000}, 0, 24, 3 + 1 + 1, true},
	} {
		w := codec.NewWriter(nil)
		l.writeMove(w, 5, c.cont, c.src, c.dest, c.speed, c.prev)
		if w.Len() != c.wantBits {
			t.Errorf("%s: %d bits, want %d", c.name, w.Len(), c.wantBits)
		}
		var m downMsg
		r := codec.NewReader(w.Bytes())
		l.readMove(r, &m)
		if err := r.Err(); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m.ep != 5 || m.cont != c.cont || m.off != c.dest.Sub(c.src) || (m.lg.Speed == 0) != c.wantSpeedZ {
			t.Errorf("%s: read %+v", c.name, m)
		}
		if !c.cont && (m.lg.Pos != c.src || m.lg.Dest != c.dest || m.lg.Speed != c.speed) {
			t.Errorf("%s: read %+v", c.name, m.lg)
		}
	}
}

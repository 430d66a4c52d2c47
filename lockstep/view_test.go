package lockstep

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// blastGame is an authoritative game whose frame 30 is a 100-unit area
// effect (100 changes of 40 bytes: 4 KB, four times what a packet holds)
// and whose frame 60 is beyond any bound (3,000 changes of 200 bytes:
// 600 KB); other frames change one unit.
type blastGame struct {
	frame   int
	changes []StateChange
}

func blastChange(e uint32, frame, size int) StateChange {
	b := make([]byte, size)
	binary.LittleEndian.PutUint32(b, e)
	binary.LittleEndian.PutUint32(b[4:], uint32(frame))
	return StateChange{Entity: e, Data: b}
}

func (g *blastGame) Step(f Frame) {
	g.changes = g.changes[:0]
	switch g.frame {
	case 30:
		for e := range uint32(100) {
			g.changes = append(g.changes, blastChange(e+1, g.frame, 40))
		}
	case 60:
		for e := range uint32(3000) {
			g.changes = append(g.changes, blastChange(e+1, g.frame, 200))
		}
	default:
		g.changes = append(g.changes, blastChange(7, g.frame, 8))
	}
	g.frame++
}

func (g *blastGame) Hash() uint64                      { return uint64(g.frame) }
func (g *blastGame) Changes() []StateChange            { return g.changes }
func (g *blastGame) Visible(player int, _ uint32) bool { return true }

// TestLargeViews: a view four times a packet comes whole, in parts, under
// 20% loss and to a player who rejoins later and is streamed the match;
// a view over the room's bounds comes with what fits and Frame.ViewCut,
// and the room raises EventViewCut. No frame is lost or held for ever.
func TestLargeViews(t *testing.T) {
	start := time.Unix(0, 0)
	now := start
	cfg := Config{Players: 2, Hz: 15, Authoritative: true, Simulation: func() Simulation { return &blastGame{} }}
	w := &fogWire{t: t, now: &now, rng: rand.New(rand.NewPCG(3, 4)), loss: 0.2, sawHidden: make([]int, 2), msgs: make([]int, 2)}
	newClient := func(slot int) *Client {
		c, err := NewClient(cfg, slot)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w.clients = []*Client{newClient(0), nil} // player 1 comes at 8 s
	room, err := NewRoom(cfg, start, w)
	if err != nil {
		t.Fatal(err)
	}
	room.Leave(1)
	got := []map[int]Frame{{}, {}}
	for tick := 0; tick < 12*60; tick++ {
		now = start.Add(time.Duration(tick) * time.Second / 60)
		if tick == 8*60 {
			w.clients[1] = newClient(1)
			room.Join(1, now)
		}
		for slot, c := range w.clients {
			if c == nil {
				continue
			}
			room.Deliver(slot, c.Packet(now), now)
			for _, m := range c.Outbox() {
				room.Deliver(slot, m, now)
			}
		}
		room.Tick(now)
		for slot, c := range w.clients {
			if c == nil {
				continue
			}
			for _, f := range c.Advance(now).Frames {
				got[slot][f.Number] = f
			}
		}
	}
	n := room.NextFrame()
	for slot := range 2 {
		if len(got[slot]) < n-15 {
			t.Fatalf("player %d played %d of %d frames", slot, len(got[slot]), n)
		}
		blast := got[slot][30]
		if len(blast.Changes) != 100 || blast.ViewCut {
			t.Fatalf("player %d: the area effect came with %d changes of 100, cut %v", slot, len(blast.Changes), blast.ViewCut)
		}
		for i, ch := range blast.Changes {
			if want := blastChange(uint32(i+1), 30, 40); ch.Entity != want.Entity || !bytes.Equal(ch.Data, want.Data) {
				t.Fatalf("player %d: change %d of the area effect is %+v", slot, i, ch)
			}
		}
		mega := got[slot][60]
		if !mega.ViewCut || len(mega.Changes) < 2000 || len(mega.Changes) >= 3000 {
			t.Fatalf("player %d: the view over the bounds came with %d changes, cut %v", slot, len(mega.Changes), mega.ViewCut)
		}
		for k, f := range got[slot] {
			if k != 60 && f.ViewCut {
				t.Fatalf("player %d: frame %d cut", slot, k)
			}
		}
	}
	st := room.Stats()
	cuts := eventsOf(room.Events(), EventViewCut)
	if st.ViewOverflow == 0 || st.ViewOverflow >= 1000 || len(cuts) != 1 || cuts[0].Frame != 60 || !slices.Equal(cuts[0].Players, []int{0, 1}) {
		t.Fatalf("overflow %d, cut events %+v", st.ViewOverflow, cuts)
	}
	if w.lost < 20 || len(w.clients[0].views.pending) != 0 || w.clients[0].views.bytes != 0 {
		t.Fatalf("%d lost; views pending %d, %d bytes", w.lost, len(w.clients[0].views.pending), w.clients[0].views.bytes)
	}
	t.Logf("overflow %d changes; %d unreliable messages lost", st.ViewOverflow, w.lost)
}

// TestViewHoldBound: a room (or anyone) that sends a client parts of
// views beyond MaxViewHoldBytes gets ErrViewTooLarge; the view goes to the
// game cut, and the client holds nothing of it.
func TestViewHoldBound(t *testing.T) {
	c, _ := NewClient(Config{Players: 2, Authoritative: true}, 0)
	now := time.Unix(0, 0)
	part := func(frame, i int) []byte {
		var w codec.Writer
		writeLife(&w, lifeMore)
		w.WriteUvarint(lifeViewPart)
		w.WriteUvarint(uint64(frame))
		w.WriteUint(uint64(i), MaxViewParts)
		chs := make([]StateChange, 30)
		for k := range chs {
			chs[k] = StateChange{Entity: uint32(k), Data: make([]byte, 255)}
		}
		writeChanges(&w, chs)
		return w.Bytes()
	}
	var err error
	sent := 0
	for i := 1; i <= MaxViewParts && err == nil; i++ {
		for f := 1; f <= 20 && err == nil; f++ {
			err = c.Deliver(now, part(f, i))
			sent++
		}
	}
	if !errors.Is(err, ErrViewTooLarge) || c.views.bytes > MaxViewHoldBytes {
		t.Fatalf("after %d parts: %v, %d bytes held", sent, err, c.views.bytes)
	}
	t.Logf("refused after %d parts (%d bytes held)", sent, c.views.bytes)
	for _, v := range c.views.pending {
		if v.cut && v.bytes != 0 {
			t.Fatalf("a refused view holds %d bytes", v.bytes)
		}
	}
}

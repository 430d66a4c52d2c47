package lockstep

import (
	"bytes"
	"encoding/binary"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// fogGame is a two-player game with fog of war: each player moves two
// units; player 1's second unit (entity 12) hides in a bush that player 0
// cannot see into. A change carries a unit's position; the hidden unit's
// carries a marker too, so that a test can look for it in every packet.
type fogGame struct {
	frame   int
	pos     map[uint32][2]int32
	changes []StateChange
}

var hiddenMarker = []byte("\xde\xad\xbe\xefHIDDEN")

const hiddenUnit = 12

func newFogGame() *fogGame {
	return &fogGame{pos: map[uint32][2]int32{1: {0, 0}, 2: {5, 5}, 11: {100, 100}, hiddenUnit: {90, 90}}}
}

func (g *fogGame) change(e uint32) StateChange {
	p := g.pos[e]
	var b []byte
	if e == hiddenUnit {
		b = append(b, hiddenMarker...)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(p[0]))
	b = binary.LittleEndian.AppendUint32(b, uint32(p[1]))
	return StateChange{Entity: e, Data: b}
}

func (g *fogGame) Step(f Frame) {
	g.changes = g.changes[:0]
	moved := map[uint32]bool{}
	if g.frame == 0 {
		for e := range g.pos {
			moved[e] = true // the whole state, once
		}
	}
	for slot, s := range f.Slots {
		for _, in := range s.Inputs {
			if len(in) < 3 {
				continue
			}
			e := uint32(10*slot + 1 + int(in[0]&1))
			p := g.pos[e]
			p[0] += int32(int8(in[1]))
			p[1] += int32(int8(in[2]))
			g.pos[e] = p
			moved[e] = true
		}
	}
	for _, e := range []uint32{1, 2, 11, hiddenUnit} { // a fixed order
		if moved[e] {
			g.changes = append(g.changes, g.change(e))
		}
	}
	g.frame++
}

func (g *fogGame) Hash() uint64 {
	var b []byte
	for _, e := range []uint32{1, 2, 11, hiddenUnit} {
		b = append(b, g.change(e).Data...)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(g.frame))
	h := uint64(14695981039346656037)
	for _, c := range b {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return h
}

func (g *fogGame) Changes() []StateChange { return g.changes }

func (g *fogGame) Visible(player int, e uint32) bool { return e != hiddenUnit || player == 1 }

// visibleTo returns what player may see of the game: its units' positions
// as changes encode them.
func (g *fogGame) visibleTo(player int) map[uint32]string {
	m := map[uint32]string{}
	for e := range g.pos {
		if g.Visible(player, e) {
			m[e] = string(g.change(e).Data)
		}
	}
	return m
}

// hasShifted reports whether b holds marker at any bit offset (the wire
// is bit-packed).
func hasShifted(b, marker []byte) bool {
	for shift := range 8 {
		s := make([]byte, len(b))
		for i := range b {
			v := uint16(b[i]) >> shift
			if i+1 < len(b) {
				v |= uint16(b[i+1]) << (8 - shift)
			}
			s[i] = byte(v)
		}
		if bytes.Contains(s, marker) {
			return true
		}
	}
	return false
}

// fogWire delivers the room's messages to the clients, losing a share of
// the unreliable ones, and records what it saw for each player.
type fogWire struct {
	t         *testing.T
	clients   []*Client
	now       *time.Time
	rng       *rand.Rand
	loss      float64
	sawHidden []int // per player: messages holding the hidden unit's marker
	msgs      []int
	lost      int
}

func (w *fogWire) send(slot int, msg []byte, reliable bool) error {
	w.msgs[slot]++
	if hasShifted(msg, hiddenMarker) {
		w.sawHidden[slot]++
	}
	if !reliable && w.rng.Float64() < w.loss {
		w.lost++
		return nil
	}
	if c := w.clients[slot]; c != nil {
		if err := c.Deliver(*w.now, msg); err != nil {
			w.t.Errorf("client %d: %v", slot, err)
		}
	}
	return nil
}

func (w *fogWire) SendUnreliable(slot int, msg []byte) error { return w.send(slot, msg, false) }
func (w *fogWire) SendReliable(slot int, msg []byte) error   { return w.send(slot, msg, true) }

// fogRun plays the fog game for 40 s with scripted inputs, in
// authoritative mode or input mode, and returns the frames' log and, per
// frame, what player 0 saw of the game (its view in authoritative mode,
// the visible part of its full simulation in input mode). With rejoin,
// player 0 crashes at 15 s and rejoins at 18 s.
func fogRun(t *testing.T, auth, rejoin bool) (*Room, *fogWire, map[int]map[uint32]string) {
	start := time.Unix(0, 0)
	now := start
	cfg := Config{Players: 2, Hz: 15, Authoritative: auth}
	if auth {
		cfg.Simulation = func() Simulation { return newFogGame() }
	}
	w := &fogWire{t: t, now: &now, rng: rand.New(rand.NewPCG(1, 2)), loss: 0.2, sawHidden: make([]int, 2), msgs: make([]int, 2)}
	newClient := func(slot int) *Client {
		c, err := NewClient(cfg, slot)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	w.clients = []*Client{newClient(0), newClient(1)}
	room, err := NewRoom(cfg, start, w)
	if err != nil {
		t.Fatal(err)
	}
	// Player 0's picture: a view built from changes, or a full game.
	view := map[uint32]string{}
	full := newFogGame()
	seen := map[int]map[uint32]string{}
	inRng := rand.New(rand.NewPCG(7, 7))
	for tick := 0; now.Before(start.Add(40 * time.Second)); tick++ {
		now = start.Add(time.Duration(tick) * time.Second / 60)
		switch {
		case rejoin && tick == 15*60:
			w.clients[0] = nil
			room.Leave(0)
		case rejoin && tick == 18*60:
			w.clients[0] = newClient(0)
			view, full = map[uint32]string{}, newFogGame()
			room.Join(0, now)
		}
		for slot, c := range w.clients {
			if c == nil {
				continue
			}
			if inRng.IntN(8) == 0 {
				c.Input(now, []byte{byte(inRng.IntN(2)), byte(inRng.IntN(7) - 3), byte(inRng.IntN(7) - 3)})
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
				if slot != 0 {
					continue
				}
				if auth {
					for _, ch := range f.Changes {
						if ch.Entity == hiddenUnit {
							t.Fatalf("frame %d: player 0 received the hidden unit", f.Number)
						}
						view[ch.Entity] = string(ch.Data)
					}
					seen[f.Number] = maps.Clone(view)
				} else {
					full.Step(f)
					seen[f.Number] = full.visibleTo(0)
				}
			}
		}
	}
	return room, w, seen
}

// TestAuthoritativeFog: in an authoritative room the hidden unit's data
// never reaches the opposing player, on any packet, while player 0 sees
// the same game, frame by frame, as it does in input mode; under 20%
// loss, and across a crash and rejoin.
func TestAuthoritativeFog(t *testing.T) {
	for _, rejoin := range []bool{false, true} {
		authRoom, aw, authSeen := fogRun(t, true, rejoin)
		inRoom, iw, inSeen := fogRun(t, false, rejoin)
		if aw.sawHidden[0] != 0 {
			t.Fatalf("rejoin %v: %d of %d packets to player 0 held the hidden unit", rejoin, aw.sawHidden[0], aw.msgs[0])
		}
		if aw.sawHidden[1] == 0 || iw.sawHidden[0] != 0 {
			t.Fatalf("the marker scan finds nothing where it should: %v %v", aw.sawHidden, iw.sawHidden)
		}
		// Both modes cut the same frames from the same inputs.
		n := min(authRoom.NextFrame(), inRoom.NextFrame())
		for k := range n {
			a, _ := authRoom.Frame(k)
			b, _ := inRoom.Frame(k)
			if !sameFrame(a, b, FillIdle) {
				t.Fatalf("frame %d cut differently: %+v, %+v", k, a, b)
			}
		}
		compared := 0
		for f, want := range inSeen {
			got, ok := authSeen[f]
			if !ok {
				continue
			}
			compared++
			if !maps.Equal(got, want) {
				t.Fatalf("rejoin %v, frame %d: player 0 sees %v in authoritative mode, %v in input mode", rejoin, f, got, want)
			}
		}
		if compared < n-2*15 {
			t.Fatalf("only %d of %d frames compared", compared, n)
		}
		// Every frame reached player 0 through the loss, as frames of inputs do.
		if st := authRoom.Stats(); aw.lost < 100 || aw.clients[0].Have() < n-2 || st.ViewOverflow != 0 {
			t.Fatalf("%d packets lost, player 0 holds %d of %d frames; stats %+v", aw.lost, aw.clients[0].Have(), n, st)
		}
	}
}

// TestAuthoritativeConfig: an authoritative room needs an Authority, and
// takes no spectators.
func TestAuthoritativeConfig(t *testing.T) {
	start := time.Unix(0, 0)
	if _, err := NewRoom(Config{Players: 2, Authoritative: true}, start, &recorder{}); err == nil {
		t.Fatal("no simulation accepted")
	}
	if _, err := NewRoom(Config{Players: 2, Authoritative: true, Simulation: chainFactory}, start, &recorder{}); err == nil {
		t.Fatal("a simulation that is not an Authority accepted")
	}
	room, err := NewRoom(Config{Players: 2, Authoritative: true, Simulation: func() Simulation { return newFogGame() }}, start, &recorder{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := room.AddSpectator(0, start); err == nil {
		t.Fatal("spectator accepted")
	}
}

func FuzzDecodeViewBody(f *testing.F) {
	var w codec.Writer
	w.WriteBool(false) // whole
	w.WriteUint(2, maxViewChanges)
	w.WriteUvarint(7)
	w.WriteBytes([]byte("pos"), MaxChangeBytes)
	w.WriteUvarint(1 << 31)
	w.WriteBytes(nil, MaxChangeBytes)
	f.Add(w.Bytes())
	w.Reset(nil)
	w.WriteBool(true) // a head, two parts to come, not cut
	w.WriteBool(false)
	w.WriteUint(2, MaxViewParts)
	w.WriteUint(1, maxViewChanges)
	w.WriteUvarint(7)
	w.WriteBytes([]byte("pos"), MaxChangeBytes)
	f.Add(w.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := decodeViewBody(codec.NewReader(b), 3)
		if err != nil {
			return
		}
		if len(fr.Changes) > maxViewChanges || fr.Slots != nil || fr.more > MaxViewParts {
			t.Fatalf("decoded out of bounds: %+v", fr)
		}
		for _, c := range fr.Changes {
			if len(c.Data) > MaxChangeBytes {
				t.Fatalf("change of %d bytes", len(c.Data))
			}
		}
		// And as a client of an authoritative room takes it in a packet.
		c, _ := NewClient(Config{Players: 2, Authoritative: true}, 0)
		c.Deliver(time.Unix(0, 0), b)
		c.Advance(time.Unix(1, 0))
	})
}

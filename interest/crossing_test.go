package interest

import (
	"testing"
	"time"
)

// crossing is two cells side by side (west and east, each a World with
// its Border) and one player, ann, whose client starts in the west: the
// harness of the tests of commands at a crossing.
type crossing struct {
	t    *testing.T
	ws   [2]*World
	bs   [2]*Border
	outs [2]inbox
	id   ID
	cl   *Client
	cell int                   // where the client's packets go
	deaf bool                  // the client hears nothing (its acks are lost)
	acts [2]map[ActionKind]int // the actions each cell applied
	now  time.Time
}

func newCrossing(t *testing.T) *crossing { return newCrossingWith(t, func(*Config) {}) }

// newCrossingWith is newCrossing with both cells' configuration changed
// by mod.
func newCrossingWith(t *testing.T, mod func(*Config)) *crossing {
	t.Helper()
	x := &crossing{t: t, now: time.Unix(0, 0)}
	for i := range 2 {
		cfg := Config{Width: 8, Height: 4, MaxEntities: 1024, IDStride: 2, IDOffset: i}
		mod(&cfg)
		w, err := NewWorld(cfg, x.now, &x.outs[i])
		if err != nil {
			t.Fatal(err)
		}
		x.acts[i] = map[ActionKind]int{}
		w.OnAction(func(a Action) { x.acts[i][a.Kind]++ })
		x.ws[i] = w
	}
	x.bs[0], _ = x.ws[0].NewBorder(Rect{0, 0, 4, 4}, Rect{4, 0, 8, 4})
	x.bs[1], _ = x.ws[1].NewBorder(Rect{4, 0, 8, 4}, Rect{0, 0, 4, 4})
	at := Vec{X: 3800, Y: 2048}
	x.id, _ = x.ws[0].Spawn(Player, Logic{Pos: at, Dest: at, Life: 100}, Display{Name: "ann"})
	if err := x.ws[0].Join(x.id); err != nil {
		t.Fatal(err)
	}
	x.cl, _ = NewClient(x.ws[0].Config(), x.id)
	for range 20 {
		x.frame()
	}
	if _, ok := x.cl.Self(); !ok {
		t.Fatal("the client does not know its entity")
	}
	return x
}

// frame runs one frame of both cells, their border messages, and the
// client; it reports whether the west handed ann over.
func (x *crossing) frame() bool {
	x.now = x.now.Add(x.ws[0].Config().Period())
	for _, w := range x.ws {
		w.Tick(x.now)
	}
	var handed []ID
	for i, b := range x.bs {
		msg, h := b.Write(nil)
		if i == 0 {
			handed = h
		}
		if _, err := x.bs[1-i].Apply(msg); err != nil {
			x.t.Fatal(err)
		}
	}
	if !x.deaf {
		for _, m := range x.outs[x.cell].msgs {
			x.cl.Deliver(x.now, m)
		}
	}
	x.outs[0].msgs, x.outs[1].msgs = nil, nil
	x.cl.Advance(x.now)
	if p := x.cl.Packet(x.now); p != nil {
		x.ws[x.cell].Deliver(x.id, p)
	}
	return len(handed) > 0
}

// follow moves the client to the east, as engine.Client does when its
// entity crossed: a new client inherits the old (movesOnly: as a client
// of an older cell does), and the east joins it.
func (x *crossing) follow(movesOnly bool) {
	next, _ := NewClient(x.ws[1].Config(), x.id)
	join := x.ws[1].JoinInherited
	if movesOnly {
		next.InheritMoves(x.cl)
		join = x.ws[1].Join
	} else {
		next.Inherit(x.cl)
	}
	x.cl, x.cell = next, 1
	if err := join(x.id); err != nil {
		x.t.Fatal(err)
	}
}

// TestCommandsCrossBorder: a player's client sends a command the old cell
// never applies (the entity was handed over as the command travelled);
// once the client follows it to the new cell (Inherit), the command is
// sent again and applied there, and a command the old cell did apply is
// not applied twice.
func TestCommandsCrossBorder(t *testing.T) {
	x := newCrossing(t)
	if err := x.cl.Jump(); err != nil { // applied by the west
		t.Fatal(err)
	}
	x.frame()
	x.frame()
	if x.acts[0][ActionJump] != 1 {
		t.Fatalf("%d jumps, want the west's 1", x.acts[0][ActionJump])
	}
	if err := x.cl.Move(Vec{X: 4300, Y: 2048}, 40); err != nil {
		t.Fatal(err)
	}
	for !x.frame() {
	}
	// Handed over: the client, not knowing yet, turns north-east; its
	// packet reaches the west, which no longer holds ann.
	if err := x.cl.Move(Vec{X: 4600, Y: 2600}, 40); err != nil {
		t.Fatal(err)
	}
	x.frame()
	if lg, _ := x.ws[1].Logic(x.id); lg.Dest == (Vec{X: 4600, Y: 2600}) {
		t.Fatal("the east applied a command sent to the west")
	}
	x.follow(false)
	for range 8 {
		x.frame()
	}
	if lg, _ := x.ws[1].Logic(x.id); lg.Dest != (Vec{X: 4600, Y: 2600}) {
		t.Fatalf("the east has ann heading for %v: the command sent at the crossing was lost", lg.Dest)
	}
	if x.acts[0][ActionJump] != 1 || x.acts[1][ActionJump] != 0 {
		t.Fatalf("jumps: west %d, east %d: want the west's 1 alone", x.acts[0][ActionJump], x.acts[1][ActionJump])
	}
	if st := x.ws[1].Stats(); st.Corrections != 0 {
		t.Fatalf("the east corrected ann %d times", st.Corrections)
	}
}

// TestCommandsExactlyOnceAtCrossing: jumps, skills and custom commands in
// flight when a player crosses into the next cell are applied exactly
// once: those the old cell applied but whose acknowledgement the client
// never heard are not applied again by the new cell, and those sent to
// the old cell after it handed the player over are applied by the new
// one. A client and cell of the older kind (InheritMoves, JoinMovesOnly),
// and a new cell taking a player from an old one (no trailer), lose the
// latter rather than apply anything twice.
func TestCommandsExactlyOnceAtCrossing(t *testing.T) {
	for _, tc := range []struct {
		name      string
		movesOnly bool // the client and the east are of the older kind
		strip     bool // the west is
		east      map[ActionKind]int
	}{
		{"exactly once", false, false, map[ActionKind]int{ActionJump: 1, ActionCustom: 1}},
		{"older client and cell", true, false, map[ActionKind]int{}},
		{"older west", false, true, map[ActionKind]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newCrossing(t)
			x.bs[0].noTrailer = tc.strip
			if err := x.cl.Move(Vec{X: 4300, Y: 2048}, 40); err != nil {
				t.Fatal(err)
			}
			x.frame()
			// The west applies a jump and a skill, but its packets are lost
			// from now on: the client holds both as unacknowledged.
			x.deaf = true
			if err := x.cl.Jump(); err != nil {
				t.Fatal(err)
			}
			if err := x.cl.Skill(7, 0); err != nil {
				t.Fatal(err)
			}
			x.frame()
			if x.acts[0][ActionJump] != 1 || x.acts[0][ActionSkill] != 1 {
				t.Fatalf("the west applied %v, want a jump and a skill", x.acts[0])
			}
			for !x.frame() {
			}
			// Handed over; the client, not knowing, jumps and sends a custom
			// command, which reach the west.
			if err := x.cl.Jump(); err != nil {
				t.Fatal(err)
			}
			if err := x.cl.Custom(3, []byte("hi")); err != nil {
				t.Fatal(err)
			}
			x.frame()
			x.follow(tc.movesOnly)
			x.deaf = false
			for range 8 {
				x.frame()
			}
			if want := (map[ActionKind]int{ActionJump: 1, ActionSkill: 1}); !sameCounts(x.acts[0], want) {
				t.Fatalf("the west applied %v, want %v", x.acts[0], want)
			}
			if !sameCounts(x.acts[1], tc.east) {
				t.Fatalf("the east applied %v, want %v", x.acts[1], tc.east)
			}
			if lg, _ := x.ws[1].Logic(x.id); lg.Dest != (Vec{X: 4300, Y: 2048}) {
				t.Fatalf("the east has ann heading for %v", lg.Dest)
			}
			if n := len(x.cl.unacked); n != 0 {
				t.Fatalf("the client holds %d commands unacknowledged", n)
			}
			if st := x.ws[1].Stats(); st.Corrections != 0 {
				t.Fatalf("the east corrected ann %d times", st.Corrections)
			}
		})
	}
}

func sameCounts(a, b map[ActionKind]int) bool {
	for k, n := range a {
		if b[k] != n {
			return false
		}
	}
	for k, n := range b {
		if a[k] != n {
			return false
		}
	}
	return true
}

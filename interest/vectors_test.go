package interest

import (
	"bytes"
	"flag"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/internal/vectorfile"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/vectors from the encoders")

// vector is one packet of SPEC.md section 8, as bytes, with what it says.
type vector struct {
	name, about string
	msg         []byte
}

// vectorWorld plays a fixed scene and keeps every packet each way: a
// player at (1000, 1000) and a wolf (entity 2) at (1500, 900) with 80
// life, on an 8 x 8-region map; at frame 4 the wolf uses skill 7 on the
// player and walks to (1800, 900) at 40 a frame; at frame 5 the player
// walks to (1200, 1000) at 64 a frame.
type vectorWorld struct {
	c    *Client
	now  time.Time
	down [][]byte // world packets and display replies, in order
	up   [][]byte
}

func (v *vectorWorld) SendUnreliable(_ ID, msg []byte) error {
	v.down = append(v.down, bytes.Clone(msg))
	return v.c.Deliver(v.now, msg)
}

func (v *vectorWorld) SendReliable(id ID, msg []byte) error { return v.SendUnreliable(id, msg) }

func playVectorWorld(t *testing.T) *vectorWorld {
	cfg := Config{Width: 8, Height: 8}
	start := time.Unix(0, 0)
	v := &vectorWorld{}
	w, err := NewWorld(cfg, start, v)
	if err != nil {
		t.Fatal(err)
	}
	player, _ := w.Spawn(Player, Logic{Pos: Vec{X: 1000, Y: 1000}, Life: 100}, Display{Name: "you"})
	wolf, _ := w.Spawn(NPC, Logic{Pos: Vec{X: 1500, Y: 900}, Life: 80}, Display{Name: "wolf", Appearance: 3})
	if player != 1 || wolf != 2 {
		t.Fatalf("ids %d and %d, want 1 and 2", player, wolf)
	}
	if err := w.Join(player); err != nil {
		t.Fatal(err)
	}
	v.c, _ = NewClient(cfg, player)
	for n := 1; n <= 9; n++ {
		v.now = start.Add(time.Duration(n) * w.Config().Period())
		if n == 4 {
			w.Skill(wolf, 7, player)
			w.Move(wolf, Vec{X: 1800, Y: 900}, 40)
		}
		if n == 8 {
			w.Place(player, Vec{X: 1100, Y: 1100})
		}
		w.Tick(v.now)
		v.c.Advance(v.now)
		switch n {
		case 5:
			if err := v.c.Move(Vec{X: 1200, Y: 1000}, 64); err != nil {
				t.Fatal(err)
			}
		case 7:
			v.c.SetRender(RenderOptions{Delay: 125 * time.Millisecond}) // the others drawn two frames back
			v.c.Render(v.now, nil)
			if err := v.c.Skill(9, wolf); err != nil {
				t.Fatal(err)
			}
		}
		if pkt := v.c.Packet(v.now); pkt != nil {
			v.up = append(v.up, bytes.Clone(pkt))
			if err := w.Deliver(player, pkt); err != nil {
				t.Fatal(err)
			}
		}
	}
	return v
}

// interestVectors picks the scene's packets the files hold.
func interestVectors(t *testing.T) []vector {
	v := playVectorWorld(t)
	if len(v.down) != 6 || len(v.up) != 3 {
		t.Fatalf("the scene sent %d world packets and %d uplinks, want 6 and 3: the wire or the scene changed", len(v.down), len(v.up))
	}

	return []vector{
		{"world-join", "8.1 world packet 0, frame 1 in full, to a player who just joined: the whole logic of entity 1 " +
			"(itself, a player at 1000,1000 with 100 life) and of entity 2 (an NPC at 1500,900 with 80 life), both stamped frame 1, " +
			"both with move number 3", v.down[0]},
		{"world-commands", "8.1 world packet 2, frame 4 in full: entity 2 uses skill 7 on entity 1, stamped frame 3; " +
			"entity 2's move number 4, stamped frame 3, going on from where it stands (1500,900): 300 along x at 40 a frame " +
			"(short offsets, the speed changed)", v.down[2]},
		{"uplink-display", "8.2 uplink: acknowledges world packet 2 and the two before (mask 11), no commands, " +
			"display requests for entities 1 and 2", v.up[0]},
		{"display", "8.3 display reply: entity 1 named \"you\", entity 2 named \"wolf\" with appearance 3", v.down[3]},
		{"uplink-move", "8.2 uplink: acknowledges world packet 2 and the two before, command 0: a move stamped frame 5 " +
			"from 1000,1000 to 1200,1000 at 64 a frame", v.up[1]},
		{"world-echo", "8.1 world packet 3, frame 6 in its low 8 bits, acknowledging command 0: entity 1's own move " +
			"number 4, stamped frame 5, going on from where it stands (1000,1000): 200 along x at 64", v.down[4]},
		{"uplink-skill", "8.2 uplink: acknowledges world packet 3 and the three before, command 1: skill 9 on entity 2 " +
			"stamped frame 7, the others drawn two frames back (view 8 quarter frames)", v.up[2]},
		{"world-correction", "8.1 world packet 4, frame 8 in its low 8 bits, acknowledging command 1: entity 1's skill 9 on " +
			"entity 2 stamped frame 7; entity 1's move number 5, placed at 1100,1100 standing (with its source), stamped frame 7; " +
			"the correction: entity 1 at " +
			"1100,1100 standing, voiding from command 2", v.down[5]},
	}
}

// TestVectors: the hex test vectors in testdata/vectors (SPEC.md section 8
// points to them) are what the world and the client write, and decode to
// what they say. Another implementation can check itself against the
// files byte for byte. Run with -update-vectors after a deliberate wire
// change.
func TestVectors(t *testing.T) {
	dir := filepath.Join("testdata", "vectors")
	vs := map[string][]byte{}
	for _, v := range interestVectors(t) {
		vs[v.name] = v.msg
		if err := vectorfile.Check(dir, v.name, v.about, v.msg, *updateVectors); err != nil {
			t.Fatal(err)
		}
	}

	// They decode to what they say.
	c, _ := NewClient(Config{Width: 8, Height: 8}, 1)
	type msg struct {
		tag, id, frame int
		lg             Logic
		skill          uint16
		target         ID
		ep             uint8 // a move's or logic's number
		cont           bool  // a move that goes on from the previous path
		off            Vec   // a move's destination from its source
	}
	down := func(name string) (downHeader, []msg) {
		var hdr downHeader
		var got []msg
		err := decodeDown(&c.lay, vs[name], 5, &hdr, new(downMsg), func(m *downMsg) {
			id := int(m.id)
			if m.tag == tagCorrection {
				id = 0 // a correction is of the receiver's own entity, and names none
			}
			g := msg{m.tag, id, m.frame, m.lg, m.ev.Skill, m.ev.Target, 0, false, Vec{}}
			if m.tag == tagMove || m.tag == tagLogic {
				g.ep = m.ep
			}
			if m.tag == tagMove {
				g.cont, g.off = m.cont, m.off
			}
			got = append(got, g)
		})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return hdr, got
	}
	hdr, got := down("world-join")
	want := []msg{{tag: tagLogic, id: 1, frame: 1, lg: Logic{Pos: Vec{1000, 1000}, Dest: Vec{1000, 1000}, Life: 100}, ep: 3},
		{tag: tagLogic, id: 2, frame: 1, lg: Logic{Pos: Vec{1500, 900}, Dest: Vec{1500, 900}, Life: 80}, ep: 3}}
	if hdr.seq != 0 || !hdr.full || hdr.frame != 1 || !slices.Equal(got, want) {
		t.Fatalf("world-join: %+v %+v", hdr, got)
	}
	hdr, got = down("world-commands")
	want = []msg{{tag: tagSkill, id: 2, frame: 3, skill: 7, target: 1},
		{tag: tagMove, id: 2, frame: 3, lg: Logic{Speed: 40}, ep: 4, cont: true, off: Vec{300, 0}}}
	if hdr.seq != 2 || !hdr.full || hdr.frame != 4 || !slices.Equal(got, want) {
		t.Fatalf("world-commands: %+v %+v", hdr, got)
	}
	hdr, got = down("world-echo")
	want = []msg{{tag: tagMove, id: 1, frame: 5, lg: Logic{Speed: 64}, ep: 4, cont: true, off: Vec{200, 0}}}
	if hdr.seq != 3 || hdr.full || hdr.frame != 6 || !hdr.hasAck || hdr.cmdAck != 0 || !slices.Equal(got, want) {
		t.Fatalf("world-echo: %+v %+v", hdr, got)
	}
	var u uplink
	if err := u.decode(&c.lay, vs["uplink-display"], 4); err != nil || !u.hasAck || u.ackSeq != 2 || u.ackMask != 3 ||
		len(u.cmds) != 0 || !slices.Equal(u.display, []uint32{1, 2}) || len(u.discover) != 0 {
		t.Fatalf("uplink-display: %+v %v", u, err)
	}
	if err := u.decode(&c.lay, vs["uplink-move"], 5); err != nil || len(u.cmds) != 1 || u.firstSeq != 0 {
		t.Fatalf("uplink-move: %+v %v", u, err)
	}
	if m := u.cmds[0]; m.tag != cmdMove || m.frame != 5 || m.src != (Vec{1000, 1000}) || m.dest != (Vec{1200, 1000}) || m.speed != 64 {
		t.Fatalf("uplink-move's command: %+v", m)
	}
	if err := u.decode(&c.lay, vs["uplink-skill"], 7); err != nil || len(u.cmds) != 1 || u.firstSeq != 1 {
		t.Fatalf("uplink-skill: %+v %v", u, err)
	}
	if m := u.cmds[0]; m.tag != cmdSkill || m.frame != 7 || m.skill != 9 || m.target != 2 || m.view != 8 {
		t.Fatalf("uplink-skill's command: %+v", m)
	}
	var corr downMsg
	hdr, got = down("world-correction")
	_ = decodeDown(&c.lay, vs["world-correction"], 8, &hdr, &corr, func(m *downMsg) {})
	want = []msg{{tag: tagSkill, id: 1, frame: 7, skill: 9, target: 2},
		{tag: tagMove, id: 1, frame: 7, lg: Logic{Pos: Vec{1100, 1100}, Dest: Vec{1100, 1100}}, ep: 5},
		{tag: tagCorrection, frame: 8, lg: Logic{Pos: Vec{1100, 1100}, Dest: Vec{1100, 1100}}}}
	if hdr.seq != 4 || hdr.frame != 8 || hdr.cmdAck != 1 || !slices.Equal(got, want) || corr.void != 2 {
		t.Fatalf("world-correction: %+v %+v void %d", hdr, got, corr.void)
	}
	// A fresh client told of the two entities takes their display data.
	now := time.Unix(0, 0)
	for _, name := range []string{"world-join", "display"} {
		if err := c.Deliver(now, vs[name]); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if d, ok := c.Display(2); !ok || d.Name != "wolf" || d.Appearance != 3 {
		t.Fatalf("display: entity 2's %+v (%v)", d, ok)
	}
	if d, ok := c.Display(1); !ok || d.Name != "you" {
		t.Fatalf("display: entity 1's %+v (%v)", d, ok)
	}
}

package view

import (
	"math"
	"testing"
	"time"

	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

var epoch = time.Unix(1_700_000_000, 0)

func TestCamera(t *testing.T) {
	c := camera{cx: 5000, cy: 7000, scale: 0.25, w: 960, h: 720}
	for _, p := range [][2]float64{{5000, 7000}, {0, 0}, {12345, 678}} {
		sx, sy := c.toScreen(p[0], p[1])
		x, y := c.toWorld(sx, sy)
		if math.Abs(x-p[0]) > 1e-6 || math.Abs(y-p[1]) > 1e-6 {
			t.Errorf("%v -> (%v, %v) -> (%v, %v)", p, sx, sy, x, y)
		}
	}
	if sx, sy := c.toScreen(5000, 7000); sx != 480 || sy != 360 {
		t.Errorf("centre on screen at (%v, %v)", sx, sy)
	}
	x0, y0, x1, y1 := c.visible()
	if x1-x0 != 960/0.25 || y1-y0 != 720/0.25 {
		t.Errorf("visible %v,%v..%v,%v", x0, y0, x1, y1)
	}
	c.zoom(100)
	if c.scale != maxScale {
		t.Errorf("zoomed in to %v", c.scale)
	}
	c.zoom(1e-9)
	if c.scale != minScale {
		t.Errorf("zoomed out to %v", c.scale)
	}
	c.follow(5100, 7000, 1024)
	if c.cx != 5025 {
		t.Errorf("follow: %v", c.cx)
	}
	c.follow(50000, 7000, 1024)
	if c.cx != 50000 {
		t.Errorf("follow far: %v", c.cx)
	}
}

func TestReach(t *testing.T) {
	cfg := interest.Config{Width: 8, Height: 8}.WithDefaults()
	from := interest.Vec{X: 100, Y: 100}
	for _, tc := range []struct {
		x, y float64
		want interest.Vec
	}{
		{500, 600, interest.Vec{X: 500, Y: 600}},
		{-50, 100, interest.Vec{X: 0, Y: 100}},
		{100 + 10000, 100, interest.Vec{X: 100 + int32(cfg.MaxMove), Y: 100}},
		{1e9, 1e9, interest.Vec{X: 100 + int32(math.Round(float64(cfg.MaxMove)/math.Sqrt2)), Y: 100 + int32(math.Round(float64(cfg.MaxMove)/math.Sqrt2))}},
	} {
		if got := reach(&cfg, from, tc.x, tc.y); got != tc.want {
			t.Errorf("reach(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
	edge := interest.Vec{X: 8*1024 - 10, Y: 500}
	if got := reach(&cfg, edge, 9000, 500); got != (interest.Vec{X: 8*1024 - 1, Y: 500}) {
		t.Errorf("off the map's edge: %v", got)
	}
}

func TestSteering(t *testing.T) {
	cfg := interest.Config{Width: 8, Height: 8}.WithDefaults()
	var s steering
	me := interest.Logic{Pos: interest.Vec{X: 4000, Y: 4000}}
	if _, _, send := s.update(&cfg, me, 0, 0, 40); send {
		t.Fatal("no keys, a move")
	}
	dest, sp, send := s.update(&cfg, me, 1, 0, 40)
	if !send || sp != 40 || dest != (interest.Vec{X: 4000 + 2048, Y: 4000}) {
		t.Fatalf("right: %v %v %v", dest, sp, send)
	}
	me.Dest, me.Speed = dest, sp
	if _, _, send := s.update(&cfg, me, 1, 0, 40); send {
		t.Fatal("held key resent the same move")
	}
	me.Pos.X += 1500 // near the point ahead: re-aim
	if dest, _, send := s.update(&cfg, me, 1, 0, 40); !send || dest.X != me.Pos.X+2048 {
		t.Fatalf("re-aim: %v %v", dest, send)
	}
	me.Dest = interest.Vec{X: me.Pos.X + 2048, Y: 4000}
	dest, _, send = s.update(&cfg, me, 1, 1, 40) // diagonal
	if !send || dest.X-me.Pos.X != dest.Y-me.Pos.Y || dest.X-me.Pos.X != int32(math.Round(2048/math.Sqrt2)) {
		t.Fatalf("diagonal: %v from %v", dest, me.Pos)
	}
	me.Dest = dest
	if _, sp, send := s.update(&cfg, me, 1, 1, 64); !send || sp != 64 {
		t.Fatal("sprint did not resend")
	}
	dest, sp, send = s.update(&cfg, me, 0, 0, 64)
	if !send || sp != 0 || dest != me.Pos {
		t.Fatalf("let go: %v %v %v", dest, sp, send)
	}
	if _, _, send := s.update(&cfg, me, 0, 0, 64); send {
		t.Fatal("stopped twice")
	}
}

func TestMeter(t *testing.T) {
	m := meter{window: 2 * time.Second}
	if m.rate() != 0 {
		t.Fatal("rate before samples")
	}
	for i := range 100 { // 100 bytes every 100 ms: 1000 B/s
		m.add(epoch.Add(time.Duration(i)*100*time.Millisecond), int64(i*100))
	}
	if r := m.rate(); math.Abs(r-1000) > 1e-9 {
		t.Errorf("rate %v", r)
	}
	if len(m.samples) > 22 {
		t.Errorf("kept %d samples for a 2 s window", len(m.samples))
	}
	m.add(epoch.Add(20*time.Second), 9900) // idle since
	if r := m.rate(); r != 0 {
		t.Errorf("rate after idling %v", r)
	}
}

// TestLocal plays the offline session as the view does, 60 ticks a
// second: the player's client syncs, learns the city around it with names,
// moves, and agrees with the world.
func TestLocal(t *testing.T) {
	l, err := NewLocal(world.Config{Interest: interest.Config{Width: 16, Height: 16}, Start: epoch, NPCs: 600, Bots: 6, Seed: 2}, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewLocal(world.Config{Sender: localSender{}}, "x"); err == nil {
		t.Fatal("a Sender was accepted")
	}
	cfg := l.Config()
	c := l.Client()
	now := epoch
	tick := func(d time.Duration) {
		for end := now.Add(d); now.Before(end); now = now.Add(time.Second / 60) {
			if err := l.Update(now); err != nil {
				t.Fatal(err)
			}
		}
	}
	tick(5 * time.Second)
	me, ok := c.Self()
	if !ok {
		t.Fatal("client never synced")
	}
	if !cfg.City(regionOf(&cfg, me.Pos)) {
		t.Errorf("player at %v, outside the cities", me.Pos)
	}
	n := count(c, &cfg)
	if n.known == 0 || n.inRange == 0 {
		t.Fatalf("census %+v", n)
	}
	named := 0
	c.Each(func(_ interest.ID, v interest.View) {
		if v.HasDisplay && v.Display.Name != "" {
			named++
		}
	})
	if named < n.known/2 {
		t.Errorf("%d of %d entities named", named, n.known)
	}
	var s steering
	dest, sp, _ := s.update(&cfg, me, 1, 0, runSpeed(&cfg))
	if err := c.Move(dest, sp); err != nil {
		t.Fatal(err)
	}
	tick(2 * time.Second)
	after, _ := c.Self()
	if after.Pos.X <= me.Pos.X+int32(cfg.RegionSize/2) {
		t.Errorf("player did not move right: %v -> %v", me.Pos, after.Pos)
	}
	// Let go of the keys, and give the world its forced-sync delay to
	// tell the client about the regions it walked into (seed 5.2.2).
	dest, sp, _ = s.update(&cfg, after, 0, 0, 0)
	if err := c.Move(dest, sp); err != nil {
		t.Fatal(err)
	}
	tick(cfg.ForcedSync + time.Second)
	after, _ = c.Self()
	lg, _ := l.w.Logic(l.id)
	if after.Pos != lg.Pos || lg.Moving() {
		t.Errorf("client has the player at %v, the world at %v", after, lg)
	}
	if cs := c.Stats(); cs.Corrections != 0 || cs.Malformed != 0 || cs.BytesIn == 0 || cs.BytesOut == 0 {
		t.Errorf("client stats %+v", cs)
	}
	// Everything the world holds in the player's range, the client knows.
	missing := 0
	l.w.Each(l.w.RegionOf(lg.Pos), func(id interest.ID, _ interest.Kind, _ *interest.Logic) {
		if _, ok := c.Entity(id); !ok && id != l.id {
			missing++
		}
	})
	if missing > 0 {
		t.Errorf("client misses %d entities in range", missing)
	}
	if st := l.Stats(); st.Status != "offline" {
		t.Errorf("stats %+v", st)
	}
}

func TestColours(t *testing.T) {
	npc := interest.View{Kind: interest.NPC}
	if entityColour(&npc) != colUnknown {
		t.Error("an entity with no display data is not grey")
	}
	npc.HasDisplay, npc.Display.Appearance = true, world.LookWolf
	wolf := entityColour(&npc)
	npc.Display.Appearance = world.LookGuard
	if entityColour(&npc) == wolf || wolf == colUnknown {
		t.Error("wolves and guards look alike")
	}
	p := interest.View{Kind: interest.Player, HasDisplay: true, Display: interest.Display{Camp: world.CampHaoqi, Appearance: world.LookPlayer}}
	q := p
	q.Display.Camp = world.CampEren
	b := p
	b.Display.Appearance = world.LookBot
	if entityColour(&p) == entityColour(&q) || entityColour(&p) == entityColour(&b) {
		t.Error("camps or bots not told apart")
	}
	if f := fade(colSelf, 0.5); f.A != 127 || f.R != 127 {
		t.Errorf("fade %v", f)
	}
}

// TestLabels: names never overlap each other or a HUD panel; the first
// asked wins a contested place.
func TestLabels(t *testing.T) {
	var l labels
	hud := textBox("frame 1\nentities 3\n", 8, 8, 4)
	if hud != (box{4, 4, 12 + 10*glyphW, 8 + 2*glyphH + 4}) {
		t.Fatalf("panel box %+v", hud)
	}
	l.reset(hud)
	name := func(s string, x, y int) box { return textBox(s, x-len(s)*glyphW/2, y, 1) }
	for _, c := range []struct {
		b    box
		want bool
	}{
		{name("li bai", 30, 20), false},          // under the panel
		{name("li bai", 300, 200), true},         // clear
		{name("du fu", 305, 205), false},         // on top of li bai
		{name("du fu", 300, 200+glyphH+2), true}, // the line below
		{name("wang wei", 100, 200), true},
	} {
		if got := l.place(c.b); got != c.want {
			t.Errorf("place %+v: %v, want %v", c.b, got, c.want)
		}
	}
	if l.placed() != 3 {
		t.Errorf("%d placed, want 3", l.placed())
	}
	for i, a := range l.taken {
		for _, b := range l.taken[i+1:] {
			if a.overlaps(b) {
				t.Errorf("%+v and %+v overlap", a, b)
			}
		}
	}
	l.reset()
	if l.placed() != 0 || !l.place(name("li bai", 30, 20)) {
		t.Error("a fresh frame with no HUD refused a name")
	}
}

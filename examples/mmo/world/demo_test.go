package world

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
)

var epoch = time.Unix(1_700_000_000, 0)

// run plays the demo for dur, frame by frame, as the engine's world loop
// does: Demo.Tick, then World.Tick, with the same time. each, if set, is
// called after every frame.
func run(d *Demo, dur time.Duration, each func(now time.Time)) {
	w := d.World()
	end := w.NextFrame().Add(dur)
	for now := w.NextFrame(); now.Before(end); now = w.NextFrame() {
		d.Tick(now)
		w.Tick(now)
		if each != nil {
			each(now)
		}
	}
}

func small(seed uint64, npcs, bots int) Config {
	return Config{Interest: interest.Config{Width: 16, Height: 16}, Start: epoch, NPCs: npcs, Bots: bots, Seed: seed}
}

func newDemo(t testing.TB, cfg Config) *Demo {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// snapshot describes every NPC and bot as the world holds it.
func snapshot(d *Demo) string {
	var b strings.Builder
	for _, n := range d.npcs {
		lg, _ := d.w.Logic(n.id)
		fmt.Fprintf(&b, "%d %d %v %+v\n", n.id, n.kind, n.home, lg)
	}
	for _, bt := range d.bots {
		lg, _ := d.w.Logic(bt.id)
		fmt.Fprintf(&b, "bot %d %+v\n", bt.id, lg)
	}
	return b.String()
}

func TestPopulationDeterministic(t *testing.T) {
	a := newDemo(t, small(7, 400, 4))
	b := newDemo(t, small(7, 400, 4))
	c := newDemo(t, small(8, 400, 4))
	if snapshot(a) != snapshot(b) {
		t.Fatal("two demos with the same seed differ at spawn")
	}
	if snapshot(a) == snapshot(c) {
		t.Fatal("two demos with different seeds are equal at spawn")
	}
	for _, d := range []*Demo{a, b, c} {
		run(d, 20*time.Second, nil)
	}
	if sa, sb := snapshot(a), snapshot(b); sa != sb {
		t.Fatalf("same seed, same ticks, different worlds after 20 s:\n%.600s\nvs\n%.600s", sa, sb)
	}
	if snapshot(a) == snapshot(c) {
		t.Fatal("different seeds gave the same world after 20 s")
	}
	if s := a.Stats(); s.NPCs != 400 || s.Bots != 4 || a.World().Stats().Entities != 404 {
		t.Fatalf("stats %+v, world entities %d", s, a.World().Stats().Entities)
	}
}

func TestDefaults(t *testing.T) {
	d := newDemo(t, Config{Start: epoch, Seed: 1})
	cfg := d.World().Config()
	if cfg.Width != interest.DefaultWidth || cfg.Height != interest.DefaultHeight {
		t.Fatalf("map %dx%d", cfg.Width, cfg.Height)
	}
	if s := d.Stats(); s.NPCs != DefaultNPCs || s.Bots != DefaultBots {
		t.Fatalf("population %+v", s)
	}
	cityNPCs := 0
	for _, n := range d.npcs {
		if npcKinds[n.kind].city {
			cityNPCs++
			if !d.isCity(n.home) {
				t.Fatalf("city NPC %d lives at %v, outside the cities", n.id, n.home)
			}
		}
	}
	if cityNPCs == 0 || cityNPCs > DefaultNPCs/4 {
		t.Fatalf("%d city NPCs of %d", cityNPCs, DefaultNPCs)
	}
	none := newDemo(t, Config{Start: epoch, NPCs: -1, Bots: -1})
	if s := none.World().Stats(); s.Entities != 0 {
		t.Fatalf("negative counts spawned %d entities", s.Entities)
	}
}

// TestNPCsKeepMoving plays five minutes: every NPC walks in every minute,
// and never leaves the area around its home.
func TestNPCsKeepMoving(t *testing.T) {
	d := newDemo(t, small(3, 600, -1))
	last := make([]interest.Vec, len(d.npcs))
	moved := make([]bool, len(d.npcs))
	for i, n := range d.npcs {
		last[i] = n.home
	}
	second, minute := 0, 0
	minMoving := len(d.npcs)
	run(d, 5*time.Minute, func(now time.Time) {
		if d.w.Frame()%d.wc.Hz != 0 {
			return
		}
		second++
		moving := 0
		for i, n := range d.npcs {
			lg, ok := d.w.Logic(n.id)
			if !ok {
				t.Fatalf("NPC %d gone", n.id)
			}
			if lg.Pos.X < n.lo.X || lg.Pos.Y < n.lo.Y || lg.Pos.X > n.hi.X || lg.Pos.Y > n.hi.Y {
				t.Fatalf("NPC %d at %v, outside its area %v..%v", n.id, lg.Pos, n.lo, n.hi)
			}
			if lg.Pos != last[i] {
				moved[i] = true
			}
			if lg.Moving() {
				moving++
			}
			last[i] = lg.Pos
		}
		if second > 5 {
			minMoving = min(minMoving, moving)
		}
		if second%60 == 0 {
			minute++
			for i := range moved {
				if !moved[i] {
					t.Fatalf("minute %d: NPC %d (%s) did not move", minute, d.npcs[i].id, npcKinds[d.npcs[i].kind].name)
				}
				moved[i] = false
			}
		}
	})
	if minute != 5 {
		t.Fatalf("ran %d minutes", minute)
	}
	if minMoving < len(d.npcs)/5 {
		t.Fatalf("as few as %d of %d NPCs moving at once", minMoving, len(d.npcs))
	}
	t.Logf("at least %d of %d NPCs moving at any second; %d walks", minMoving, len(d.npcs), d.Stats().Walks)
}

// TestBots plays two minutes with bots: each syncs its client, walks,
// fights; the world accepts every move and never corrects a bot.
func TestBots(t *testing.T) {
	d := newDemo(t, small(5, 800, 8))
	start := map[interest.ID]interest.Vec{}
	for _, b := range d.bots {
		lg, _ := d.w.Logic(b.id)
		start[b.id] = lg.Pos
	}
	run(d, 2*time.Minute, nil)
	for _, b := range d.bots {
		me, ok := b.c.Self()
		if !ok {
			t.Fatalf("bot %d never synced", b.id)
		}
		lg, _ := d.w.Logic(b.id)
		if lg.Pos == start[b.id] {
			t.Errorf("bot %d never moved", b.id)
		}
		if d := me.Pos.DistSq(lg.Pos); d > 64*64 {
			t.Errorf("bot %d: client at %v, world at %v", b.id, me.Pos, lg.Pos)
		}
		if b.c.Len() == 0 {
			t.Errorf("bot %d knows nothing around it", b.id)
		}
		if cs := b.c.Stats(); cs.Corrections != 0 || cs.Malformed != 0 {
			t.Errorf("bot %d client stats %+v", b.id, cs)
		}
	}
	s, ws := d.Stats(), d.World().Stats()
	if s.BotMoves == 0 || s.BotSkills == 0 || s.Walks == 0 || s.Kills == 0 {
		t.Errorf("demo stats %+v", s)
	}
	if ws.Corrections != 0 {
		t.Errorf("%d corrections; world drops %v", ws.Corrections, ws.Dropped)
	}
	// A request about an entity that has just left the bot's range, or a
	// strike at one (refused as an unknown target, so that a client cannot
	// tell the two apart), is a race a moving world has; nothing else may
	// be refused. A refused packet may carry several such requests.
	far, gone := ws.Dropped[interest.DropOutOfRange], ws.Dropped[interest.DropUnknown]
	if far+gone < s.BotRefused || far > ws.Discoveries || gone > s.BotSkills {
		t.Errorf("%d requests out of range, %d strikes at targets gone, %d bot packets refused, %d discoveries, %d strikes",
			far, gone, s.BotRefused, ws.Discoveries, s.BotSkills)
	}
	for r, n := range ws.Dropped {
		if n != 0 && r != interest.DropOutOfRange && r != interest.DropUnknown {
			t.Errorf("world dropped %d packets as %s", n, interest.DropName(r))
		}
	}
	t.Logf("demo %+v; world commands %d, packets %d, bytes %d", s, ws.Commands, ws.PacketsOut, ws.BytesOut)
}

// TestHit strikes an NPC until it dies: it loses life and is in combat,
// then respawns at home, standing, whole; once calm it leaves combat.
func TestHit(t *testing.T) {
	d := newDemo(t, small(2, 20, -1))
	run(d, 10*time.Second, nil)
	n := d.npcs[3]
	if d.hit(n.id, 30, d.w.Frame()) {
		t.Fatal("died of one strike")
	}
	lg, _ := d.w.Logic(n.id)
	if lg.Life != 70 || !lg.Combat {
		t.Fatalf("after a strike: %+v", lg)
	}
	if d.hit(12345, 30, d.w.Frame()) {
		t.Fatal("an unknown NPC died")
	}
	strikes := 1
	for !d.hit(n.id, 30, d.w.Frame()) {
		strikes++
	}
	lg, _ = d.w.Logic(n.id)
	if strikes != 3 || lg.Pos != n.home || lg.Moving() || lg.Life != 100 || lg.Combat || d.Stats().Kills != 1 {
		t.Fatalf("after %d more strikes: %+v (home %v), stats %+v", strikes, lg, n.home, d.Stats())
	}
	d.hit(n.id, 10, d.w.Frame())
	run(d, 2*calm, nil)
	if lg, _ = d.w.Logic(n.id); lg.Combat || lg.Life != 100 {
		t.Fatalf("not calm after %v: %+v", 2*calm, lg)
	}
}

// recorder is a Sender for human players that keeps what it is sent.
type recorder struct {
	unreliable, reliable map[interest.ID]int
}

func (r *recorder) SendUnreliable(id interest.ID, _ []byte) error { r.unreliable[id]++; return nil }
func (r *recorder) SendReliable(id interest.ID, _ []byte) error   { r.reliable[id]++; return nil }

func TestSpawnPlayer(t *testing.T) {
	rec := &recorder{map[interest.ID]int{}, map[interest.ID]int{}}
	cfg := small(9, 200, 2)
	cfg.Sender = rec
	d := newDemo(t, cfg)
	p, err := d.SpawnPlayer("li bai")
	if err != nil {
		t.Fatal(err)
	}
	q, err := d.SpawnPlayer("")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []interest.ID{p, q} {
		lg, _ := d.w.Logic(id)
		if !d.isCity(lg.Pos) {
			t.Errorf("player %d spawned at %v, outside the cities", id, lg.Pos)
		}
		if k, _ := d.w.Kind(id); k != interest.Player {
			t.Errorf("player %d is a %v", id, k)
		}
	}
	if _, err := d.SpawnPlayer(strings.Repeat("x", interest.MaxName+1)); !errors.Is(err, interest.ErrConfig) {
		t.Errorf("overlong name: %v", err)
	}
	run(d, 2*time.Second, nil)
	if rec.unreliable[p] == 0 || rec.unreliable[q] == 0 {
		t.Errorf("human players got no packets: %v", rec.unreliable)
	}
	for _, b := range d.bots {
		if rec.unreliable[b.id] != 0 {
			t.Errorf("bot %d's packets went to the human sender", b.id)
		}
	}
	if err := d.Despawn(d.npcs[0].id); !errors.Is(err, ErrNotPlayer) {
		t.Errorf("despawn NPC: %v", err)
	}
	if err := d.Despawn(d.bots[0].id); !errors.Is(err, ErrNotPlayer) {
		t.Errorf("despawn bot: %v", err)
	}
	if err := d.Despawn(p); err != nil {
		t.Fatal(err)
	}
	if err := d.Despawn(p); !errors.Is(err, ErrNotPlayer) {
		t.Errorf("second despawn: %v", err)
	}
	if _, ok := d.w.Logic(p); ok {
		t.Error("despawned player still in the world")
	}
	if s := d.Stats(); s.Players != 1 {
		t.Errorf("%d players", s.Players)
	}
	before := rec.unreliable[p]
	run(d, time.Second, nil)
	if rec.unreliable[p] != before {
		t.Error("a despawned player is still sent packets")
	}
}

func TestNoSender(t *testing.T) {
	d := newDemo(t, small(1, 10, -1))
	if _, err := d.SpawnPlayer("p"); err != nil {
		t.Fatal(err)
	}
	run(d, time.Second, nil)
	if n := d.World().Stats().Dropped[interest.DropSendFailed]; n == 0 {
		t.Error("packets to a human with no Sender were not refused")
	}
	if err := d.SendUnreliable(99, nil); !errors.Is(err, ErrNoRoute) {
		t.Errorf("send with no route: %v", err)
	}
}

// fwd is a world Sender that routes what it does not serve to a Demo.
type fwd struct{ d *Demo }

func (f *fwd) SendUnreliable(id interest.ID, msg []byte) error { return f.d.SendUnreliable(id, msg) }
func (f *fwd) SendReliable(id interest.ID, msg []byte) error   { return f.d.SendReliable(id, msg) }

// TestGivenWorld populates a world the caller made, whose Sender routes
// the bots' packets to the Demo.
func TestGivenWorld(t *testing.T) {
	f := &fwd{}
	w, err := interest.NewWorld(InterestConfig(interest.Config{Width: 12, Height: 12}), epoch, f)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{World: w, Sender: f}); err == nil {
		t.Fatal("World and Sender together accepted")
	}
	f.d = newDemo(t, Config{World: w, NPCs: 100, Bots: 2, Seed: 4})
	if len(f.d.Cities()) != 5 {
		t.Fatalf("%d cities", len(f.d.Cities()))
	}
	run(f.d, 20*time.Second, nil)
	if s := f.d.Stats(); s.BotMoves == 0 {
		t.Fatalf("bots did not move in a given world: %+v", s)
	}
}

func TestCities(t *testing.T) {
	for _, tc := range []struct{ w, h, n int }{{64, 64, 5}, {12, 12, 5}, {200, 40, 5}, {8, 8, 1}, {1, 1, 1}, {0, 5, 0}} {
		cs := Cities(tc.w, tc.h)
		if len(cs) != tc.n {
			t.Errorf("%dx%d: %d cities", tc.w, tc.h, len(cs))
			continue
		}
		for i, c := range cs {
			if c.Min.X < 0 || c.Min.Y < 0 || c.Max.X >= tc.w || c.Max.Y >= tc.h || c.Min.X > c.Max.X || c.Min.Y > c.Max.Y {
				t.Errorf("%dx%d: city %s at %v..%v", tc.w, tc.h, c.Name, c.Min, c.Max)
			}
			for _, o := range cs[:i] {
				if o.Contains(c.Min) || o.Contains(c.Max) || c.Contains(o.Min) {
					t.Errorf("%dx%d: %s overlaps %s", tc.w, tc.h, c.Name, o.Name)
				}
			}
		}
	}
	cfg := InterestConfig(interest.Config{})
	n := 0
	for y := range cfg.Height {
		for x := range cfg.Width {
			if cfg.City(interest.Region{X: x, Y: y}) {
				n++
			}
		}
	}
	if n != 5*9 {
		t.Errorf("%d city regions on the default map", n)
	}
	lo, hi := Cities(64, 64)[0].Bounds(1024)
	if lo != (interest.Vec{X: 31 * 1024, Y: 31 * 1024}) || hi != (interest.Vec{X: 34*1024 - 1, Y: 34*1024 - 1}) {
		t.Errorf("Chang'an bounds %v..%v", lo, hi)
	}
}

func TestHelpers(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 4, 15, 16, 17, 1 << 40, 1<<40 - 1} {
		r := isqrt(n)
		if r*r > n || (r+1)*(r+1) <= n {
			t.Errorf("isqrt(%d) = %d", n, r)
		}
	}
	from := interest.Vec{X: 1000, Y: 1000}
	for _, dest := range []interest.Vec{{X: 1000, Y: 1000}, {X: 5000, Y: 1000}, {X: 9000, Y: 9000}, {X: 0, Y: 9000}} {
		got := limit(from, dest, 4096)
		if got.DistSq(from) > 4096*4096 {
			t.Errorf("limit(%v) = %v, over 4096 away", dest, got)
		}
		if dest.DistSq(from) <= 4096*4096 && got != dest {
			t.Errorf("limit(%v) = %v, moved a near destination", dest, got)
		}
	}
	if LookName(LookWolf) != "wolf" || LookName(999) != "unknown" || CampName(CampEren) != "Eren" || CampName(200) != "unknown" {
		t.Error("names")
	}
}

// BenchmarkDemoTick measures one frame of the default demo world (4,000
// NPCs, 16 bots with their clients, a 64 x 64 region map): Demo.Tick and
// World.Tick, after 30 s of play so NPCs are spread over their cycles.
// demo_ns/frame is the part spent in Demo.Tick.
func BenchmarkDemoTick(b *testing.B) {
	d := newDemo(b, Config{Start: epoch, Seed: 1})
	run(d, 30*time.Second, nil)
	w := d.World()
	ws0, s0 := w.Stats(), d.Stats()
	b.ReportAllocs()
	b.ResetTimer()
	frames := 0
	var inDemo time.Duration
	for b.Loop() {
		now := w.NextFrame()
		t0 := time.Now()
		d.Tick(now)
		inDemo += time.Since(t0)
		w.Tick(now)
		frames++
	}
	// The demo's own share (NPC timers, bots and their clients) beside
	// the whole frame's ns/op.
	b.ReportMetric(float64(inDemo.Nanoseconds())/float64(frames), "demo_ns/frame")
	ws, s := w.Stats(), d.Stats()
	b.ReportMetric(float64(s.Walks-s0.Walks)/float64(frames), "walks/frame")
	b.ReportMetric(float64(ws.BytesOut-ws0.BytesOut)/float64(frames), "bytes_out/frame")
	b.ReportMetric(float64(ws.Commands-ws0.Commands)/float64(frames), "commands/frame")
}

// clients is a Sender that hands each human player's packets to its own
// interest.Client, as the engine would over the network.
type clients struct {
	now time.Time
	c   map[interest.ID]*interest.Client
}

func (s *clients) SendUnreliable(id interest.ID, msg []byte) error {
	return s.c[id].Deliver(s.now, msg)
}
func (s *clients) SendReliable(id interest.ID, msg []byte) error { return s.SendUnreliable(id, msg) }

// TestHumanStrike: a human player's strike, sent by its client, is
// resolved like a bot's: the NPC loses life and is in combat, the striker
// too, and another player near it sees the NPC hurt.
func TestHumanStrike(t *testing.T) {
	s := &clients{c: map[interest.ID]*interest.Client{}}
	cfg := small(4, 600, 0)
	cfg.Sender = s
	d := newDemo(t, cfg)
	var ids []interest.ID
	for _, name := range []string{"li bai", "du fu"} {
		id, err := d.SpawnPlayer(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := interest.NewClient(d.World().Config(), id)
		if err != nil {
			t.Fatal(err)
		}
		s.c[id] = c
		ids = append(ids, id)
	}
	// The second player stands where the first does.
	me, _ := d.World().Logic(ids[0])
	if err := d.World().Place(ids[1], me.Pos); err != nil {
		t.Fatal(err)
	}
	step := func(now time.Time) {
		for _, id := range ids {
			c := s.c[id]
			c.Advance(now)
			if pkt := c.Packet(now); pkt != nil {
				if err := d.World().Deliver(id, pkt); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	w := d.World()
	play := func(dur time.Duration) {
		end := w.NextFrame().Add(dur)
		for now := w.NextFrame(); now.Before(end); now = w.NextFrame() {
			s.now = now // the packets World.Tick sends arrive now
			d.Tick(now)
			w.Tick(now)
			step(now)
		}
	}
	play(3 * time.Second)
	c := s.c[ids[0]]
	var target interest.ID
	best := int64(-1)
	c.Each(func(id interest.ID, v interest.View) {
		if dsq := me.Pos.DistSq(v.Logic.Pos); v.Kind == interest.NPC && d.World().InRange(ids[0], id) && (best < 0 || dsq < best) {
			target, best = id, dsq
		}
	})
	if target == 0 {
		t.Fatal("no NPC in the player's range")
	}
	before, _ := d.World().Logic(target)
	if err := c.Skill(SkillStrike, target); err != nil {
		t.Fatal(err)
	}
	play(2 * time.Second)
	after, _ := d.World().Logic(target)
	st := d.Stats()
	if st.HumanStrikes != 1 || (after.Life >= before.Life && st.Kills == 0) || !after.Combat {
		t.Fatalf("after a strike: NPC %+v (was %+v), stats %+v", after, before, st)
	}
	if lg, _ := d.World().Logic(ids[0]); !lg.Combat {
		t.Errorf("the striker is not in combat: %+v", lg)
	}
	if v, ok := s.c[ids[1]].Entity(target); !ok || v.Logic.Life != after.Life {
		t.Errorf("the other player sees the NPC as %+v (known %v), want life %d", v.Logic, ok, after.Life)
	}
}

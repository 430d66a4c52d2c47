//go:build !js

package interest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// TestPathLog: paths kept in frame order, a path of the same frame
// replacing the one there, a late one slotted in before newer news, set
// dropping what follows, the oldest dropped past pathSegs, and positions
// read back along them.
func TestPathLog(t *testing.T) {
	seg := func(f int, x int32) pathSeg { return pathSeg{f, Vec{x, 0}, Vec{x + 1000, 0}, 10, 0} }
	frames := func(l *pathLog) []int {
		var out []int
		for i := range l.n {
			out = append(out, l.nth(i).frame)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		ops  func(l *pathLog)
		want []int
	}{
		{"in order", func(l *pathLog) { l.add(seg(1, 0)); l.add(seg(5, 0)); l.add(seg(9, 0)) }, []int{1, 5, 9}},
		{"same frame replaces", func(l *pathLog) { l.add(seg(1, 0)); l.add(seg(5, 0)); l.add(seg(5, 7)) }, []int{1, 5}},
		{"late news slots in", func(l *pathLog) { l.add(seg(1, 0)); l.add(seg(9, 0)); l.add(seg(5, 0)) }, []int{1, 5, 9}},
		{"set drops what follows", func(l *pathLog) { l.add(seg(1, 0)); l.add(seg(5, 0)); l.add(seg(9, 0)); l.set(seg(4, 0)) }, []int{1, 4}},
		{"set before all", func(l *pathLog) { l.add(seg(5, 0)); l.set(seg(2, 0)) }, []int{2}},
		{"full drops the oldest", func(l *pathLog) {
			for f := range pathSegs + 3 {
				l.add(seg(f, 0))
			}
		}, func() (w []int) {
			for f := 3; f < pathSegs+3; f++ {
				w = append(w, f)
			}
			return w
		}()},
		{"full ignores older than all", func(l *pathLog) {
			for f := range pathSegs {
				l.add(seg(10+f, 0))
			}
			l.add(seg(1, 0))
		}, func() (w []int) {
			for f := range pathSegs {
				w = append(w, 10+f)
			}
			return w
		}()},
	} {
		var l pathLog
		tt.ops(&l)
		if got := frames(&l); !slices.Equal(got, tt.want) {
			t.Errorf("%s: frames %v, want %v", tt.name, got, tt.want)
		}
	}
	// Positions: a walk east from frame 0, a turn north at frame 10.
	var l pathLog
	l.add(pathSeg{0, Vec{0, 0}, Vec{1000, 0}, 10, 0})
	l.add(pathSeg{10, Vec{100, 0}, Vec{100, 1000}, 10, 0})
	for _, tt := range []struct {
		f    int
		want Vec
	}{{0, Vec{0, 0}}, {5, Vec{50, 0}}, {10, Vec{100, 0}}, {13, Vec{100, 30}}, {-3, Vec{0, 0}}} {
		if got := l.posAt(tt.f); got != tt.want {
			t.Errorf("posAt(%d) = %v, want %v", tt.f, got, tt.want)
		}
	}
}

// TestTrackDraw: a track draws between frames, back along the path before
// the first news (an entity found walking does not pop in standing), and
// slides to late news at no more than the blend rate instead of jumping,
// unless the news is as far off as a teleport.
func TestTrackDraw(t *testing.T) {
	const blend, teleport, dt = 100.0, 128.0, 1.0 / 60
	east := pathSeg{10, Vec{1000, 1000}, Vec{3000, 1000}, 16, 0}
	for _, tt := range []struct {
		name string
		r    float64
		want [2]float64
	}{
		{"at the frame heard", 10, [2]float64{1000, 1000}},
		{"between frames", 12.25, [2]float64{1036, 1000}},
		{"before the first news", 8, [2]float64{968, 1000}},
	} {
		var tr track
		tr.reset(east)
		x, y, h, mv := tr.draw(tt.r, 0, blend)
		if math.Abs(x-tt.want[0]) > 1e-9 || math.Abs(y-tt.want[1]) > 1e-9 || !mv || h != 0 {
			t.Errorf("%s: drawn (%g, %g) heading %g moving %v, want %v heading 0 moving", tt.name, x, y, h, mv, tt.want)
		}
	}

	// A turn heard late: at frame 20 the entity turned north at frame 16.
	var tr track
	tr.reset(east)
	r := 20.0
	px, py, _, _ := tr.draw(r, 0, blend)
	at16 := tr.at(16)
	tr.news(pathSeg{16, at16, Vec{at16.X, 3000}, 16, 20})
	tr.moved(r, teleport)
	gap := math.Hypot(tr.offX, tr.offY)
	if gap < 60 || gap > teleport {
		t.Fatalf("a turn 4 frames late: blend of %g units, want the 64-90 the paths part by", gap)
	}
	for i := range 120 {
		r += dt * 16
		x, y, _, _ := tr.draw(r, dt, blend)
		hx, hy, _, _ := tr.heardAt(r)
		// Each tick, the drawing moves as the entity does, give or take
		// the blend's share: never a jump.
		stepDrawn, stepHeard := math.Hypot(x-px, y-py), 16*16*dt
		if math.Abs(stepDrawn-stepHeard) > blend*dt+1e-6 && i > 0 {
			t.Fatalf("tick %d: drawn moved %g, the entity %g: a jump", i, stepDrawn, stepHeard)
		}
		px, py = x, y
		if i == 119 && math.Hypot(x-hx, y-hy) > 1e-6 {
			t.Errorf("after 2 s the drawing is %g off the heard position", math.Hypot(x-hx, y-hy))
		}
	}

	// A teleport: drawn there at once.
	tr.set(pathSeg{int(r), Vec{9000, 9000}, Vec{9000, 9000}, 0, 0})
	tr.moved(r, teleport)
	if x, y, _, mv := tr.draw(r, 0, blend); x != 9000 || y != 9000 || mv {
		t.Errorf("after a teleport drawn at (%g, %g) moving %v, want (9000, 9000) standing", x, y, mv)
	}
}

// TestRenderClock: under jittered arrivals the clock tracks the earliest
// arrivals, never runs backwards, and the learned delay covers the
// lateness of most news and grows and shrinks with the link's jitter.
func TestRenderClock(t *testing.T) {
	cfg := testConfig().WithDefaults()
	for _, tt := range []struct {
		name           string
		jitter         time.Duration
		minDelay, maxD float64 // frames
	}{
		{"clean", 0, 0, 0.6},
		{"30 ms of jitter", 30 * time.Millisecond, 0.5, 2.5},
		{"80 ms of jitter", 80 * time.Millisecond, 1.5, 4.8},
	} {
		var rd renderer
		rd.init(cfg)
		rng := rand.New(rand.NewPCG(1, 2))
		start := time.Unix(1000, 0)
		period := cfg.Period()
		type arrival struct {
			at time.Time
			f  int
		}
		var arr []arrival
		for f := range 16 * 60 {
			d := 20*time.Millisecond + time.Duration(rng.ExpFloat64()*float64(tt.jitter)/2)
			arr = append(arr, arrival{start.Add(time.Duration(f)*period + d), f})
		}
		sortArrivals := func(a []arrival) {
			for i := 1; i < len(a); i++ {
				for j := i; j > 0 && a[j].at.Before(a[j-1].at); j-- {
					a[j], a[j-1] = a[j-1], a[j]
				}
			}
		}
		sortArrivals(arr)
		last := math.Inf(-1)
		for _, a := range arr {
			rd.heard(a.at, a.f)
			rd.news(a.at, a.f)
			f := rd.clock.frame(a.at)
			if f < last-1e-9 {
				t.Fatalf("%s: clock went back from %g to %g", tt.name, last, f)
			}
			last = f
			// Within a frame and a bit of the sender's frame at the
			// fastest arrival.
			sent := float64(a.at.Sub(start)-20*time.Millisecond) / float64(period)
			if tt.jitter == 0 && math.Abs(f-sent) > 0.5 {
				t.Fatalf("%s: clock at %g, the world at %g", tt.name, f, sent)
			}
		}
		if d := rd.delayFrames(); d < tt.minDelay || d > tt.maxD {
			t.Errorf("%s: learned delay %.2f frames, want %.1f..%.1f", tt.name, d, tt.minDelay, tt.maxD)
		}
	}
}

// feelWorld is a world with two players over a jittery link, one walking
// with turns every 0.3-1.5 s, the other watching it through Render at
// 60 Hz.
type feelWorld struct {
	h        *harness
	walker   *tplayer
	watcher  *tplayer
	rng      *rand.Rand
	nextTurn time.Time
	drawn    []Drawn
	samples  []feelSample
}

type feelSample struct {
	r, prevR float64 // the frame drawn, and the one drawn the tick before
	x, y     float64
	dx, dy   float64 // drawn step since the last tick
	haveStep bool
}

func newFeelWorld(t *testing.T, link memnet.LinkConfig) *feelWorld {
	h := newHarness(t, harnessOptions{cfg: testConfig(), players: 2, link: link, seed: 3})
	// Both in the middle of the map, near each other.
	for i, p := range h.players {
		if err := h.w.Place(p.id, Vec{6000 + int32(i)*300, 6000}); err != nil {
			t.Fatal(err)
		}
		p.b = idle
	}
	return &feelWorld{h: h, walker: h.players[0], watcher: h.players[1], rng: rand.New(rand.NewPCG(4, 5))}
}

// run plays d at 60 render ticks a second, each tick's drawing of the
// walker by the watcher kept in samples.
func (fw *feelWorld) run(t *testing.T, d time.Duration, sample bool) {
	h := fw.h
	tick := time.Second / 60
	end := time.Now().Add(d)
	var px, py, pr float64
	have := false
	for time.Now().Before(end) {
		time.Sleep(tick)
		now := time.Now()
		for _, p := range h.players {
			for {
				m, ok := h.srv[p.id].TryReceive()
				if !ok {
					break
				}
				_ = h.w.Deliver(p.id, m.Data)
			}
		}
		if !now.Before(h.w.NextFrame()) {
			h.w.Tick(now)
		}
		for _, p := range h.players {
			p.receive(t, now)
		}
		if now.After(fw.nextTurn) {
			me, ok := fw.walker.c.Self()
			if ok {
				a := fw.rng.Float64() * 2 * math.Pi
				dest := Vec{me.Pos.X + int32(900*math.Cos(a)), me.Pos.Y + int32(900*math.Sin(a))}
				dest.X, dest.Y = max(3000, min(9000, dest.X)), max(3000, min(9000, dest.Y))
				_ = fw.walker.c.Move(dest, 24)
			}
			fw.nextTurn = now.Add(time.Duration(300+fw.rng.IntN(1200)) * time.Millisecond)
		}
		fw.drawn = fw.watcher.c.Render(now, fw.drawn[:0])
		for _, dr := range fw.drawn {
			if dr.ID != fw.walker.id {
				continue
			}
			s := feelSample{r: fw.watcher.c.RenderFrame(), x: dr.X, y: dr.Y}
			if have {
				s.dx, s.dy, s.prevR, s.haveStep = dr.X-px, dr.Y-py, pr, true
			}
			px, py, pr, have = dr.X, dr.Y, s.r, true
			if sample {
				fw.samples = append(fw.samples, s)
			}
		}
		for _, p := range h.players {
			if pkt := p.c.Packet(now); pkt != nil {
				_ = p.conn.SendUnreliable(pkt)
			}
		}
	}
}

// truth returns where the world holds the walker was at frame r, between
// frames.
func (fw *feelWorld) truth(r float64) (float64, float64) {
	f := math.Floor(r)
	a, _ := fw.h.w.PositionAt(fw.walker.id, f)
	b, _ := fw.h.w.PositionAt(fw.walker.id, f+1)
	k := r - f
	return float64(a.X) + k*float64(b.X-a.X), float64(a.Y) + k*float64(b.Y-a.Y)
}

// TestRenderFollowsTheWorld: over a clean link and over one with 40 ms of
// jitter and 2% loss, a watcher draws a walker that turns every 0.3-1.5 s
// where the world holds it was at the frame drawn, within a few units on
// average, and never jumps.
func TestRenderFollowsTheWorld(t *testing.T) {
	for _, tt := range []struct {
		name     string
		link     memnet.LinkConfig
		meanMax  float64
		jumpsMax int
	}{
		{"clean", memnet.LinkConfig{Latency: 30 * time.Millisecond}, 0.5, 0},
		{"jitter and loss", memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 40 * time.Millisecond, Loss: 0.02}, 4, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fw := newFeelWorld(t, tt.link)
				fw.run(t, 3*time.Second, false)
				var sum float64
				n, jumps := 0, 0
				// Sampled a second at a time, judged once the world's
				// history of those frames is final (the walker's moves
				// arrive a round trip after the frames they start at).
				for i := range 9 {
					fw.run(t, time.Second, i < 8)
					final := float64(fw.h.w.Frame() - fw.h.cfg.Hz/2)
					keep := fw.samples[:0]
					for _, s := range fw.samples {
						if s.r >= final {
							keep = append(keep, s)
							continue
						}
						tx, ty := fw.truth(s.r)
						sum += math.Hypot(s.x-tx, s.y-ty)
						n++
						if s.haveStep {
							px, py := fw.truth(s.prevR)
							if math.Hypot(s.dx, s.dy) > math.Hypot(tx-px, ty-py)+2 {
								t.Logf("jump at r %.3f (prev %.3f): drawn step %.2f, true %.2f; drawn (%.1f,%.1f) truth (%.1f,%.1f)", s.r, s.prevR, math.Hypot(s.dx, s.dy), math.Hypot(tx-px, ty-py), s.x, s.y, tx, ty)
								jumps++
							}
						}
					}
					fw.samples = keep
				}
				mean := sum / float64(n)
				t.Logf("%d draws: error %.2f units on average, %d jumps, delay %v", n, mean, jumps, fw.watcher.c.RenderDelay())
				if n < 400 || mean > tt.meanMax || jumps > tt.jumpsMax {
					t.Errorf("%d draws: error %.2f units on average (want ≤ %g), %d jumps (want ≤ %d)", n, mean, tt.meanMax, jumps, tt.jumpsMax)
				}
			})
		})
	}
}

// step runs the harness's world and clients for d with no players driven:
// the test drives them.
func (fw *feelWorld) step(t *testing.T, d time.Duration) {
	saved := fw.nextTurn
	fw.nextTurn = time.Now().Add(time.Hour) // the walker walks only as told
	fw.run(t, d, false)
	fw.nextTurn = saved
}

// TestReconcile: the player's input survives the world's corrections. A
// knock-back with no input pending is adopted as it is (the path the
// world gave); a teleport that the player's newer move crossed on the
// wire, and a move the world refused, are followed by that move replayed
// from where the world put the player; with replay off the world's record
// stands alone.
func TestReconcile(t *testing.T) {
	for _, tt := range []struct {
		name       string
		replay     bool
		act        func(fw *feelWorld, c *Client, id ID) error
		wantDest   func(place Vec) Vec
		wantReplay int64
	}{
		{"knock-back adopted", true, func(fw *feelWorld, c *Client, id ID) error {
			return fw.h.w.Move(id, Vec{6000, 8000}, 40)
		}, func(Vec) Vec { return Vec{6000, 8000} }, 0},
		{"teleport crossing a move", true, func(fw *feelWorld, c *Client, id ID) error {
			if err := c.Move(Vec{7000, 6000}, 24); err != nil {
				return err
			}
			return fw.h.w.Place(id, Vec{5000, 5000})
		}, func(Vec) Vec { return Vec{7000, 6000} }, 1},
		{"teleport crossing a move, no replay", false, func(fw *feelWorld, c *Client, id ID) error {
			if err := c.Move(Vec{7000, 6000}, 24); err != nil {
				return err
			}
			return fw.h.w.Place(id, Vec{5000, 5000})
		}, func(Vec) Vec { return Vec{5000, 5000} }, 0},
		{"knock-back held by a speed limit", true, func(fw *feelWorld, c *Client, id ID) error {
			if err := c.Move(Vec{7000, 6000}, 24); err != nil {
				return err
			}
			if err := fw.h.w.SetSpeedLimit(id, 1); err != nil { // a stun: the replay is refused, and not replayed again
				return err
			}
			return fw.h.w.Move(id, Vec{6000, 8000}, 40)
		}, func(Vec) Vec { return Vec{6000, 8000} }, 1},
		{"refused move", true, func(fw *feelWorld, c *Client, id ID) error {
			c.me.Pos.X += 200 // a client that strayed: its move's source is off the world's record
			return c.Move(Vec{6000, 4000}, 24)
		}, func(Vec) Vec { return Vec{6000, 4000} }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fw := newFeelWorld(t, memnet.LinkConfig{Latency: 30 * time.Millisecond})
				p := fw.walker
				p.c.SetReplay(tt.replay)
				fw.step(t, time.Second)
				if err := p.c.Move(Vec{6000, 7000}, 16); err != nil {
					t.Fatal(err)
				}
				fw.step(t, time.Second) // walking south, acknowledged
				if err := tt.act(fw, p.c, p.id); err != nil {
					t.Fatal(err)
				}
				fw.step(t, 600*time.Millisecond)
				lg, _ := fw.h.w.Logic(p.id)
				me, _ := p.c.Self()
				if want := tt.wantDest(Vec{}); lg.Dest != want {
					t.Errorf("the world walks the player to %v, want %v", lg.Dest, want)
				}
				if me.Dest != lg.Dest || me.Speed != lg.Speed || me.Pos.DistSq(lg.Pos) > 64*64 {
					t.Errorf("the client has the player at %v to %v at %d, the world at %v to %v at %d", me.Pos, me.Dest, me.Speed, lg.Pos, lg.Dest, lg.Speed)
				}
				if got := p.c.Stats().Replays; got != tt.wantReplay {
					t.Errorf("%d moves replayed, want %d", got, tt.wantReplay)
				}
				// The drawing ends where the client predicts.
				fw.step(t, time.Second)
				me, _ = p.c.Self()
				for _, d := range fw.watcherOf(p).Render(time.Now(), nil) {
					if d.ID == p.id && math.Hypot(d.X-float64(me.Pos.X), d.Y-float64(me.Pos.Y)) > 2*float64(me.Speed)+1 {
						t.Errorf("the player drawn at (%.0f, %.0f), predicted at %v", d.X, d.Y, me.Pos)
					}
				}
			})
		})
	}
}

// watcherOf returns the client of p itself, whose Render draws p's own
// entity.
func (fw *feelWorld) watcherOf(p *tplayer) *Client { return p.c }

// TestLagCompensation: an action reaches the game with the frame the
// player drew the others at, and the world's positions at that frame are
// the ones the player saw; a view claimed older than Config.MaxRewind is
// taken as that old, so that a cheater cannot act on the past.
func TestLagCompensation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fw := newFeelWorld(t, memnet.LinkConfig{Latency: 50 * time.Millisecond, Jitter: 10 * time.Millisecond})
		w := fw.h.w
		shooter := fw.watcher
		var got []Action
		var reach []float64
		w.OnAction(func(a Action) {
			got = append(got, a)
			d, ok := w.Reach(a, fw.walker.id)
			if !ok {
				t.Errorf("no reach for %+v", a)
			}
			reach = append(reach, d)
		})
		fw.run(t, 3*time.Second, false)
		type aim struct {
			view, dist float64
			present    float64 // the distance by the world's positions at arrival
		}
		var aims []aim
		for range 12 {
			fw.run(t, 250*time.Millisecond, false)
			var drawnAt Drawn
			for _, d := range fw.drawn {
				if d.ID == fw.walker.id {
					drawnAt = d
				}
			}
			me, _ := shooter.c.Self()
			if err := shooter.c.Skill(9, fw.walker.id); err != nil {
				t.Fatal(err)
			}
			aims = append(aims, aim{view: shooter.c.RenderFrame(), dist: math.Hypot(drawnAt.X-float64(me.Pos.X), drawnAt.Y-float64(me.Pos.Y))})
		}
		fw.run(t, time.Second, false)
		if len(got) != len(aims) {
			t.Fatalf("%d actions heard, %d sent", len(got), len(aims))
		}
		for i, a := range got {
			if math.Abs(a.View-aims[i].view) > 0.5/viewSteps+1e-9 || a.View >= float64(a.Frame) {
				t.Errorf("action %d: view %.3f (stamp %d), the client drew frame %.3f", i, a.View, a.Frame, aims[i].view)
			}
			if math.Abs(reach[i]-aims[i].dist) > 8 {
				t.Errorf("action %d: the world measures %.1f units, the player saw %.1f", i, reach[i], aims[i].dist)
			}
		}
		if s := w.Stats(); s.Rewinds != int64(len(aims)) || s.RewindLimited != 0 {
			t.Errorf("%d rewinds, %d limited; want %d and 0", s.Rewinds, s.RewindLimited, len(aims))
		}

		// A cheater claims it saw the walker 64 frames ago.
		got = got[:0]
		if err := shooter.c.queue(command{tag: cmdSkill, skill: 9, target: fw.walker.id, view: maxViewBack}); err != nil {
			t.Fatal(err)
		}
		fw.run(t, 500*time.Millisecond, false)
		if len(got) != 1 {
			t.Fatalf("%d actions heard, want the cheater's", len(got))
		}
		if oldest := float64(w.Frame() - w.rewindFrames - 8); got[0].View < oldest || got[0].View < float64(got[0].Frame)-float64(w.rewindFrames)-2 {
			t.Errorf("a view claimed 64 frames back taken as %.2f (stamp %d, bound %d frames)", got[0].View, got[0].Frame, w.rewindFrames)
		}
		if w.Stats().RewindLimited != 1 {
			t.Errorf("%d views limited, want 1", w.Stats().RewindLimited)
		}

		// A cheater stamps its skill 150 frames (9.4 s) in the past, with
		// no view of its own: the uplink takes the stamp (the move history
		// reaches that far), but the action is judged no further back than
		// MaxRewind, its own position included.
		got = got[:0]
		c := shooter.c
		now := c.frame
		stamp := now - 150
		c.frame = stamp
		err := c.queue(command{tag: cmdSkill, skill: 9, target: fw.walker.id})
		c.frame = now
		if err != nil {
			t.Fatal(err)
		}
		fw.run(t, 500*time.Millisecond, false)
		if len(got) != 1 {
			t.Fatalf("%d actions heard, want the one stamped in the past", len(got))
		}
		bound := float64(w.Frame() - w.rewindFrames - 8) // the world moved on a few frames since
		if got[0].View < bound || float64(got[0].Frame) < bound {
			t.Errorf("a skill stamped at frame %d, world at %d: view %.2f, frame %d, older than MaxRewind (%d frames)",
				stamp, w.Frame(), got[0].View, got[0].Frame, w.rewindFrames)
		}
		if w.Stats().RewindLimited != 2 {
			t.Errorf("%d views limited, want 2", w.Stats().RewindLimited)
		}

		// An honest skill seen a few frames back is not clamped, and not
		// counted as clamped.
		got = got[:0]
		if err := c.queue(command{tag: cmdSkill, skill: 9, target: fw.walker.id, view: 3 * viewSteps}); err != nil {
			t.Fatal(err)
		}
		fw.run(t, 500*time.Millisecond, false)
		if len(got) != 1 || got[0].View != float64(got[0].Frame)-3 {
			t.Errorf("an honest skill: %+v", got)
		}
		if w.Stats().RewindLimited != 2 {
			t.Errorf("%d views limited after an honest skill, want 2", w.Stats().RewindLimited)
		}
	})
}

// TestFeelAllocs: the history lag compensation reads costs no allocation
// a frame on the server, however many entities turn, nor does asking it;
// a render tick costs none on the client once its slice has room.
func TestFeelAllocs(t *testing.T) {
	start := time.Unix(0, 0)
	w, err := NewWorld(testConfig(), start, discard{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []ID
	for i := range 200 {
		id, err := w.Spawn(NPC, Logic{Pos: Vec{int32(1000 + 40*i), 5000}, Life: 100}, Display{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	now, f := start, 0
	frame := func() {
		f++
		for i, id := range ids {
			if (i+f)%3 == 0 {
				_ = w.Move(id, Vec{int32(1000 + 40*i), int32(5000 + 300*(f%2))}, 20)
			}
		}
		now = now.Add(w.Config().Period())
		w.Tick(now)
		_, _ = w.PositionAt(ids[f%len(ids)], float64(w.Frame())-2.5)
	}
	for range 64 { // the slices grow to their working size
		frame()
	}
	if n := testing.AllocsPerRun(50, frame); n != 0 {
		t.Errorf("%.1f allocations a frame with 200 NPCs turning", n)
	}

	synctest.Test(t, func(t *testing.T) {
		fw := newFeelWorld(t, memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 20 * time.Millisecond})
		fw.run(t, 3*time.Second, false)
		c, drawn := fw.watcher.c, make([]Drawn, 0, 8)
		at := time.Now()
		if n := testing.AllocsPerRun(100, func() {
			at = at.Add(time.Second / 60)
			drawn = c.Render(at, drawn[:0])
		}); n != 0 || len(drawn) != 2 {
			t.Errorf("a render tick drew %d entities with %.1f allocations, want 2 and 0", len(drawn), n)
		}
	})
}

//go:build js

package view

import (
	"errors"
	"math"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/inpututil"

	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

// View is the player's Ebiten game: it follows the player's character
// with the camera, draws what the client knows, and turns keys and clicks
// into the client's commands.
type View struct {
	net    Net
	cfg    interest.Config
	cities []world.City
	cam    camera
	steer  steering

	// drawn is where the client's Render puts each entity this tick,
	// the player's own included; rendered is Render's slice, reused.
	drawn      map[interest.ID]interest.Drawn
	rendered   []interest.Drawn
	now        time.Time
	effects    []effect
	err        error
	errAt      time.Time
	help       bool
	strikes    int           // strikes sent
	struck     interest.ID   // the last strike's target
	labels     labels        // this frame's name places
	named      []namedEntity // this frame's names, in the order they are placed
	panels     []hudPanel    // this frame's HUD
	panelBoxes []box         // where its panels are, for the names to keep clear of
	census     census
	ticks      int64
	draws      int64
	// netTime is how long the last Net.Update took (in the offline mode,
	// the whole world's frame); drawTime how long the last Draw took.
	netTime, drawTime time.Duration

	down, up, pktDown, pktUp, wireDown, wireUp meter
	touches                                    []ebiten.TouchID
	page                                       page
}

// effect is a short-lived mark: a jump, a strike, a click's destination.
type effect struct {
	kind     int
	id, to   interest.ID
	pos      interest.Vec
	at       time.Time
	lifetime time.Duration
}

const (
	fxJump = iota
	fxSkill
	fxMarker
)

// New returns the view of a session.
func New(net Net) *View {
	cfg := net.Config()
	v := &View{net: net, help: true, drawn: make(map[interest.ID]interest.Drawn)}
	v.cam = camera{scale: defaultScale, w: 960, h: 720}
	v.setConfig(cfg)
	for _, m := range []*meter{&v.down, &v.up, &v.pktDown, &v.pktUp, &v.wireDown, &v.wireUp} {
		m.window = 2 * time.Second
	}
	return v
}

// setConfig makes the view draw a world of configuration cfg: the demo's
// cities when it has them, and the camera on the map's centre until the
// player is known.
func (v *View) setConfig(cfg interest.Config) {
	v.cfg, v.cities = cfg, nil
	if cfg.City != nil {
		v.cities = world.Cities(cfg.Width, cfg.Height)
	}
	v.cam.cx, v.cam.cy = float64(cfg.Width*cfg.RegionSize)/2, float64(cfg.Height*cfg.RegionSize)/2
}

// Run opens the view (a canvas filling the page, in the browser) and
// plays until the page closes.
func Run(v *View, title string) error {
	ebiten.SetWindowTitle(title)
	ebiten.SetWindowSize(1024, 768)
	ebiten.SetWindowResizingMode(ebiten.WindowResizingModeEnabled)
	ebiten.SetRunnableOnUnfocused(true)
	return ebiten.RunGame(v)
}

// Layout makes the screen the size of the window (the page's canvas).
func (v *View) Layout(w, h int) (int, int) {
	v.cam.w, v.cam.h = w, h
	return w, h
}

// Update reads the player's input, runs the session and publishes the
// view's state to the page.
func (v *View) Update() error {
	now := time.Now()
	v.now = now
	v.ticks++
	c := v.net.Client()
	v.input(c, now)
	t0 := time.Now()
	if err := v.net.Update(now); err != nil {
		v.err, v.errAt = err, now
	}
	v.netTime = time.Since(t0)
	if cfg := v.net.Config(); cfg.Width != v.cfg.Width || cfg.Height != v.cfg.Height || cfg.RegionSize != v.cfg.RegionSize || cfg.Hz != v.cfg.Hz {
		v.setConfig(cfg) // the player moved to another map
	}
	c = v.net.Client() // a new one after a move
	// Where to draw everyone this tick: others a little behind the world,
	// smoothly; the player at once, where its client predicts it.
	v.rendered = c.Render(now, v.rendered[:0])
	clear(v.drawn)
	for _, d := range v.rendered {
		v.drawn[d.ID] = d
	}
	for _, ev := range c.Events() {
		switch ev.Tag {
		case interest.EventJump:
			v.effects = append(v.effects, effect{kind: fxJump, id: ev.ID, at: now, lifetime: 600 * time.Millisecond})
		case interest.EventSkill:
			if ev.Target == 0 {
				continue // no one to draw the strike to
			}
			v.effects = append(v.effects, effect{kind: fxSkill, id: ev.ID, to: ev.Target, at: now, lifetime: 400 * time.Millisecond})
		}
	}
	live := v.effects[:0]
	for _, e := range v.effects {
		if now.Sub(e.at) < e.lifetime {
			live = append(live, e)
		}
	}
	v.effects = live

	cs, ns := c.Stats(), v.net.Stats()
	v.down.add(now, cs.BytesIn)
	v.up.add(now, cs.BytesOut)
	v.pktDown.add(now, cs.PacketsIn)
	v.pktUp.add(now, cs.PacketsOut)
	v.wireDown.add(now, ns.BytesIn)
	v.wireUp.add(now, ns.BytesOut)
	v.census = count(c, &v.cfg)
	me, ok := c.Self()
	if d, drawn := v.drawn[c.ID()]; drawn {
		v.cam.follow(d.X, d.Y, v.cfg.RegionSize)
	}
	v.publish(c, &me, ok)
	return nil
}

// at returns where to draw entity id this tick (selfID: the player), as
// the client's Render placed it; false for one it does not draw yet.
func (v *View) at(c *interest.Client, id interest.ID) (float64, float64, bool) {
	if id == selfID {
		id = c.ID()
	}
	d, ok := v.drawn[id]
	return d.X, d.Y, ok
}

// input turns keys, clicks and touches into the client's commands.
func (v *View) input(c *interest.Client, now time.Time) {
	if inpututil.IsKeyJustPressed(ebiten.KeyH) {
		v.help = !v.help
	}
	if _, wy := ebiten.Wheel(); wy != 0 {
		v.cam.zoom(math.Pow(1.15, wy))
	}
	if ebiten.IsKeyPressed(ebiten.KeyEqual) || ebiten.IsKeyPressed(ebiten.KeyNumpadAdd) {
		v.cam.zoom(1.02)
	}
	if ebiten.IsKeyPressed(ebiten.KeyMinus) || ebiten.IsKeyPressed(ebiten.KeyNumpadSubtract) {
		v.cam.zoom(1 / 1.02)
	}
	me, ok := c.Self()
	if !ok {
		return // not in sync yet: nothing to command
	}
	speed := runSpeed(&v.cfg)
	if ebiten.IsKeyPressed(ebiten.KeyShift) {
		speed = sprintSpeed(&v.cfg)
	}
	dx, dy := 0, 0
	if ebiten.IsKeyPressed(ebiten.KeyA) || ebiten.IsKeyPressed(ebiten.KeyArrowLeft) {
		dx--
	}
	if ebiten.IsKeyPressed(ebiten.KeyD) || ebiten.IsKeyPressed(ebiten.KeyArrowRight) {
		dx++
	}
	if ebiten.IsKeyPressed(ebiten.KeyW) || ebiten.IsKeyPressed(ebiten.KeyArrowUp) {
		dy--
	}
	if ebiten.IsKeyPressed(ebiten.KeyS) || ebiten.IsKeyPressed(ebiten.KeyArrowDown) {
		dy++
	}
	if dest, sp, send := v.steer.update(&v.cfg, me, dx, dy, speed); send {
		if err := c.Move(dest, sp); err != nil {
			v.steer.retry()
			v.fail(err, now)
		}
	}
	var clicks [][2]int
	if inpututil.IsMouseButtonJustPressed(ebiten.MouseButtonLeft) {
		x, y := ebiten.CursorPosition()
		clicks = append(clicks, [2]int{x, y})
	}
	v.touches = inpututil.AppendJustPressedTouchIDs(v.touches[:0])
	for _, id := range v.touches {
		x, y := ebiten.TouchPosition(id)
		clicks = append(clicks, [2]int{x, y})
	}
	for _, p := range clicks {
		wx, wy := v.cam.toWorld(float64(p[0]), float64(p[1]))
		dest := reach(&v.cfg, me.Pos, wx, wy)
		v.steer.stop()
		if err := c.Move(dest, speed); err != nil {
			v.fail(err, now)
			continue
		}
		v.effects = append(v.effects, effect{kind: fxMarker, pos: dest, at: now, lifetime: 700 * time.Millisecond})
	}
	if inpututil.IsKeyJustPressed(ebiten.KeySpace) {
		if err := c.Jump(); err != nil {
			v.fail(err, now)
		} else {
			v.effects = append(v.effects, effect{kind: fxJump, id: selfID, at: now, lifetime: 600 * time.Millisecond})
		}
	}
	if inpututil.IsKeyJustPressed(ebiten.KeyF) {
		if t := nearestNPC(c, me.Pos, int64(v.cfg.RegionSize)); t == 0 {
			v.fail(errNoTarget, now)
		} else if err := c.Skill(world.SkillStrike, t); err != nil {
			v.fail(err, now)
		} else {
			v.strikes, v.struck = v.strikes+1, t
			v.effects = append(v.effects, effect{kind: fxSkill, id: selfID, to: t, at: now, lifetime: 400 * time.Millisecond})
		}
	}
}

// errNoTarget is what F says with no NPC near enough to strike.
var errNoTarget = errors.New("no NPC within 16 m to strike: walk closer")

// selfID stands for the player's own entity in effects.
const selfID = interest.ID(0)

// fail shows a command's error, unless it is the uplink's backlog, which
// clears by itself.
func (v *View) fail(err error, now time.Time) {
	if !errors.Is(err, interest.ErrBacklog) {
		v.err, v.errAt = err, now
	}
}

// nearestNPC returns the nearest NPC within dist of p, or 0.
func nearestNPC(c *interest.Client, p interest.Vec, dist int64) interest.ID {
	best, bestD := interest.ID(0), dist*dist
	c.Each(func(id interest.ID, v interest.View) {
		if d := p.DistSq(v.Logic.Pos); v.Kind == interest.NPC && d < bestD {
			best, bestD = id, d
		}
	})
	return best
}

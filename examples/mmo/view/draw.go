//go:build js

package view

import (
	"cmp"
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hajimehoshi/ebiten/v2"
	"github.com/hajimehoshi/ebiten/v2/ebitenutil"
	"github.com/hajimehoshi/ebiten/v2/vector"

	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

// maxNames bounds the names drawn a frame.
const maxNames = 200

// discSize is the side of the disc and ring sprites, in pixels.
const discSize = 64

// Sprites: a white disc and a white ring, drawn once and scaled and
// tinted per entity, so that all entities draw in a few batched calls.
var disc, ring *ebiten.Image

func sprites() {
	if disc != nil {
		return
	}
	disc = ebiten.NewImage(discSize, discSize)
	vector.DrawFilledCircle(disc, discSize/2, discSize/2, discSize/2-1, color.White, false)
	ring = ebiten.NewImage(discSize, discSize)
	vector.StrokeCircle(ring, discSize/2, discSize/2, discSize/2-3, 4, color.White, false)
}

// sprite draws img centred at (x, y) with radius r, tinted clr.
func sprite(dst, img *ebiten.Image, x, y, r float64, clr color.Color) {
	var op ebiten.DrawImageOptions
	f := 2 * r / discSize
	op.GeoM.Scale(f, f)
	op.GeoM.Translate(x-r, y-r)
	op.ColorScale.ScaleWithColor(clr)
	op.Filter = ebiten.FilterLinear
	dst.DrawImage(img, &op)
}

// Draw draws the map, the entities, the effects and the overlay.
func (v *View) Draw(screen *ebiten.Image) {
	v.draws++
	v.now = time.Now()
	sprites()
	screen.Fill(colOutside)
	c := v.net.Client()
	me, ok := c.Self()
	v.drawMap(screen, &me, ok)
	for _, players := range []bool{false, true} { // players on top
		c.Each(func(id interest.ID, e interest.View) {
			if (e.Kind == interest.Player) == players {
				v.drawEntity(screen, c, id, &e, ok && near(regionOf(&v.cfg, me.Pos), regionOf(&v.cfg, e.Logic.Pos)))
			}
		})
	}
	if ok {
		v.drawSelf(screen, c, &me)
	}
	v.drawEffects(screen, c)
	hud := v.hud(c, &me, ok)
	v.drawNames(screen, c, &me, hud)
	v.drawHUD(screen, hud)
	v.drawTime = time.Since(v.now)
}

// drawNames draws the names of the entities the client knows, when zoomed
// in enough to read them: players' first, then the nearest NPCs', each
// only where it overlaps no other name and no HUD panel.
func (v *View) drawNames(dst *ebiten.Image, c *interest.Client, me *interest.Logic, hud []hudPanel) {
	if v.cam.scale < 0.12 {
		return
	}
	v.panelBoxes = v.panelBoxes[:0]
	for _, p := range hud {
		v.panelBoxes = append(v.panelBoxes, p.box())
	}
	v.labels.reset(v.panelBoxes...)
	v.named = v.named[:0]
	c.Each(func(id interest.ID, e interest.View) {
		if e.HasDisplay && e.Display.Name != "" {
			v.named = append(v.named, namedEntity{e.Display.Name, e.Kind == interest.Player, me.Pos.DistSq(e.Logic.Pos), id})
		}
	})
	slices.SortFunc(v.named, func(a, b namedEntity) int {
		if a.player != b.player {
			if a.player {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.dsq, b.dsq)
	})
	r := int(v.radius())
	for _, n := range v.named {
		if v.labels.placed() >= maxNames {
			break
		}
		x, y, drawn := v.at(c, n.id)
		if !drawn {
			continue
		}
		sx, sy := v.cam.toScreen(x, y)
		tx, ty := int(sx)-len(n.name)*glyphW/2, int(sy)-r-glyphH-4
		b := textBox(n.name, tx, ty, 1)
		if b.x1 <= 0 || b.y1 <= 0 || b.x0 >= v.cam.w || b.y0 >= v.cam.h {
			continue // off screen: it takes no place from the names on it
		}
		if v.labels.place(b) {
			ebitenutil.DebugPrintAt(dst, n.name, tx, ty)
		}
	}
}

// namedEntity is a name waiting for a place, with what orders it.
type namedEntity struct {
	name   string
	player bool
	dsq    int64
	id     interest.ID
}

func (v *View) rect(dst *ebiten.Image, x0, y0, x1, y1 float64, clr color.Color) {
	sx0, sy0 := v.cam.toScreen(x0, y0)
	sx1, sy1 := v.cam.toScreen(x1, y1)
	vector.DrawFilledRect(dst, float32(sx0), float32(sy0), float32(sx1-sx0), float32(sy1-sy0), clr, false)
}

// drawMap draws the field, the cities, the region grid and the player's
// 3x3 range.
func (v *View) drawMap(dst *ebiten.Image, me *interest.Logic, ok bool) {
	rs := float64(v.cfg.RegionSize)
	mw, mh := float64(v.cfg.Width)*rs, float64(v.cfg.Height)*rs
	x0, y0, x1, y1 := v.cam.visible()
	v.rect(dst, max(x0, 0), max(y0, 0), min(x1, mw), min(y1, mh), colField)
	rx0, ry0 := max(int(x0/rs), 0), max(int(y0/rs), 0)
	rx1, ry1 := min(int(x1/rs), v.cfg.Width-1), min(int(y1/rs), v.cfg.Height-1)
	if v.cfg.City != nil {
		for ry := ry0; ry <= ry1; ry++ {
			for rx := rx0; rx <= rx1; rx++ {
				if v.cfg.City(interest.Region{X: rx, Y: ry}) {
					v.rect(dst, float64(rx)*rs, float64(ry)*rs, float64(rx+1)*rs, float64(ry+1)*rs, colCity)
				}
			}
		}
	}
	if ok {
		r := regionOf(&v.cfg, me.Pos)
		lx, ly := float64(max(r.X-1, 0))*rs, float64(max(r.Y-1, 0))*rs
		hx, hy := float64(min(r.X+2, v.cfg.Width))*rs, float64(min(r.Y+2, v.cfg.Height))*rs
		v.rect(dst, lx, ly, hx, hy, colRange)
		sx0, sy0 := v.cam.toScreen(lx, ly)
		sx1, sy1 := v.cam.toScreen(hx, hy)
		vector.StrokeRect(dst, float32(sx0), float32(sy0), float32(sx1-sx0), float32(sy1-sy0), 2, colBorder, false)
	}
	_, top := v.cam.toScreen(0, max(y0, 0))
	_, bottom := v.cam.toScreen(0, min(y1, mh))
	for rx := rx0; rx <= rx1+1; rx++ {
		sx, _ := v.cam.toScreen(float64(rx)*rs, 0)
		vector.StrokeLine(dst, float32(sx), float32(top), float32(sx), float32(bottom), 1, colGrid, false)
	}
	left, _ := v.cam.toScreen(max(x0, 0), 0)
	right, _ := v.cam.toScreen(min(x1, mw), 0)
	for ry := ry0; ry <= ry1+1; ry++ {
		_, sy := v.cam.toScreen(0, float64(ry)*rs)
		vector.StrokeLine(dst, float32(left), float32(sy), float32(right), float32(sy), 1, colGrid, false)
	}
	for _, city := range v.cities {
		cx := (float64(city.Min.X) + float64(city.Max.X+1)) / 2 * rs
		cy := float64(city.Min.Y) * rs
		sx, sy := v.cam.toScreen(cx, cy)
		ebitenutil.DebugPrintAt(dst, city.Name, int(sx)-len(city.Name)*glyphW/2, int(sy)+2)
	}
}

// radius returns an entity's radius on screen.
func (v *View) radius() float32 {
	return float32(max(3, 48*v.cam.scale))
}

// drawEntity draws one entity the client knows: a disc in its colour,
// faded if it has left the range (the client drops it after a short
// grace), a red ring in combat and a life bar when hurt (drawNames adds
// its name).
func (v *View) drawEntity(dst *ebiten.Image, c *interest.Client, id interest.ID, e *interest.View, inRange bool) {
	x, y, drawn := v.at(c, id)
	if !drawn {
		return // heard of after the frame drawn: it appears when the drawing gets there
	}
	sx, sy := v.cam.toScreen(x, y)
	r := v.radius()
	if sx < -50 || sy < -50 || sx > float64(v.cam.w)+50 || sy > float64(v.cam.h)+50 {
		return
	}
	clr := entityColour(e)
	if !inRange {
		clr = fade(clr, 0.35)
	}
	sprite(dst, disc, sx, sy, float64(r), clr)
	if e.Logic.Combat {
		sprite(dst, ring, sx, sy, float64(r)+3, colCombat)
	}
	v.lifeBar(dst, sx, sy, r, e.Logic.Life)
}

func (v *View) lifeBar(dst *ebiten.Image, sx, sy float64, r float32, life uint8) {
	if life >= 100 {
		return
	}
	w := 2 * max(r, 8)
	x, y := float32(sx)-w/2, float32(sy)-r-5
	vector.DrawFilledRect(dst, x, y, w, 3, colLifeBg, false)
	vector.DrawFilledRect(dst, x, y, w*float32(life)/100, 3, colLife, false)
}

// drawSelf draws the player: its path to where it is going, then itself.
func (v *View) drawSelf(dst *ebiten.Image, c *interest.Client, me *interest.Logic) {
	x, y, drawn := v.at(c, selfID)
	if !drawn {
		x, y = float64(me.Pos.X), float64(me.Pos.Y)
	}
	sx, sy := v.cam.toScreen(x, y)
	if me.Moving() {
		dx, dy := v.cam.toScreen(float64(me.Dest.X), float64(me.Dest.Y))
		vector.StrokeLine(dst, float32(sx), float32(sy), float32(dx), float32(dy), 1, fade(colMarker, 0.5), false)
		vector.StrokeLine(dst, float32(dx)-4, float32(dy)-4, float32(dx)+4, float32(dy)+4, 1.5, colMarker, false)
		vector.StrokeLine(dst, float32(dx)-4, float32(dy)+4, float32(dx)+4, float32(dy)-4, 1.5, colMarker, false)
	}
	r := v.radius() + 1
	sprite(dst, disc, sx, sy, float64(r), colSelf)
	sprite(dst, ring, sx, sy, float64(r)+3, colBorder)
	v.lifeBar(dst, sx, sy, r, me.Life)
}

// drawEffects draws jumps (a widening ring), strikes (a line from the
// striker to its target) and click markers (a shrinking ring).
func (v *View) drawEffects(dst *ebiten.Image, c *interest.Client) {
	pos := func(id interest.ID) (float64, float64, bool) {
		x, y, ok := v.at(c, id)
		if !ok {
			return 0, 0, false
		}
		sx, sy := v.cam.toScreen(x, y)
		return sx, sy, true
	}
	for _, e := range v.effects {
		t := min(float64(v.now.Sub(e.at))/float64(e.lifetime), 1)
		switch e.kind {
		case fxJump:
			if x, y, ok := pos(e.id); ok {
				sprite(dst, ring, x, y, float64(v.radius())+t*20, fade(colJump, 1-t))
			}
		case fxSkill:
			x0, y0, ok0 := pos(e.id)
			x1, y1, ok1 := pos(e.to)
			if ok0 && ok1 {
				vector.StrokeLine(dst, float32(x0), float32(y0), float32(x1), float32(y1), 2, fade(colSkill, 1-t), false)
			}
		case fxMarker:
			sx, sy := v.cam.toScreen(float64(e.pos.X), float64(e.pos.Y))
			sprite(dst, ring, sx, sy, 14*(1-t)+3, fade(colMarker, 1-t))
		}
	}
}

// hudPanel is one panel of the HUD: text on a translucent box at x, y.
type hudPanel struct {
	text string
	x, y int
	bg   color.Color
}

// box is where the panel is drawn.
func (p hudPanel) box() box { return textBox(p.text, p.x+6, p.y+4, 6) }

// drawHUD draws the panels.
func (v *View) drawHUD(dst *ebiten.Image, hud []hudPanel) {
	for _, p := range hud {
		b := p.box()
		vector.DrawFilledRect(dst, float32(b.x0), float32(b.y0), float32(b.x1-b.x0), float32(b.y1-b.y0), p.bg, false)
		ebitenutil.DebugPrintAt(dst, p.text, p.x+6, p.y+4)
	}
}

// hud returns the HUD's panels: the figures, the help and the last error.
func (v *View) hud(c *interest.Client, me *interest.Logic, ok bool) []hudPanel {
	cs, ns := c.Stats(), v.net.Stats()
	var b strings.Builder
	status := ns.Status
	if status == "" {
		status = "connected"
	}
	fmt.Fprintf(&b, "tongbu MMO - interest mode - %s\n", status)
	if ns.Where != "" {
		fmt.Fprintf(&b, "on %s\n", ns.Where)
	}
	fmt.Fprintf(&b, "frame %d   fps %.0f  tps %.0f   net %.1f ms  draw %.1f ms\n", c.Frame(), ebiten.ActualFPS(), ebiten.ActualTPS(),
		v.netTime.Seconds()*1000, v.drawTime.Seconds()*1000)
	if ok {
		r := regionOf(&v.cfg, me.Pos)
		upm := float64(v.cfg.RegionSize) / 16
		place := "field"
		if city, in := world.CityAt(v.cities, r); in {
			place = city.Name
		}
		name := "you"
		if d, has := c.Display(v.net.Player()); has && d.Name != "" {
			name = fmt.Sprintf("%s (%s)", d.Name, world.CampName(d.Camp))
		}
		fmt.Fprintf(&b, "%s at %.0f, %.0f m  region %d,%d  %s\n", name, float64(me.Pos.X)/upm, float64(me.Pos.Y)/upm, r.X, r.Y, place)
	} else {
		b.WriteString("waiting for the world...\n")
	}
	n := v.census
	fmt.Fprintf(&b, "entities: known %d  in range %d  moving %d  players %d\n", n.known, n.inRange, n.moving, n.players)
	fmt.Fprintf(&b, "down %s/s %4.1f pkt/s   up %s/s %4.1f pkt/s\n", bytes(v.down.rate()), v.pktDown.rate(), bytes(v.up.rate()), v.pktUp.rate())
	if ns.BytesIn > 0 || ns.BytesOut > 0 || ns.RTT > 0 {
		fmt.Fprintf(&b, "wire down %s/s  up %s/s  rtt %d ms\n", bytes(v.wireDown.rate()), bytes(v.wireUp.rate()), ns.RTT.Milliseconds())
	}
	fmt.Fprintf(&b, "lost %d  corrections %d  discovered %d  removed %d  zoom %.2f px/unit\n",
		cs.LostPackets, cs.Corrections, cs.Discovered, cs.Removed, v.cam.scale)
	v.panels = append(v.panels[:0], hudPanel{b.String(), 8, 8, colPanel})
	if v.help {
		help := "WASD / arrows: run   Shift: sprint   click: walk there   Space: jump\n" +
			"F: strike the nearest NPC   wheel or +/-: zoom   H: hide this help"
		v.panels = append(v.panels, hudPanel{help, 8, v.cam.h - 2*glyphH - 16, colPanel})
	}
	if v.err != nil && v.now.Sub(v.errAt) < 5*time.Second {
		v.panels = append(v.panels, hudPanel{v.err.Error(), 8, v.cam.h - 4*glyphH - 24, colError})
	}
	return v.panels
}

// bytes formats a byte rate.
func bytes(n float64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", math.Round(n))
}

package view

import (
	"math"

	"github.com/tongbu/tongbu/interest"
)

// camera maps world units to screen pixels: the world point at the
// centre of the screen and the pixels per world unit.
type camera struct {
	cx, cy float64 // world point at the screen's centre
	scale  float64 // pixels per world unit
	w, h   int     // screen size in pixels
}

// Zoom bounds, in pixels per world unit: from about 18 regions across a
// 960 pixel screen to about one.
const (
	minScale     = 0.05
	maxScale     = 1.0
	defaultScale = 0.2
)

func (c *camera) toScreen(x, y float64) (float64, float64) {
	return (x-c.cx)*c.scale + float64(c.w)/2, (y-c.cy)*c.scale + float64(c.h)/2
}

func (c *camera) toWorld(sx, sy float64) (float64, float64) {
	return (sx-float64(c.w)/2)/c.scale + c.cx, (sy-float64(c.h)/2)/c.scale + c.cy
}

// visible returns the world rectangle on screen.
func (c *camera) visible() (x0, y0, x1, y1 float64) {
	x0, y0 = c.toWorld(0, 0)
	x1, y1 = c.toWorld(float64(c.w), float64(c.h))
	return
}

// zoom multiplies the scale by f, within bounds.
func (c *camera) zoom(f float64) {
	c.scale = min(max(c.scale*f, minScale), maxScale)
}

// follow moves the camera toward p: a quarter of the way each tick, or
// all of it when p is far (a spawn, a teleport).
func (c *camera) follow(x, y float64, regionSize int) {
	dx, dy := x-c.cx, y-c.cy
	if math.Abs(dx) > 2*float64(regionSize) || math.Abs(dy) > 2*float64(regionSize) {
		c.cx, c.cy = x, y
		return
	}
	c.cx += dx / 4
	c.cy += dy / 4
}

// clampMap puts a world point on the map.
func clampMap(cfg *interest.Config, x, y float64) interest.Vec {
	m := cfg.Bounds()
	return interest.Vec{
		X: int32(min(max(math.Round(x), 0), float64(m.X))),
		Y: int32(min(max(math.Round(y), 0), float64(m.Y))),
	}
}

// reach returns dest pulled toward from so that the world accepts the
// move: at most MaxMove away, and on the map.
func reach(cfg *interest.Config, from interest.Vec, x, y float64) interest.Vec {
	dx, dy := x-float64(from.X), y-float64(from.Y)
	if d := math.Hypot(dx, dy); d > float64(cfg.MaxMove) {
		f := float64(cfg.MaxMove) / d
		dx, dy = dx*f, dy*f
	}
	return clampMap(cfg, float64(from.X)+dx, float64(from.Y)+dy)
}

// regionOf returns the region holding p.
func regionOf(cfg *interest.Config, p interest.Vec) interest.Region {
	return interest.Region{X: int(p.X) / cfg.RegionSize, Y: int(p.Y) / cfg.RegionSize}
}

// near reports whether two regions are within each other's 3x3 range.
func near(a, b interest.Region) bool {
	return a.X-b.X >= -1 && a.X-b.X <= 1 && a.Y-b.Y >= -1 && a.Y-b.Y <= 1
}

// Player speeds in units per frame: a run, and a sprint with Shift. The
// world's default top speed is the seed's 16 m/s, 64 units a frame.
func runSpeed(cfg *interest.Config) int32    { return int32(max(1, cfg.MaxSpeed*5/8)) }
func sprintSpeed(cfg *interest.Config) int32 { return int32(cfg.MaxSpeed) }

// steering turns the movement keys into moves: while a direction is held
// the player runs toward a point ahead, re-aimed as it nears it or when
// the direction or speed changes; letting go stops the player.
type steering struct {
	active bool
	dx, dy int
	speed  int32
	dest   interest.Vec
}

// update returns the move to send for keys held in direction (dx, dy),
// each -1, 0 or 1, at speed; send is false when nothing changes.
func (s *steering) update(cfg *interest.Config, me interest.Logic, dx, dy int, speed int32) (dest interest.Vec, sp int32, send bool) {
	if dx == 0 && dy == 0 {
		if !s.active {
			return interest.Vec{}, 0, false
		}
		s.active = false
		return me.Pos, 0, true
	}
	ahead := float64(min(2*cfg.RegionSize, cfg.MaxMove))
	same := s.active && s.dx == dx && s.dy == dy && s.speed == speed && me.Dest == s.dest
	if same && me.Pos.DistSq(s.dest) > int64(ahead*ahead/4) {
		return interest.Vec{}, 0, false
	}
	f := ahead / math.Hypot(float64(dx), float64(dy))
	dest = reach(cfg, me.Pos, float64(me.Pos.X)+float64(dx)*f, float64(me.Pos.Y)+float64(dy)*f)
	if same && dest == s.dest {
		return interest.Vec{}, 0, false // against the map's edge: nothing new
	}
	s.active, s.dx, s.dy, s.speed, s.dest = true, dx, dy, speed, dest
	return dest, speed, true
}

// stop forgets the held direction (a click took over).
func (s *steering) stop() { s.active = false }

// retry makes the next update resend the move for the held keys (the
// last one could not be sent).
func (s *steering) retry() { s.dest = interest.Vec{X: -1, Y: -1} }

package game

import "github.com/tongbu/tongbu/lockstep/fixed"

// Collision helpers. All of them are integer math on fixed.Fixed, and every
// loop runs in a fixed order, so they give the same bits everywhere.

// contains reports whether p lies in r grown by m on every side (borders
// included).
func (r Rect) contains(p fixed.Vec, m fixed.Fixed) bool {
	return p.X >= r.Min.X.Sub(m) && p.X <= r.Max.X.Add(m) &&
		p.Y >= r.Min.Y.Sub(m) && p.Y <= r.Max.Y.Add(m)
}

// closest returns the point of r nearest to p.
func (r Rect) closest(p fixed.Vec) fixed.Vec {
	return fixed.V(p.X.Clamp(r.Min.X, r.Max.X), p.Y.Clamp(r.Min.Y, r.Max.Y))
}

// pushOut moves a circle of radius rad at c out of r, along the shortest
// way, and reports whether it had to.
func (r Rect) pushOut(c fixed.Vec, rad fixed.Fixed) (fixed.Vec, bool) {
	q := r.closest(c)
	d := c.Sub(q)
	if d.X == 0 && d.Y == 0 {
		// The centre is inside: leave by the nearest side.
		left, right := c.X.Sub(r.Min.X), r.Max.X.Sub(c.X)
		up, down := c.Y.Sub(r.Min.Y), r.Max.Y.Sub(c.Y)
		switch least := min(left, right, up, down); least {
		case left:
			c.X = r.Min.X.Sub(rad)
		case right:
			c.X = r.Max.X.Add(rad)
		case up:
			c.Y = r.Min.Y.Sub(rad)
		default:
			c.Y = r.Max.Y.Add(rad)
		}
		return c, true
	}
	if d.LenSq() >= rad.Mul(rad) {
		return c, false
	}
	return q.Add(d.Normalize().Scale(rad.Add(pushSlack))), true
}

// pushSlack is added to a push out of a corner so that the rounding of the
// direction cannot leave the circle a hair inside: the pushed circle tests
// clear.
const pushSlack = fixed.Fixed(64)

// confine keeps a circle of radius rad inside the arena.
func confine(c fixed.Vec, rad fixed.Fixed) fixed.Vec {
	return fixed.V(c.X.Clamp(rad, arenaW.Sub(rad)), c.Y.Clamp(rad, arenaH.Sub(rad)))
}

// settle moves a player's circle out of every wall and into the arena.
// Walls are far enough apart that one pass in order settles any position a
// move can reach; a second pass catches a push from one wall into another.
func settle(c fixed.Vec) fixed.Vec {
	for range 2 {
		moved := false
		for i := range walls {
			var m bool
			c, m = walls[i].pushOut(c, playerR)
			moved = moved || m
		}
		c = confine(c, playerR)
		if !moved {
			break
		}
	}
	return c
}

// inWall reports whether a shot at p touches a wall.
func inWall(p fixed.Vec) bool {
	for i := range walls {
		if walls[i].contains(p, shotR) {
			return true
		}
	}
	return false
}

// outside reports whether p has left the arena.
func outside(p fixed.Vec) bool {
	return p.X < 0 || p.Y < 0 || p.X > arenaW || p.Y > arenaH
}

// segmentHits reports whether the segment a-b passes within m of r, by
// clipping it against the grown rectangle's slabs (Liang-Barsky).
func (r Rect) segmentHits(a, b fixed.Vec, m fixed.Fixed) bool {
	lo, hi := fixed.Zero, fixed.One
	d := b.Sub(a)
	clip := func(p, dp, min, max fixed.Fixed) bool {
		if dp == 0 {
			return p >= min && p <= max
		}
		t0, t1 := min.Sub(p).Div(dp), max.Sub(p).Div(dp)
		if t0 > t1 {
			t0, t1 = t1, t0
		}
		lo, hi = lo.Max(t0), hi.Min(t1)
		return lo <= hi
	}
	return clip(a.X, d.X, r.Min.X.Sub(m), r.Max.X.Add(m)) &&
		clip(a.Y, d.Y, r.Min.Y.Sub(m), r.Max.Y.Add(m))
}

// ClearShot reports whether a shot from a to b would pass every wall.
func ClearShot(a, b fixed.Vec) bool {
	for i := range walls {
		if walls[i].segmentHits(a, b, shotR) {
			return false
		}
	}
	return true
}

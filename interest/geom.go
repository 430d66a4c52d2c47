package interest

import "math"

// Vec is a position or offset in world units (what a unit measures is
// the game's choice; the defaults take it as 1/64 m): a region is
// RegionSize units on a side.
type Vec struct{ X, Y int32 }

// Add returns v + o.
func (v Vec) Add(o Vec) Vec { return Vec{v.X + o.X, v.Y + o.Y} }

// Sub returns v - o.
func (v Vec) Sub(o Vec) Vec { return Vec{v.X - o.X, v.Y - o.Y} }

// DistSq returns the squared distance between v and o.
func (v Vec) DistSq(o Vec) int64 {
	dx, dy := int64(v.X)-int64(o.X), int64(v.Y)-int64(o.Y)
	return dx*dx + dy*dy
}

// isqrt returns floor(sqrt(n)) for n >= 0. math.Sqrt is correctly rounded
// on every platform (IEEE 754 requires it), and the result is fixed up
// with integer arithmetic, so it is the same everywhere.
func isqrt(n int64) int64 {
	if n <= 0 {
		return 0
	}
	r := int64(math.Sqrt(float64(n)))
	for r*r > n {
		r--
	}
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// divRound divides rounding half away from zero; d > 0.
func divRound(n, d int64) int64 {
	if n >= 0 {
		return (2*n + d) / (2 * d)
	}
	return -((-2*n + d) / (2 * d))
}

// Step moves pos one frame toward dest at speed units per frame. It is the
// movement rule shared by the world and the client half: integer only, so
// every client extrapolates a move to exactly the position the server
// holds. A speed of 0 does not move.
func Step(pos, dest Vec, speed int32) Vec {
	if speed <= 0 || pos == dest {
		return pos
	}
	d := dest.Sub(pos)
	dist := isqrt(int64(d.X)*int64(d.X) + int64(d.Y)*int64(d.Y))
	if dist <= int64(speed) {
		return dest
	}
	// Rounding to nearest guarantees progress: the longer component moves
	// at least speed/sqrt(2) >= 0.7 units, which rounds to 1 or more.
	return Vec{
		pos.X + int32(divRound(int64(d.X)*int64(speed), dist)),
		pos.Y + int32(divRound(int64(d.Y)*int64(speed), dist)),
	}
}

// StepN applies Step n times, stopping early at dest. It costs at most
// the path's length in units, whatever n: with a speed of 0 or less it
// returns pos at once, and otherwise every Step makes progress.
func StepN(pos, dest Vec, speed int32, n int) Vec {
	if speed <= 0 {
		return pos
	}
	for ; n > 0 && pos != dest; n-- {
		pos = Step(pos, dest, speed)
	}
	return pos
}

// Region is a region's coordinates on the grid.
type Region struct{ X, Y int }

// near reports whether two regions are within each other's 3x3 range.
func near(a, b Region) bool {
	dx, dy := a.X-b.X, a.Y-b.Y
	return dx >= -1 && dx <= 1 && dy >= -1 && dy <= 1
}

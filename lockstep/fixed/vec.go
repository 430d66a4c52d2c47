package fixed

import "math/bits"

// Vec is a 2D vector of Fixed components. The zero value is the zero
// vector; compare vectors with ==.
type Vec struct {
	X, Y Fixed
}

// V returns the vector (x, y).
func V(x, y Fixed) Vec { return Vec{x, y} }

// FromAngle returns the unit vector at angle a (radians) from the positive
// x axis: (Cos(a), Sin(a)).
func FromAngle(a Fixed) Vec {
	s, c := SinCos(a)
	return Vec{c, s}
}

// Add returns v+w, each component saturating.
func (v Vec) Add(w Vec) Vec { return Vec{v.X.Add(w.X), v.Y.Add(w.Y)} }

// Sub returns v-w, each component saturating.
func (v Vec) Sub(w Vec) Vec { return Vec{v.X.Sub(w.X), v.Y.Sub(w.Y)} }

// Neg returns -v, each component saturating.
func (v Vec) Neg() Vec { return Vec{v.X.Neg(), v.Y.Neg()} }

// Scale returns v*k, each component rounded and saturating like Mul.
func (v Vec) Scale(k Fixed) Vec { return Vec{v.X.Mul(k), v.Y.Mul(k)} }

// Perp returns v rotated by a quarter turn counterclockwise, (-Y, X),
// exactly (saturating only for a component of MinValue).
func (v Vec) Perp() Vec { return Vec{v.Y.Neg(), v.X} }

// Dot returns v·w = v.X*w.X + v.Y*w.Y, summed exactly in 128 bits and
// rounded once, saturating.
func (v Vec) Dot(w Vec) Fixed {
	return sum2(mul128(v.X, w.X), mul128(v.Y, w.Y), FracBits)
}

// Cross returns the z component of the cross product, v.X*w.Y - v.Y*w.X:
// positive when w is counterclockwise from v. It is exact in 128 bits and
// rounded once, saturating.
func (v Vec) Cross(w Vec) Fixed {
	return sum2(mul128(v.X, w.Y), neg128(mul128(v.Y, w.X)), FracBits)
}

// LenSq returns the squared length of v, exact in 128 bits and rounded once.
// It saturates to MaxValue when the squared length passes 8.8e12, that is
// for components beyond about 2,097,151 units; Len, Dist and Normalize have
// no such limit.
func (v Vec) LenSq() Fixed { return v.Dot(v) }

// Len returns the length of v, correctly rounded. The sum of squares is
// exact in 128 bits, so Len never overflows inside; only a length above
// MaxValue (possible for components near MaxValue) saturates.
func (v Vec) Len() Fixed { return hypot(mag(v.X), mag(v.Y)) }

// Dist returns the distance from v to w, correctly rounded, with no
// intermediate overflow: the component differences are taken exactly.
func (v Vec) Dist(w Vec) Fixed { return hypot(absDiff(v.X, w.X), absDiff(v.Y, w.Y)) }

// DistSq returns the squared distance from v to w, saturating like LenSq.
func (v Vec) DistSq(w Vec) Fixed { return w.Sub(v).LenSq() }

// Normalize returns the unit vector in the direction of v, each component
// within one raw unit of the exact value. The zero vector gives the zero
// vector. The components are scaled up exactly before dividing, so a short
// vector normalizes as precisely as a long one.
func (v Vec) Normalize() Vec {
	if v.X == 0 && v.Y == 0 {
		return Vec{}
	}
	ux, uy := mag(v.X), mag(v.Y)
	// Bring the larger magnitude to [2^61, 2^62): exact for all but the
	// largest inputs, which lose only bits far below the result's
	// resolution.
	if s := bits.LeadingZeros64(max(ux, uy)) - 2; s >= 0 {
		ux, uy = ux<<s, uy<<s
	} else {
		ux, uy = ux>>-s, uy>>-s
	}
	l := hypot(ux, uy) // in [2^61, 2^62.5): positive, no saturation
	return Vec{unitDiv(v.X < 0, ux, uint64(l)), unitDiv(v.Y < 0, uy, uint64(l))}
}

// unitDiv returns ±u/l as a Fixed, u <= l, rounded like Div.
func unitDiv(neg bool, u, l uint64) Fixed {
	q, r := bits.Div64(u>>(64-FracBits), u<<FracBits, l)
	if r >= l-r {
		q++
	}
	return fromMag(neg, q)
}

// Rotate returns v rotated counterclockwise by angle a (radians). It uses
// sin and cos to 62 bits, not the rounded Sin and Cos, and rounds once, so
// each component is within half a raw unit (plus |v| * 1e-16) of the exact
// rotation however long v is; it saturates only if the result is out of
// range.
func (v Vec) Rotate(a Fixed) Vec {
	s, c := sinCosQ62(a)
	return Vec{
		sum2(mul128(v.X, Fixed(c)), neg128(mul128(v.Y, Fixed(s))), 62),
		sum2(mul128(v.X, Fixed(s)), mul128(v.Y, Fixed(c)), 62),
	}
}

// Angle returns the angle of v from the positive x axis in radians, in
// [-Pi, Pi]; the zero vector gives 0. It is Atan2(v.Y, v.X).
func (v Vec) Angle() Fixed { return Atan2(v.Y, v.X) }

// Lerp returns the point a fraction t of the way from v to w, per component
// like the function Lerp.
func (v Vec) Lerp(w Vec, t Fixed) Vec { return Vec{Lerp(v.X, w.X, t), Lerp(v.Y, w.Y, t)} }

// String returns "(x, y)" with both components in exact decimal.
func (v Vec) String() string {
	b := make([]byte, 0, 64)
	b = append(b, '(')
	b = v.X.AppendText(b)
	b = append(b, ", "...)
	b = v.Y.AppendText(b)
	b = append(b, ')')
	return string(b)
}

// absDiff returns |a-b| exactly as a uint64.
func absDiff(a, b Fixed) uint64 {
	if a >= b {
		return uint64(a) - uint64(b)
	}
	return uint64(b) - uint64(a)
}

// hypot returns sqrt(x² + y²) correctly rounded, saturated to MaxValue.
func hypot(x, y uint64) Fixed {
	xh, xl := bits.Mul64(x, x)
	yh, yl := bits.Mul64(y, y)
	lo, c := bits.Add64(xl, yl, 0)
	hi, c := bits.Add64(xh, yh, c)
	if c != 0 {
		return MaxValue // the sum is at least 2^128: the root is >= 2^64
	}
	return fromMag(false, sqrt128(hi, lo))
}

// int128 is a signed 128-bit integer in two's complement.
type int128 struct {
	hi int64
	lo uint64
}

// mul128 returns a*b exactly; |a*b| <= 2^126.
func mul128(a, b Fixed) int128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	h := int64(hi)
	// Correct the unsigned high word for negative operands.
	if a < 0 {
		h -= int64(b)
	}
	if b < 0 {
		h -= int64(a)
	}
	return int128{h, lo}
}

// neg128 returns -x; x is a product from mul128, so it never overflows.
func neg128(x int128) int128 {
	lo, b := bits.Sub64(0, x.lo, 0)
	return int128{-x.hi - int64(b), lo}
}

// sum2 returns (x + y) / 2^shift rounded to the nearest Fixed, ties away
// from zero, saturating.
func sum2(x, y int128, shift uint) Fixed {
	lo, c := bits.Add64(x.lo, y.lo, 0)
	hi := x.hi + y.hi + int64(c)
	if (x.hi < 0) == (y.hi < 0) && (hi < 0) != (x.hi < 0) {
		return saturate(x.hi < 0) // the 128-bit sum overflowed
	}
	if hi < 0 {
		n := neg128(int128{hi, lo})
		return fromMag128(true, uint64(n.hi), n.lo, shift)
	}
	return fromMag128(false, uint64(hi), lo, shift)
}

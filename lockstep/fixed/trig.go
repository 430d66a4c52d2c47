package fixed

import "math/bits"

// The trigonometric functions work on 62-fraction-bit integers ("Q62") and
// round once at the end. Angles are Fixed radians.

const (
	q62One    uint64 = uint64(1) << 62
	q62HalfPi uint64 = 7244019458077122842  // π/2 * 2^62
	q62Pi     uint64 = 14488038916154245685 // π * 2^62

	// turnInt + turnFrac/2^64 = 2^44 / (2π): a raw angle times this is its
	// size in 2^-64 turns.
	turnInt  uint64 = 2799883368761
	turnFrac uint64 = 1176750054524798933
)

// 1/n! in Q62, for the Taylor series of sin and cos.
const (
	inv2f  uint64 = 2305843009213693952
	inv3f  uint64 = 768614336404564651
	inv4f  uint64 = 192153584101141163
	inv5f  uint64 = 38430716820228233
	inv6f  uint64 = 6405119470038039
	inv7f  uint64 = 915017067148291
	inv8f  uint64 = 114377133393536
	inv9f  uint64 = 12708570377060
	inv10f uint64 = 1270857037706
	inv11f uint64 = 115532457973
	inv12f uint64 = 9627704831
	inv13f uint64 = 740592679
	inv14f uint64 = 52899477
	inv15f uint64 = 3526632
	inv16f uint64 = 220414
)

// 1/n in Q62, for the Taylor series of atan.
const (
	inv3 uint64 = 1537228672809129301
	inv5 uint64 = 922337203685477581
	inv7 uint64 = 658812288346769701
	inv9 uint64 = 512409557603043100
)

// atanEighths[k] is atan(k/8) in Q62.
var atanEighths = [9]uint64{
	0,
	573486189672913778,
	1129764675555192497,
	1654537683908620430,
	2138197195906305897,
	2576084652473018343,
	2967625066264511049,
	3315018258881210269,
	3622009729038561421,
}

// mulQ62 returns a*b/2^62, truncated, for a*b < 2^126.
func mulQ62(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi<<2 | lo>>62
}

// roundQ62 rounds a signed Q62 value to the nearest Fixed, ties away from
// zero.
func roundQ62(v int64) Fixed {
	if v < 0 {
		return -Fixed((-uint64(v) + 1<<(61-FracBits)) >> (62 - FracBits))
	}
	return Fixed((uint64(v) + 1<<(61-FracBits)) >> (62 - FracBits))
}

// turns returns angle a in units of 2^-64 turns, modulo one turn. It is
// exact to within 2^-62 turns for every a, so large angles lose nothing:
// the multiplier 2^44/(2π) carries 64 fraction bits.
func turns(a Fixed) uint64 {
	m := mag(a)
	hi, _ := bits.Mul64(m, turnFrac)
	t := m*turnInt + hi // modulo 2^64: whole turns drop out
	if a < 0 {
		t = -t
	}
	return t
}

// Taylor coefficients in Q62, highest order first, for altHorner.
var (
	sinCoeffs  = [...]uint64{inv15f, inv13f, inv11f, inv9f, inv7f, inv5f, inv3f, q62One}
	cosCoeffs  = [...]uint64{inv16f, inv14f, inv12f, inv10f, inv8f, inv6f, inv4f, inv2f, q62One}
	atanCoeffs = [...]uint64{inv9, inv7, inv5, inv3, q62One}
)

// altHorner evaluates c[n] - x2*(c[n-1] - x2*(... - x2*c[0])) in Q62: a
// series whose terms alternate in sign, in powers of x2.
func altHorner(x2 uint64, c []uint64) uint64 {
	s := c[0]
	for _, k := range c[1:] {
		s = k - mulQ62(x2, s)
	}
	return s
}

// sinQ62 returns sin(x) for x in [0, π/4] in Q62.
func sinQ62(x uint64) uint64 {
	return mulQ62(x, altHorner(mulQ62(x, x), sinCoeffs[:]))
}

// cosQ62 returns cos(x) for x in [0, π/4] in Q62.
func cosQ62(x uint64) uint64 {
	return altHorner(mulQ62(x, x), cosCoeffs[:])
}

// SinCos returns Sin(a) and Cos(a), a in radians, computing the shared
// reduction once.
func SinCos(a Fixed) (sin, cos Fixed) {
	s, c := sinCosQ62(a)
	return roundQ62(s), roundQ62(c)
}

// sinCosQ62 returns sin(a) and cos(a) in signed Q62.
func sinCosQ62(a Fixed) (sin, cos int64) {
	t := turns(a)
	oct := t >> 61       // which eighth of a turn
	r := t & (1<<61 - 1) // position within it, in 2^-61 eighths
	if oct&1 == 1 {
		r = 1<<61 - r // measure from the end of the eighth instead
	}
	x := mulQ62(r, q62HalfPi) // r * (π/4) / 2^61, in Q62
	s, c := int64(sinQ62(x)), int64(cosQ62(x))
	// Octant o covers [o, o+1] * π/4; even ones use the offset from the
	// start, odd ones the distance to the end.
	switch oct {
	case 0:
		return s, c
	case 1:
		return c, s
	case 2:
		return c, -s
	case 3:
		return s, -c
	case 4:
		return -s, -c
	case 5:
		return -c, -s
	case 6:
		return -c, s
	default:
		return -s, c
	}
}

// Sin returns the sine of a, a in radians, rounded to the nearest Fixed
// (see the package documentation for the exact bound). Sin is odd:
// Sin(-a) == -Sin(a). Note that Sin(a+TwoPi) may differ from Sin(a) in the
// last bit, because TwoPi is itself rounded. Sin(a) is always the first
// result of SinCos(a).
func Sin(a Fixed) Fixed { return roundQ62(sinTurns(turns(a))) }

// Cos returns the cosine of a, a in radians, rounded to the nearest Fixed
// (see the package documentation for the exact bound). Cos is even:
// Cos(-a) == Cos(a). Cos(a) is always the second result of SinCos(a).
func Cos(a Fixed) Fixed { return roundQ62(sinTurns(turns(a) + 1<<62)) }

// sinTurns returns the sine of t 2^-64 turns in signed Q62, evaluating only
// the polynomial it needs; it agrees exactly with sinCosQ62.
func sinTurns(t uint64) int64 {
	oct := t >> 61
	r := t & (1<<61 - 1)
	if oct&1 == 1 {
		r = 1<<61 - r
	}
	x := mulQ62(r, q62HalfPi)
	var v int64
	if (oct+1)&2 == 0 { // octants 0, 3, 4, 7
		v = int64(sinQ62(x))
	} else {
		v = int64(cosQ62(x))
	}
	if oct >= 4 {
		return -v
	}
	return v
}

// Atan2 returns the angle of the point (x, y) from the positive x axis, in
// radians in [-Pi, Pi], rounded to the nearest Fixed (see the package
// documentation for the exact bound).
// Atan2(0, 0) is 0; Atan2(0, x) is Pi for x < 0; Atan2(y, 0) is ±HalfPi.
func Atan2(y, x Fixed) Fixed {
	if x == 0 && y == 0 {
		return 0
	}
	ax, ay := mag(x), mag(y)
	swap := ay > ax
	if swap {
		ax, ay = ay, ax
	}
	// t = ay/ax in [0, 1], Q62. ay>>2 < ax, so the quotient fits.
	t, _ := bits.Div64(ay>>2, ay<<62, ax)
	// atan(t) = atan(c) + atan((t-c)/(1+t*c)) with c = k/8 the nearest
	// eighth, so |u| <= 1/16 and the series converges fast.
	k := (t + 1<<58) >> 59
	c := k << 59
	phi := atanEighths[k]
	den := q62One + mulQ62(t, c) // 1 + t*c in [1, 2]
	if t >= c {
		d := t - c
		u, _ := bits.Div64(d>>2, d<<62, den)
		phi += atanQ62(u)
	} else {
		d := c - t
		u, _ := bits.Div64(d>>2, d<<62, den)
		phi -= atanQ62(u)
	}
	if swap {
		phi = q62HalfPi - phi
	}
	if x < 0 {
		phi = q62Pi - phi
	}
	// phi <= π * 2^62 < 2^64: round the magnitude, then apply the sign.
	r := Fixed((phi + 1<<(61-FracBits)) >> (62 - FracBits))
	if y < 0 {
		return -r
	}
	return r
}

// atanQ62 returns atan(u) for u in [0, 1/16] in Q62.
func atanQ62(u uint64) uint64 {
	return mulQ62(u, altHorner(mulQ62(u, u), atanCoeffs[:]))
}

// Atan returns the arctangent of a in radians, in [-HalfPi, HalfPi].
func Atan(a Fixed) Fixed { return Atan2(a, One) }

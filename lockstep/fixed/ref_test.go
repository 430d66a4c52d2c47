package fixed

import (
	"math"
	"math/big"
	"math/rand/v2"
)

// Reference implementations on math/big, for the tests and fuzz targets.

var (
	bigOne     = big.NewInt(1)
	bigScale   = new(big.Int).Lsh(bigOne, FracBits)
	bigMaxRaw  = big.NewInt(math.MaxInt64)
	bigMinRaw  = big.NewInt(math.MinInt64)
	bigPi, _   = new(big.Float).SetPrec(300).SetString("3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803482534211706798214808651328230664709384460955058223172535940812848111745028410270193852110555964462294895493038196")
	floatScale = float64(int64(1) << FracBits)
)

// refRound returns num/den rounded to the nearest integer, ties away from
// zero, saturated to the int64 range. den must not be zero.
func refRound(num, den *big.Int) int64 {
	n := new(big.Int).Abs(num)
	d := new(big.Int).Abs(den)
	q, r := new(big.Int).QuoRem(n, d, new(big.Int))
	if r.Lsh(r, 1).Cmp(d) >= 0 {
		q.Add(q, bigOne)
	}
	if (num.Sign() < 0) != (den.Sign() < 0) {
		q.Neg(q)
	}
	return refSat(q)
}

// refSat saturates v to the int64 range.
func refSat(v *big.Int) int64 {
	switch {
	case v.Cmp(bigMaxRaw) > 0:
		return math.MaxInt64
	case v.Cmp(bigMinRaw) < 0:
		return math.MinInt64
	}
	return v.Int64()
}

func refMul(a, b Fixed) Fixed {
	p := new(big.Int).Mul(big.NewInt(int64(a)), big.NewInt(int64(b)))
	return Fixed(refRound(p, bigScale))
}

func refDiv(a, b Fixed) Fixed {
	if b == 0 {
		switch {
		case a > 0:
			return MaxValue
		case a < 0:
			return MinValue
		}
		return 0
	}
	n := new(big.Int).Lsh(big.NewInt(int64(a)), FracBits)
	return Fixed(refRound(n, big.NewInt(int64(b))))
}

// refSqrtInt returns sqrt(n) rounded to the nearest integer.
func refSqrtInt(n *big.Int) *big.Int {
	s := new(big.Int).Sqrt(n)
	rem := new(big.Int).Sub(n, new(big.Int).Mul(s, s))
	if rem.Cmp(s) > 0 {
		s.Add(s, bigOne)
	}
	return s
}

func refSqrt(a Fixed) Fixed {
	if a <= 0 {
		return 0
	}
	n := new(big.Int).Lsh(big.NewInt(int64(a)), FracBits)
	return Fixed(refSat(refSqrtInt(n)))
}

// refHypot returns sqrt(x² + y²) in raw units, rounded, saturated.
func refHypot(x, y *big.Int) Fixed {
	n := new(big.Int).Mul(x, x)
	n.Add(n, new(big.Int).Mul(y, y))
	return Fixed(refSat(refSqrtInt(n)))
}

// refDot2 returns (a*b + c*d) / 2^20 rounded, saturated.
func refDot2(a, b, c, d Fixed) Fixed {
	p := new(big.Int).Mul(big.NewInt(int64(a)), big.NewInt(int64(b)))
	p.Add(p, new(big.Int).Mul(big.NewInt(int64(c)), big.NewInt(int64(d))))
	return Fixed(refRound(p, bigScale))
}

// randRaw returns a raw value whose magnitude is spread over all bit
// lengths, with the edges of the range mixed in.
func randRaw(r *rand.Rand) Fixed {
	switch r.IntN(16) {
	case 0:
		return Fixed([]int64{0, 1, -1, math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, oneRaw, -oneRaw}[r.IntN(9)])
	}
	v := Fixed(r.Uint64() >> r.UintN(64))
	if r.IntN(2) == 0 {
		v = -v
	}
	return v
}

// ulps returns |got - want| in raw units.
func ulps(got Fixed, want float64) float64 {
	return math.Abs(float64(got) - want*floatScale)
}

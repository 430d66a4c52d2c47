package fixed

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// Accuracy bounds, in raw units (2^-20). The results are the exact value
// rounded to the nearest raw unit, so the error is at most half a unit plus
// the polynomial and reduction error (below 1e-9 units) plus the float64
// reference's own error; the tests allow a little over half a unit.
const (
	trigTolUlps  = 0.5 + 1e-6
	atan2TolUlps = 0.5 + 1e-6
)

func TestTrigConstants(t *testing.T) {
	prec := uint(300)
	scale := func(x *big.Float, e int) *big.Int {
		y := new(big.Float).SetPrec(prec).SetMantExp(x, e)
		y.Add(y, big.NewFloat(0.5))
		i, _ := y.Int(nil)
		return i
	}
	check := func(name string, got uint64, want *big.Int) {
		t.Helper()
		if !want.IsUint64() || want.Uint64() != got {
			t.Errorf("%s = %d, want %v", name, got, want)
		}
	}
	check("q62Pi", q62Pi, scale(bigPi, 62))
	check("q62HalfPi", q62HalfPi, scale(bigPi, 61))
	// 2^43/π = turnInt + turnFrac/2^64.
	c := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetMantExp(big.NewFloat(1), 43), bigPi)
	ci, _ := c.Int(nil)
	check("turnInt", turnInt, ci)
	check("turnFrac", turnFrac, scale(new(big.Float).SetPrec(prec).Sub(c, new(big.Float).SetInt(ci)), 64))
	// 1/n! and 1/n, rounded.
	one62 := new(big.Int).Lsh(big.NewInt(1), 62)
	fact := big.NewInt(1)
	invf := []uint64{0, 0, inv2f, inv3f, inv4f, inv5f, inv6f, inv7f, inv8f, inv9f, inv10f, inv11f, inv12f, inv13f, inv14f, inv15f, inv16f}
	for n := 2; n < len(invf); n++ {
		fact.Mul(fact, big.NewInt(int64(n)))
		check("1/n!", invf[n], big.NewInt(refRound(one62, fact)))
	}
	for n, got := range map[int64]uint64{3: inv3, 5: inv5, 7: inv7, 9: inv9} {
		check("1/n", got, big.NewInt(refRound(one62, big.NewInt(n))))
	}
	// atan(k/8): against float64, which catches a wrong digit.
	for k, v := range atanEighths {
		if d := math.Abs(float64(v)/(1<<62) - math.Atan(float64(k)/8)); d > 1e-15 {
			t.Errorf("atanEighths[%d] off by %g", k, d)
		}
	}
	if atanEighths[8]*4 != q62Pi-1 && atanEighths[8]*4 != q62Pi && atanEighths[8]*4 != q62Pi+1 {
		t.Errorf("atan(1)*4 = %d, want about %d", atanEighths[8]*4, q62Pi)
	}
}

func TestSinCosTable(t *testing.T) {
	for _, tc := range []struct {
		a        Fixed
		sin, cos Fixed
	}{
		{0, 0, One},
		{HalfPi, One, 0},
		{Pi, 0, -One},
		{-HalfPi, -One, 0},
		{TwoPi, 0, One},
		{f("0.5"), 502714, 920212}, // 502713.60, 920211.70
		{f("1"), 882346, 566548},   // 882345.99, 566548.29
	} {
		s, c := SinCos(tc.a)
		if s != tc.sin || c != tc.cos || Sin(tc.a) != s || Cos(tc.a) != c {
			t.Errorf("SinCos(%v) = %d, %d; want %d, %d", tc.a, s, c, tc.sin, tc.cos)
		}
	}
}

// sweepTrig checks Sin and Cos at a and returns the larger error in ulps.
func sweepTrig(t *testing.T, a Fixed) float64 {
	s, c := SinCos(a)
	x := a.Float64() // exact: |a| < 2^33
	es, ec := ulps(s, math.Sin(x)), ulps(c, math.Cos(x))
	if es > trigTolUlps || ec > trigTolUlps {
		t.Fatalf("SinCos(%d) = %d, %d; float64 says %.9f, %.9f (errors %.3f, %.3f ulps)",
			a, s, c, math.Sin(x)*floatScale, math.Cos(x)*floatScale, es, ec)
	}
	if Sin(-a) != -s || Cos(-a) != c {
		t.Fatalf("Sin/Cos not odd/even at %d", a)
	}
	return max(es, ec)
}

func TestSinCosAccuracy(t *testing.T) {
	worst := 0.0
	// Dense: every 7th raw value over four turns each way (about 3.8M).
	for a := -4 * TwoPi; a <= 4*TwoPi; a += 7 {
		worst = max(worst, sweepTrig(t, a))
	}
	// Large angles, where the reduction matters.
	r := rand.New(rand.NewPCG(11, 12))
	for range 300000 {
		a := Fixed(r.Int64N(1<<52) >> r.UintN(52))
		if r.IntN(2) == 0 {
			a = -a
		}
		worst = max(worst, sweepTrig(t, a))
	}
	t.Logf("Sin/Cos max error %.9f raw units = %.3g", worst, worst/floatScale)
}

func TestSinCosHuge(t *testing.T) {
	// Beyond 2^33 float64(a) is no longer exact; check against big.Float
	// reduction instead: sin²+cos² and agreement with a reduced angle.
	for _, a := range []Fixed{MaxValue, MinValue, MaxValue - 12345, 1 << 60, -(1 << 58) + 7} {
		// a mod 2π computed exactly with big.Float, then float64 sin.
		x := new(big.Float).SetPrec(400).SetMantExp(new(big.Float).SetPrec(400).SetInt64(int64(a)), -FracBits)
		twoPi := new(big.Float).SetPrec(400).Mul(bigPi, big.NewFloat(2))
		q := new(big.Float).SetPrec(400).Quo(x, twoPi)
		qi, _ := q.Int(nil)
		x.Sub(x, new(big.Float).SetPrec(400).Mul(new(big.Float).SetInt(qi), twoPi))
		xr, _ := x.Float64()
		s, c := SinCos(a)
		if es, ec := ulps(s, math.Sin(xr)), ulps(c, math.Cos(xr)); es > trigTolUlps || ec > trigTolUlps {
			t.Errorf("SinCos(%d) = %d, %d; want %.3f, %.3f", a, s, c, math.Sin(xr)*floatScale, math.Cos(xr)*floatScale)
		}
	}
}

func TestAtan2Table(t *testing.T) {
	for _, tc := range []struct {
		y, x, want Fixed
	}{
		{0, 0, 0},
		{0, One, 0},
		{0, -One, Pi},
		{One, 0, HalfPi},
		{-One, 0, -HalfPi},
		{One, One, 823550}, // π/4
		{-One, -One, -2470649},
		{One, -One, 2470649},
		{-One, One, -823550},
		{0, MinValue, Pi},
		{MinValue, 0, -HalfPi},
		{MinValue, MinValue, -2470649},
		{MaxValue, MinValue, 2470649},
		{1, MaxValue, 0},
		{MaxValue, 1, HalfPi},
	} {
		if got := Atan2(tc.y, tc.x); got != tc.want {
			t.Errorf("Atan2(%d, %d) = %d, want %d", tc.y, tc.x, got, tc.want)
		}
	}
	if Atan(One) != 823550 || Atan(-One) != -823550 || Atan(0) != 0 || Atan(MaxValue) != HalfPi {
		t.Error("Atan")
	}
}

func TestAtan2Accuracy(t *testing.T) {
	worst := 0.0
	check := func(y, x Fixed) {
		got := Atan2(y, x)
		want := math.Atan2(float64(y), float64(x))
		if y == 0 && x == 0 {
			want = 0
		}
		e := ulps(got, want)
		if e > atan2TolUlps {
			t.Fatalf("Atan2(%d, %d) = %d, float64 says %.6f (error %.3f ulps)", y, x, got, want*floatScale, e)
		}
		worst = max(worst, e)
	}
	// A dense circle of directions at several radii.
	for _, radius := range []int64{1 << 10, 1 << 20, 100000 << 20, 1 << 50} {
		for i := range 200000 {
			th := float64(i) / 200000 * 2 * math.Pi // only picks test points
			check(Fixed(float64(radius)*math.Sin(th)), Fixed(float64(radius)*math.Cos(th)))
		}
	}
	// Small integer grids, where the ratio is exact and ties are likely.
	for y := Fixed(-100); y <= 100; y++ {
		for x := Fixed(-100); x <= 100; x++ {
			check(y, x)
		}
	}
	r := rand.New(rand.NewPCG(13, 14))
	for range 300000 {
		check(randRaw(r), randRaw(r))
	}
	t.Logf("Atan2 max error %.9f raw units = %.3g", worst, worst/floatScale)
}

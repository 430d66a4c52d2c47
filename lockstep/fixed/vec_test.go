package fixed

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func TestVecBasics(t *testing.T) {
	a, b := V(f("3"), f("4")), V(f("-1"), f("0.5"))
	for _, tc := range []struct {
		name      string
		got, want Vec
	}{
		{"Add", a.Add(b), V(f("2"), f("4.5"))},
		{"Sub", a.Sub(b), V(f("4"), f("3.5"))},
		{"Neg", a.Neg(), V(f("-3"), f("-4"))},
		{"Scale", a.Scale(f("1.5")), V(f("4.5"), f("6"))},
		{"Perp", a.Perp(), V(f("-4"), f("3"))},
		{"Normalize", a.Normalize(), V(f("0.6"), f("0.8"))},
		{"Normalize zero", Vec{}.Normalize(), Vec{}},
		{"Lerp", a.Lerp(b, Half), V(f("1"), f("2.25"))},
		{"Rotate quarter", V(One, 0).Rotate(HalfPi), V(0, One)},
		{"Rotate half", V(One, 0).Rotate(Pi), V(-One, 0)},
		{"FromAngle", FromAngle(Pi), V(-One, 0)},
		{"Saturating Add", V(MaxValue, MinValue).Add(V(1, -1)), V(MaxValue, MinValue)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	for _, tc := range []struct {
		name      string
		got, want Fixed
	}{
		{"Dot", a.Dot(b), f("-1")},
		{"Cross", a.Cross(b), f("5.5")},
		{"LenSq", a.LenSq(), f("25")},
		{"Len", a.Len(), f("5")},
		{"Dist", a.Dist(b), f("5.315072906367325")}, // sqrt(28.25)
		{"DistSq", a.DistSq(b), f("28.25")},
		{"Angle", V(0, One).Angle(), HalfPi},
		{"Angle zero", Vec{}.Angle(), 0},
		{"Len map diagonal", V(FromInt(100000), FromInt(100000)).Len(), f("141421.356237309505")},
		{"LenSq map diagonal", V(FromInt(100000), FromInt(100000)).LenSq(), FromInt(20000000000)},
		{"LenSq saturates", V(FromInt(1<<21), FromInt(1<<21)).LenSq(), MaxValue},
		{"Len no overflow", V(MaxValue, MaxValue).Len(), MaxValue},
		{"Len of MinValue", V(MinValue, 0).Len(), MaxValue},
		{"Dist across range", V(MinValue, 0).Dist(V(MaxValue, 0)), MaxValue},
		{"Dist huge", V(FromInt(-1<<42), 0).Dist(V(FromInt(1<<42)-1, 0)), MaxValue}, // exactly 2^43 - 2^-20
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %v (%d), want %v (%d)", tc.name, tc.got, tc.got, tc.want, tc.want)
		}
	}
	if got := a.String(); got != "(3, 4)" {
		t.Errorf("String = %q", got)
	}
}

func TestVecProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	big64 := func(a Fixed) *big.Int { return big.NewInt(int64(a)) }
	for range 100000 {
		v, w := V(randRaw(r), randRaw(r)), V(randRaw(r), randRaw(r))
		if got, want := v.Dot(w), refDot2(v.X, w.X, v.Y, w.Y); got != want {
			t.Fatalf("%v.Dot(%v) = %d, want %d", v, w, got, want)
		}
		// Cross with big.Int directly (refDot2 would need -v.Y).
		p := new(big.Int).Mul(big64(v.X), big64(w.Y))
		p.Sub(p, new(big.Int).Mul(big64(v.Y), big64(w.X)))
		if got, want := v.Cross(w), Fixed(refRound(p, bigScale)); got != want {
			t.Fatalf("%v.Cross(%v) = %d, want %d", v, w, got, want)
		}
		if got, want := v.LenSq(), refDot2(v.X, v.X, v.Y, v.Y); got != want {
			t.Fatalf("%v.LenSq() = %d, want %d", v, got, want)
		}
		if got, want := v.Len(), refHypot(big64(v.X), big64(v.Y)); got != want {
			t.Fatalf("%v.Len() = %d, want %d", v, got, want)
		}
		dx := new(big.Int).Sub(big64(v.X), big64(w.X))
		dy := new(big.Int).Sub(big64(v.Y), big64(w.Y))
		if got, want := v.Dist(w), refHypot(dx, dy); got != want {
			t.Fatalf("%v.Dist(%v) = %d, want %d", v, w, got, want)
		}
		if v.Dist(w) != w.Dist(v) {
			t.Fatalf("Dist not symmetric for %v, %v", v, w)
		}
	}
}

func TestNormalizeAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	worst := 0.0
	for i := range 200000 {
		v := V(randRaw(r), randRaw(r))
		if i%2 == 0 { // small vectors, where a naive version loses the most
			v = V(Fixed(r.IntN(41)-20), Fixed(r.IntN(41)-20))
		}
		n := v.Normalize()
		if v == (Vec{}) {
			if n != (Vec{}) {
				t.Fatalf("Normalize(0) = %v", n)
			}
			continue
		}
		x, y := float64(v.X), float64(v.Y)
		l := math.Hypot(x, y)
		e := max(ulps(n.X, x/l), ulps(n.Y, y/l))
		if e > 0.5+1e-6 {
			t.Fatalf("%d, %d: Normalize = %d, %d; want %.4f, %.4f", v.X, v.Y, n.X, n.Y, x/l*floatScale, y/l*floatScale)
		}
		worst = max(worst, e)
	}
	t.Logf("Normalize max component error %.6f raw units", worst)
}

func TestRotateAngleAccuracy(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	worstRot := 0.0
	for range 100000 {
		v := V(Fixed(r.Int64N(200001<<20)-100000<<20), Fixed(r.Int64N(200001<<20)-100000<<20))
		a := Fixed(r.Int64N(int64(2*TwoPi))) - TwoPi
		got := v.Rotate(a)
		x, y, th := v.X.Float64(), v.Y.Float64(), a.Float64()
		wx, wy := x*math.Cos(th)-y*math.Sin(th), x*math.Sin(th)+y*math.Cos(th)
		e := max(ulps(got.X, wx), ulps(got.Y, wy))
		if e > 0.5+1e-4 { // float64 at 1e5 is good to about 1e-5 raw units
			t.Fatalf("%v.Rotate(%v) = %v, float64 says (%f, %f)", v, a, got, wx, wy)
		}
		worstRot = max(worstRot, e)
		// Angle of the rotated vector is the angle of v plus a.
		if v.Len() > FromInt(100) {
			d := got.Angle().Sub(v.Angle()).Sub(a)
			for d > Pi {
				d -= TwoPi
			}
			for d < -Pi {
				d += TwoPi
			}
			if d.Abs() > 4 {
				t.Fatalf("angle of %v.Rotate(%v) off by %d raw units", v, a, d)
			}
		}
	}
	t.Logf("Rotate on a 100,000-unit map: max error %.6f raw units", worstRot)
}

func TestFromAngle(t *testing.T) {
	for a := -TwoPi; a <= TwoPi; a += 997 {
		v := FromAngle(a)
		if l := v.Len(); (l - One).Abs() > 2 {
			t.Fatalf("|FromAngle(%d)| = %v", a, l)
		}
	}
}

package fixed

import (
	"errors"
	"math"
	"math/big"
	"regexp"
	"strings"
	"testing"
)

// grammar is Parse's syntax, as a regular expression.
var grammar = regexp.MustCompile(`^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)$`)

// refParse parses a string that matches grammar with math/big: the digits
// as one integer over a power of ten, rounded half away from zero. ok is
// false when the value is out of range.
func refParse(s string) (Fixed, bool) {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	ip, fp, _ := strings.Cut(s, ".")
	num, _ := new(big.Int).SetString("0"+ip+fp, 10)
	den := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(len(fp))), nil)
	num.Lsh(num, FracBits)
	if neg {
		num.Neg(num)
	}
	q := new(big.Int).Quo(new(big.Int).Abs(num), den)
	r := new(big.Int).Sub(new(big.Int).Abs(num), new(big.Int).Mul(q, den))
	if r.Lsh(r, 1).Cmp(den) >= 0 {
		q.Add(q, bigOne)
	}
	if neg {
		q.Neg(q)
	}
	if q.Cmp(bigMaxRaw) > 0 || q.Cmp(bigMinRaw) < 0 {
		return 0, false
	}
	return Fixed(q.Int64()), true
}

// FuzzParse checks the configuration decoder: it never panics, accepts
// exactly its grammar, agrees with a math/big reference, and round-trips
// through String.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"0", "12.345", "-0.007", ".5", "7.", "+3", "", "-", ".", "1e3", " 1",
		"8796093022207.99999904632568359375", "-8796093022208", "8796093022208",
		"0.000000476837158203125", "0.0000004768371582031249999999999",
		"99999999999999999999999999", "1.2.3", "١", "--1", "0x1F",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if !grammar.MatchString(s) {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("Parse(%q) = %d, %v; want ErrSyntax", s, v, err)
			}
			return
		}
		want, ok := refParse(s)
		switch {
		case !ok:
			if !errors.Is(err, ErrRange) {
				t.Fatalf("Parse(%q) = %d, %v; want ErrRange", s, v, err)
			}
		case err != nil || v != want:
			t.Fatalf("Parse(%q) = %d, %v; want %d", s, v, err, want)
		}
		if err == nil {
			if back, err := Parse(v.String()); err != nil || back != v {
				t.Fatalf("Parse(%q) = %d, %v; want %d", v.String(), back, err, v)
			}
			var u Fixed
			if err := u.UnmarshalText([]byte(s)); err != nil || u != v {
				t.Fatalf("UnmarshalText(%q) = %d, %v", s, u, err)
			}
			for prec := range 21 {
				txt := v.Text(prec)
				back, err := Parse(txt)
				if errors.Is(err, ErrRange) && (v > MaxValue-One || v < MinValue+One) {
					continue // rounded to a decimal just outside the range
				}
				if err != nil || back.Sub(v).Abs() > One.Div(pow10(prec)).Add(2) {
					t.Fatalf("%d.Text(%d) = %q parses to %d, %v", v, prec, txt, back, err)
				}
			}
		}
	})
}

func pow10(n int) Fixed {
	p := One
	for range n {
		p = p.MulInt(10)
	}
	return p
}

// FuzzArith checks Add, Sub, Mul, Div, MulInt, DivInt and Sqrt against
// math/big on any raw operands.
func FuzzArith(f *testing.F) {
	for _, p := range [][2]int64{
		{0, 0}, {1, 1}, {-1, 1}, {math.MaxInt64, math.MinInt64}, {math.MinInt64, -1},
		{oneRaw, 3 * oneRaw}, {12944671, -7340}, {1 << 43, 1 << 19},
	} {
		f.Add(p[0], p[1])
	}
	f.Fuzz(func(t *testing.T, x, y int64) {
		a, b := Fixed(x), Fixed(y)
		sum := new(big.Int).Add(big.NewInt(x), big.NewInt(y))
		if got, want := a.Add(b), Fixed(refSat(sum)); got != want {
			t.Fatalf("%d.Add(%d) = %d, want %d", a, b, got, want)
		}
		diff := new(big.Int).Sub(big.NewInt(x), big.NewInt(y))
		if got, want := a.Sub(b), Fixed(refSat(diff)); got != want {
			t.Fatalf("%d.Sub(%d) = %d, want %d", a, b, got, want)
		}
		if got, want := a.Mul(b), refMul(a, b); got != want {
			t.Fatalf("%d.Mul(%d) = %d, want %d", a, b, got, want)
		}
		if got, want := a.Div(b), refDiv(a, b); got != want {
			t.Fatalf("%d.Div(%d) = %d, want %d", a, b, got, want)
		}
		prod := new(big.Int).Mul(big.NewInt(x), big.NewInt(y))
		if got, want := a.MulInt(y), Fixed(refSat(prod)); got != want {
			t.Fatalf("%d.MulInt(%d) = %d, want %d", a, y, got, want)
		}
		if y != 0 {
			if got, want := a.DivInt(y), Fixed(refRound(big.NewInt(x), big.NewInt(y))); got != want {
				t.Fatalf("%d.DivInt(%d) = %d, want %d", a, y, got, want)
			}
		}
		if got, want := a.Sqrt(), refSqrt(a); got != want {
			t.Fatalf("%d.Sqrt() = %d, want %d", a, got, want)
		}
		// The rest only has to stay in range and not panic.
		_ = a.Floor() + a.Ceil() + a.Round() + a.Frac() + a.Abs() + a.Neg() + Lerp(a, b, b)
		_ = a.Int()
		_ = a.Clamp(b, a)
		_ = a.String() + a.Text(int(y%30))
	})
}

// FuzzTrig checks Sin, Cos, Atan2 and the vector functions on any raw
// operands: no panics, results in range, and agreement with float64 or
// math/big where those are exact enough.
func FuzzTrig(f *testing.F) {
	for _, p := range [][4]int64{
		{0, 0, 0, 0}, {oneRaw, 0, 0, oneRaw}, {math.MaxInt64, math.MinInt64, -1, 1},
		{math.MinInt64, math.MinInt64, math.MinInt64, math.MinInt64}, {3294199, 6588397, -5, 7},
	} {
		f.Add(p[0], p[1], p[2], p[3])
	}
	f.Fuzz(func(t *testing.T, x1, y1, x2, y2 int64) {
		a := Fixed(x1)
		s, c := SinCos(a)
		if s < -One || s > One || c < -One || c > One {
			t.Fatalf("SinCos(%d) = %d, %d out of [-1, 1]", a, s, c)
		}
		if x1 > -1<<52 && x1 < 1<<52 {
			fl := a.Float64()
			if es, ec := ulps(s, math.Sin(fl)), ulps(c, math.Cos(fl)); es > trigTolUlps || ec > trigTolUlps {
				t.Fatalf("SinCos(%d) = %d, %d; errors %.3f, %.3f ulps", a, s, c, es, ec)
			}
		}
		ang := Atan2(Fixed(y1), Fixed(x1))
		if ang < -Pi || ang > Pi {
			t.Fatalf("Atan2(%d, %d) = %d out of [-Pi, Pi]", y1, x1, ang)
		}
		if x1 != 0 || y1 != 0 {
			want := math.Atan2(float64(y1), float64(x1))
			if e := ulps(ang, want); e > atan2TolUlps {
				t.Fatalf("Atan2(%d, %d) = %d; error %.3f ulps", y1, x1, ang, e)
			}
		}
		v, w := V(Fixed(x1), Fixed(y1)), V(Fixed(x2), Fixed(y2))
		b := func(a Fixed) *big.Int { return big.NewInt(int64(a)) }
		if got, want := v.Len(), refHypot(b(v.X), b(v.Y)); got != want {
			t.Fatalf("%v.Len() = %d, want %d", v, got, want)
		}
		dx, dy := new(big.Int).Sub(b(v.X), b(w.X)), new(big.Int).Sub(b(v.Y), b(w.Y))
		if got, want := v.Dist(w), refHypot(dx, dy); got != want {
			t.Fatalf("%v.Dist(%v) = %d, want %d", v, w, got, want)
		}
		if got, want := v.Dot(w), refDot2(v.X, w.X, v.Y, w.Y); got != want {
			t.Fatalf("%v.Dot(%v) = %d, want %d", v, w, got, want)
		}
		n := v.Normalize()
		if v != (Vec{}) {
			if l := n.Len(); l < One-2 || l > One+2 {
				t.Fatalf("|%v.Normalize()| = %d", v, l)
			}
		}
		_ = v.Rotate(Fixed(x2)).Add(w.Scale(Fixed(y2))).Sub(v.Perp()).Neg()
		_ = v.Cross(w) + v.LenSq() + v.DistSq(w) + v.Angle()
		_ = v.Lerp(w, Fixed(x2)).String()
		_ = FromAngle(Fixed(y2))
	})
}

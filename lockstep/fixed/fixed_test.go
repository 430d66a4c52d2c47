package fixed

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

func f(s string) Fixed {
	v, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return v
}

func TestConstants(t *testing.T) {
	round := func(x *big.Float) int64 {
		x = new(big.Float).SetPrec(300).SetMantExp(x, FracBits)
		x.Add(x, big.NewFloat(0.5))
		i, _ := x.Int(nil)
		return i.Int64()
	}
	two := big.NewFloat(2)
	for _, tc := range []struct {
		name string
		got  Fixed
		want int64
	}{
		{"Pi", Pi, round(bigPi)},
		{"TwoPi", TwoPi, round(new(big.Float).SetPrec(300).Mul(bigPi, two))},
		{"HalfPi", HalfPi, round(new(big.Float).SetPrec(300).Quo(bigPi, two))},
		{"One", One, 1 << 20},
		{"Half", Half, 1 << 19},
		{"Epsilon", Epsilon, 1},
	} {
		if int64(tc.got) != tc.want {
			t.Errorf("%s = %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

func TestFromInt(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want Fixed
	}{
		{0, 0},
		{1, One},
		{-3, -3 * One},
		{100000, 100000 << 20},
		{1<<43 - 1, (1<<43 - 1) << 20},
		{1 << 43, MaxValue},
		{-1 << 43, MinValue},
		{-1<<43 - 1, MinValue},
		{math.MaxInt64, MaxValue},
		{math.MinInt64, MinValue},
	} {
		if got := FromInt(tc.n); got != tc.want {
			t.Errorf("FromInt(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

func TestFromFraction(t *testing.T) {
	for _, tc := range []struct {
		num, den int64
		want     Fixed
	}{
		{1, 2, Half},
		{-1, 2, -Half},
		{1, 1000, 1049}, // 1048.576
		{-1, 1000, -1049},
		{1, 3, 349525},          // 349525.33
		{2, 3, 699051},          // 699050.67
		{1, 1 << 21, 1},         // exactly half a raw unit: away from zero
		{-1, 1 << 21, -1},       // and for negatives
		{1, 1<<21 + 1, 0},       // just under half
		{7, 0, MaxValue},        // division by zero saturates
		{-7, 0, MinValue},       //
		{0, 0, 0},               //
		{1 << 43, 1, MaxValue},  // out of range
		{-1 << 43, 1, MinValue}, // exactly MinValue
		{math.MinInt64, -1, MaxValue},
	} {
		if got := FromFraction(tc.num, tc.den); got != tc.want {
			t.Errorf("FromFraction(%d, %d) = %d, want %d", tc.num, tc.den, got, tc.want)
		}
	}
}

func TestAddSubSaturate(t *testing.T) {
	for _, tc := range []struct {
		a, b, sum, diff Fixed
	}{
		{One, Half, One + Half, Half},
		{MaxValue, 1, MaxValue, MaxValue - 1},
		{MaxValue, MaxValue, MaxValue, 0},
		{MinValue, -1, MinValue, MinValue + 1},
		{MinValue, 1, MinValue + 1, MinValue},
		{MinValue, MinValue, MinValue, 0},
		{MaxValue, MinValue, -1, MaxValue},
		{MinValue, MaxValue, -1, MinValue},
		{-5, 3, -2, -8},
	} {
		if got := tc.a.Add(tc.b); got != tc.sum {
			t.Errorf("%d.Add(%d) = %d, want %d", tc.a, tc.b, got, tc.sum)
		}
		if got := tc.a.Sub(tc.b); got != tc.diff {
			t.Errorf("%d.Sub(%d) = %d, want %d", tc.a, tc.b, got, tc.diff)
		}
	}
	if MinValue.Neg() != MaxValue || MinValue.Abs() != MaxValue || MaxValue.Neg() != MinValue+1 {
		t.Error("Neg/Abs do not saturate at MinValue")
	}
	if One.Neg() != -One || (-One).Abs() != One || Zero.Abs() != 0 {
		t.Error("Neg/Abs wrong on small values")
	}
}

func TestMulDivTable(t *testing.T) {
	for _, tc := range []struct {
		a, b, mul, div Fixed
	}{
		{f("1.5"), f("2"), f("3"), f("0.75")},
		{f("-1.5"), f("2"), f("-3"), f("-0.75")},
		{f("-1.5"), f("-2"), f("3"), f("0.75")},
		{f("100000"), f("100000"), f("10000000000"), One},
		{1, Half, 1, 2},                        // 0.5 raw: ties away from zero
		{-1, Half, -1, -2},                     //
		{3, Half, 2, 6},                        // 1.5 raw
		{1, 1, 0, One},                         // 2^-40 rounds to 0
		{MaxValue, 2 * One, MaxValue, 1 << 62}, // 2^62 - 0.5 raw rounds up
		{MinValue, 2 * One, MinValue, MinValue / 2},
		{MinValue, -One, MaxValue, MaxValue},
		{MaxValue, Epsilon, 1 << 43, MaxValue},
		{One, 0, 0, MaxValue},
		{-One, 0, 0, MinValue},
		{0, 0, 0, 0},
		{One, 3 * One, 3 * One, 349525},
		{2 * One, 3 * One, 6 * One, 699051},
	} {
		if got := tc.a.Mul(tc.b); got != tc.mul {
			t.Errorf("%v.Mul(%v) = %d, want %d", tc.a, tc.b, got, tc.mul)
		}
		if got := tc.a.Div(tc.b); got != tc.div {
			t.Errorf("%v.Div(%v) = %d, want %d", tc.a, tc.b, got, tc.div)
		}
	}
}

func TestMulDivProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		a, b := randRaw(r), randRaw(r)
		if got, want := a.Mul(b), refMul(a, b); got != want {
			t.Fatalf("%d.Mul(%d) = %d, want %d", a, b, got, want)
		}
		if got, want := a.Div(b), refDiv(a, b); got != want {
			t.Fatalf("%d.Div(%d) = %d, want %d", a, b, got, want)
		}
	}
}

func TestMulIntDivInt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 100000 {
		a, n := randRaw(r), int64(randRaw(r))
		if r.IntN(2) == 0 {
			n = int64(r.IntN(2001) - 1000)
		}
		p := new(big.Int).Mul(big.NewInt(int64(a)), big.NewInt(n))
		if got, want := a.MulInt(n), Fixed(refSat(p)); got != want {
			t.Fatalf("%d.MulInt(%d) = %d, want %d", a, n, got, want)
		}
		want := a.Div(0)
		if n != 0 {
			want = Fixed(refRound(big.NewInt(int64(a)), big.NewInt(n)))
		}
		if got := a.DivInt(n); got != want {
			t.Fatalf("%d.DivInt(%d) = %d, want %d", a, n, got, want)
		}
	}
}

func TestSqrt(t *testing.T) {
	for _, tc := range []struct {
		a, want Fixed
	}{
		{0, 0},
		{-One, 0},
		{MinValue, 0},
		{One, One},
		{4 * One, 2 * One},
		{f("2"), 1482910}, // 1.41421356 * 2^20 = 1482910.40
		{f("10000000000"), f("100000")},
		{1, 1024},                 // sqrt(2^-20) = 2^-10
		{MaxValue, 3109888511975}, // sqrt((2^63-1) * 2^20) = 3109888511975.57
	} {
		if got := tc.a.Sqrt(); got != tc.want {
			t.Errorf("%v.Sqrt() = %d, want %d", tc.a, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(5, 6))
	for range 200000 {
		a := randRaw(r)
		if got, want := a.Sqrt(), refSqrt(a); got != want {
			t.Fatalf("%d.Sqrt() = %d, want %d", a, got, want)
		}
	}
	// Every perfect square in a range, and its neighbours.
	for i := int64(0); i < 5000; i++ {
		for _, a := range []int64{i*i - 1, i * i, i*i + 1} {
			if got, want := Fixed(a).Sqrt(), refSqrt(Fixed(a)); got != want {
				t.Fatalf("%d.Sqrt() = %d, want %d", a, got, want)
			}
		}
	}
}

func TestSqrt128Edges(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	check := func(hi, lo uint64) {
		n := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		n.Or(n, new(big.Int).SetUint64(lo))
		want := refSqrtInt(n)
		if want.BitLen() > 64 {
			want.SetUint64(math.MaxUint64)
		}
		if got := sqrt128(hi, lo); got != want.Uint64() {
			t.Fatalf("sqrt128(%#x, %#x) = %d, want %d", hi, lo, got, want)
		}
	}
	const m = math.MaxUint64
	for _, e := range [][2]uint64{
		{0, 0}, {0, 1}, {0, 2}, {0, m}, {1, 0}, {m, m}, {m, 0}, {m - 1, 0}, {m - 1, m},
		{m - 2, 0}, {m - 3, 4}, {m - 3, 3}, {1 << 63, 0}, {1<<63 - 1, m}, {1 << 62, 0},
	} {
		check(e[0], e[1])
	}
	for range 100000 {
		check(r.Uint64()>>r.UintN(64), r.Uint64())
	}
	for range 10000 { // near the top, where s+1 would overflow
		s := m - r.Uint64N(1000)
		hi, lo := bitsMul(s, s)
		check(hi, lo)
		lo2, c := lo+1, uint64(0)
		if lo2 == 0 {
			c = 1
		}
		check(hi+c, lo2)
	}
}

func bitsMul(a, b uint64) (uint64, uint64) {
	p := new(big.Int).Mul(new(big.Int).SetUint64(a), new(big.Int).SetUint64(b))
	lo := new(big.Int).And(p, new(big.Int).SetUint64(math.MaxUint64)).Uint64()
	return new(big.Int).Rsh(p, 64).Uint64(), lo
}

func TestRounding(t *testing.T) {
	for _, tc := range []struct {
		a                        string
		floor, ceil, round, frac string
		integer                  int64
	}{
		{"2.7", "2", "3", "3", "0.7", 2},
		{"-2.7", "-3", "-2", "-3", "0.3", -2},
		{"2.5", "2", "3", "3", "0.5", 2},
		{"-2.5", "-3", "-2", "-3", "0.5", -2},
		{"2.25", "2", "3", "2", "0.25", 2},
		{"-2.25", "-3", "-2", "-2", "0.75", -2},
		{"3", "3", "3", "3", "0", 3},
		{"-3", "-3", "-3", "-3", "0", -3},
		{"0", "0", "0", "0", "0", 0},
		{"-0.00001", "-1", "0", "0", "0.99999", 0},
	} {
		a := f(tc.a)
		for _, c := range []struct {
			name      string
			got, want Fixed
		}{
			{"Floor", a.Floor(), f(tc.floor)},
			{"Ceil", a.Ceil(), f(tc.ceil)},
			{"Round", a.Round(), f(tc.round)},
			{"Frac", a.Frac(), f(tc.frac)},
		} {
			if c.got != c.want {
				t.Errorf("%s.%s() = %v, want %v", tc.a, c.name, c.got, c.want)
			}
		}
		if got := a.Int(); got != tc.integer {
			t.Errorf("%s.Int() = %d, want %d", tc.a, got, tc.integer)
		}
	}
	top := MaxValue.Floor()
	if MaxValue.Ceil() != top || MaxValue.Round() != top || (top+1).Ceil() != top {
		t.Errorf("Ceil/Round of MaxValue do not saturate to %v", top)
	}
	if MinValue.Floor() != MinValue || MinValue.Ceil() != MinValue || MinValue.Round() != MinValue {
		t.Error("Floor/Ceil/Round of MinValue changed it")
	}
	if got := (MinValue + 1).Round(); got != MinValue {
		t.Errorf("(MinValue+1).Round() = %d", got)
	}
	if MaxValue.Int() != 1<<43-1 || MinValue.Int() != -1<<43 {
		t.Error("Int at the range ends")
	}
}

func TestMinMaxClampLerpSign(t *testing.T) {
	a, b := f("1.5"), f("-2")
	if a.Min(b) != b || a.Max(b) != a || b.Min(a) != b || b.Max(a) != a {
		t.Error("Min/Max")
	}
	for _, tc := range []struct{ v, lo, hi, want string }{
		{"5", "0", "3", "3"}, {"-1", "0", "3", "0"}, {"2", "0", "3", "2"}, {"2", "3", "0", "0"},
	} {
		if got := f(tc.v).Clamp(f(tc.lo), f(tc.hi)); got != f(tc.want) {
			t.Errorf("%s.Clamp(%s, %s) = %v, want %s", tc.v, tc.lo, tc.hi, got, tc.want)
		}
	}
	for _, tc := range []struct{ a, b, t, want string }{
		{"0", "10", "0", "0"}, {"0", "10", "1", "10"}, {"0", "10", "0.5", "5"},
		{"-4", "4", "0.25", "-2"}, {"10", "0", "0.1", "8.999996185302734375"}, // 0.1 is 0.10000038
	} {
		if got := Lerp(f(tc.a), f(tc.b), f(tc.t)); (got - f(tc.want)).Abs() > 1 {
			t.Errorf("Lerp(%s, %s, %s) = %v, want %s", tc.a, tc.b, tc.t, got, tc.want)
		}
	}
	if One.Sign() != 1 || Zero.Sign() != 0 || MinValue.Sign() != -1 {
		t.Error("Sign")
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		s    string
		want Fixed
	}{
		{"0", 0},
		{"-0", 0},
		{"+0.0", 0},
		{"1", One},
		{"12.5", 12*One + Half},
		{"-12.5", -12*One - Half},
		{".5", Half},
		{"-.5", -Half},
		{"7.", 7 * One},
		{"0.001", 1049},
		{"-0.001", -1049},
		{"100000.001", 100000<<20 + 1049},
		{"0.000000476837158203125", 1},   // exactly half a raw unit: away from zero
		{"-0.000000476837158203125", -1}, //
		{"0.000000476837158203124999999999999", 0},
		{"0.0000004768371582031250000000000001", 1},
		{"0.00000095367431640625", 1},
		{"000000000000000000000000000000000012", 12 * One},
		{"8796093022207.99999904632568359375", MaxValue},
		{"8796093022207.999999523", MaxValue}, // rounds down to MaxValue
		{"-8796093022208", MinValue},
		{"-8796093022207.9999995", MinValue + 1}, // .9999995 is 1048575.48 raw
		{"-8796093022207.9999996", MinValue},     // rounds to MinValue
		{"3.14159265358979323846264338327950288", Pi},
	} {
		got, err := Parse(tc.s)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %d, %v; want %d", tc.s, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		s    string
		want error
	}{
		{"", ErrSyntax},
		{"-", ErrSyntax},
		{"+", ErrSyntax},
		{".", ErrSyntax},
		{"-.", ErrSyntax},
		{" 1", ErrSyntax},
		{"1 ", ErrSyntax},
		{"1e3", ErrSyntax},
		{"1_000", ErrSyntax},
		{"1.2.3", ErrSyntax},
		{"--1", ErrSyntax},
		{"0x10", ErrSyntax},
		{"NaN", ErrSyntax},
		{"Inf", ErrSyntax},
		{"١", ErrSyntax},
		{"1.5\x00", ErrSyntax},
		{"8796093022208", ErrRange},
		{"8796093022207.9999996", ErrRange}, // rounds up past MaxValue
		{"-8796093022208.0000005", ErrRange},
		{"-8796093022209", ErrRange},
		{"99999999999999999999999999999999999999", ErrRange},
		{"99999999999999999999999999999999999999x", ErrSyntax},
	} {
		got, err := Parse(tc.s)
		if !errors.Is(err, tc.want) || got != 0 {
			t.Errorf("Parse(%q) = %d, %v; want %v", tc.s, got, err, tc.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, tc := range []struct {
		a    Fixed
		want string
	}{
		{0, "0"},
		{One, "1"},
		{-One, "-1"},
		{Half, "0.5"},
		{-Half - One, "-1.5"},
		{1, "0.00000095367431640625"},
		{-1, "-0.00000095367431640625"},
		{1049, "0.00100040435791015625"},
		{MaxValue, "8796093022207.99999904632568359375"},
		{MinValue, "-8796093022208"},
		{Pi, "3.14159297943115234375"},
	} {
		if got := tc.a.String(); got != tc.want {
			t.Errorf("String(%d) = %q, want %q", tc.a, got, tc.want)
		}
	}
	r := rand.New(rand.NewPCG(9, 10))
	for range 100000 {
		a := randRaw(r)
		if back, err := Parse(a.String()); err != nil || back != a {
			t.Fatalf("Parse(%q) = %d, %v; want %d", a.String(), back, err, a)
		}
	}
}

func TestText(t *testing.T) {
	for _, tc := range []struct {
		a    Fixed
		prec int
		want string
	}{
		{f("1.25"), 1, "1.3"},
		{f("-1.25"), 1, "-1.3"},
		{f("1.25"), 0, "1"},
		{f("1.5"), 0, "2"},
		{f("-1.5"), 0, "-2"},
		{f("9.9999"), 2, "10.00"},
		{f("-9.9999"), 3, "-10.000"},
		{f("0.001"), 3, "0.001"},
		{f("0.001"), 6, "0.001000"},
		{f("-0.0001"), 2, "0.00"}, // no negative zero
		{f("12"), -5, "12"},
		{1, 20, "0.00000095367431640625"},
		{1, 99, "0.00000095367431640625"},
		{MaxValue, 0, "8796093022208"},
		{MinValue, 2, "-8796093022208.00"},
		{Pi, 5, "3.14159"},
	} {
		if got := tc.a.Text(tc.prec); got != tc.want {
			t.Errorf("%v.Text(%d) = %q, want %q", tc.a, tc.prec, got, tc.want)
		}
	}
}

func TestTextMarshaling(t *testing.T) {
	type config struct {
		Speed  Fixed `json:"speed"`
		Radius Fixed `json:"radius"`
	}
	in := config{Speed: f("12.5"), Radius: f("-0.25")}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"speed":"12.5","radius":"-0.25"}` {
		t.Errorf("json = %s", b)
	}
	var out config
	if err := json.Unmarshal([]byte(`{"speed":"12.5","radius":"-0.25"}`), &out); err != nil || out != in {
		t.Errorf("json.Unmarshal = %+v, %v", out, err)
	}
	err = json.Unmarshal([]byte(`{"speed":"1e3"}`), &out)
	if !errors.Is(err, ErrSyntax) {
		t.Errorf("json.Unmarshal of 1e3: %v, want ErrSyntax", err)
	}
}

func TestFloat64(t *testing.T) {
	if f("-2.5").Float64() != -2.5 || Epsilon.Float64() != 1.0/(1<<20) {
		t.Error("Float64")
	}
}

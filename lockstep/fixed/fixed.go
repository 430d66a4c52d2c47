package fixed

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
)

// Fixed is a signed fixed-point number with 20 fraction bits (Q44.20):
// the value is the int64 divided by 2^20. The zero value is 0. Compare Fixed values with the
// ordinary operators (==, <, ...) and the built-in min and max.
type Fixed int64

// FracBits is the number of fraction bits in a Fixed.
const FracBits = 20

const (
	oneRaw   = int64(1) << FracBits
	fracMask = uint64(oneRaw - 1)
	halfRaw  = uint64(1) << (FracBits - 1)
)

// Constants. The angles are the nearest Fixed to the true value.
const (
	// Zero is 0.
	Zero Fixed = 0
	// One is 1.
	One Fixed = Fixed(oneRaw)
	// Half is 0.5.
	Half Fixed = Fixed(oneRaw / 2)
	// Epsilon is the smallest positive Fixed, 2^-20.
	Epsilon Fixed = 1
	// MaxValue is the largest Fixed, just under 2^43.
	MaxValue Fixed = math.MaxInt64
	// MinValue is the smallest Fixed, -2^43.
	MinValue Fixed = math.MinInt64
	// Pi is π rounded to the nearest Fixed.
	Pi Fixed = 3294199
	// TwoPi is 2π rounded to the nearest Fixed (not exactly 2*Pi).
	TwoPi Fixed = 6588397
	// HalfPi is π/2 rounded to the nearest Fixed.
	HalfPi Fixed = 1647099
)

// FromInt returns n as a Fixed, saturating outside [MinValue, MaxValue].
func FromInt(n int64) Fixed {
	switch {
	case n > math.MaxInt64>>FracBits:
		return MaxValue
	case n < math.MinInt64>>FracBits:
		return MinValue
	}
	return Fixed(n << FracBits)
}

// FromFraction returns num/den rounded to the nearest Fixed, ties away from
// zero, saturating like Div (den == 0 gives MaxValue, MinValue or 0 by the
// sign of num).
func FromFraction(num, den int64) Fixed {
	return Fixed(num).Div(Fixed(den))
}

// FromRaw returns the Fixed whose raw Q44.20 representation is raw, that is
// raw/2^20.
func FromRaw(raw int64) Fixed { return Fixed(raw) }

// Raw returns the raw Q44.20 representation of a: a*2^20. It is the form to
// store, send and hash.
func (a Fixed) Raw() int64 { return int64(a) }

// Float64 returns a as a float64, for rendering and logging only. Never feed
// the result back into the simulation: it would make the simulation depend
// on float arithmetic, which is not deterministic across platforms.
func (a Fixed) Float64() float64 { return float64(a) / float64(oneRaw) }

// mag returns |a| as a uint64; |MinValue| = 2^63 fits.
func mag(a Fixed) uint64 {
	if a < 0 {
		return -uint64(a)
	}
	return uint64(a)
}

// fromMag returns the Fixed with magnitude m and the given sign, saturating.
func fromMag(neg bool, m uint64) Fixed {
	if neg {
		if m >= 1<<63 {
			return MinValue
		}
		return -Fixed(m)
	}
	if m > math.MaxInt64 {
		return MaxValue
	}
	return Fixed(m)
}

// fromMag128 divides the 128-bit magnitude hi:lo by 2^shift (1 <= shift <=
// 63), rounding to nearest with ties away from zero, applies the sign and
// saturates. With shift = FracBits it turns a product of two Fixed into a
// Fixed.
func fromMag128(neg bool, hi, lo uint64, shift uint) Fixed {
	var c uint64
	lo, c = bits.Add64(lo, 1<<(shift-1), 0)
	hi += c
	if hi>>shift != 0 {
		return saturate(neg)
	}
	return fromMag(neg, hi<<(64-shift)|lo>>shift)
}

func saturate(neg bool) Fixed {
	if neg {
		return MinValue
	}
	return MaxValue
}

// Add returns a+b, saturating.
func (a Fixed) Add(b Fixed) Fixed {
	s := a + b
	// Overflow iff the operands have the same sign and the sum does not.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return saturate(a < 0)
	}
	return s
}

// Sub returns a-b, saturating.
func (a Fixed) Sub(b Fixed) Fixed {
	d := a - b
	// Overflow iff the operands have different signs and the difference
	// has the sign of b.
	if (a >= 0) != (b >= 0) && (d >= 0) != (a >= 0) {
		return saturate(a < 0)
	}
	return d
}

// Neg returns -a, saturating (-MinValue is MaxValue).
func (a Fixed) Neg() Fixed {
	if a == MinValue {
		return MaxValue
	}
	return -a
}

// Abs returns |a|, saturating (|MinValue| is MaxValue).
func (a Fixed) Abs() Fixed {
	if a < 0 {
		return a.Neg()
	}
	return a
}

// Sign returns -1, 0 or +1 by the sign of a.
func (a Fixed) Sign() int {
	switch {
	case a < 0:
		return -1
	case a > 0:
		return 1
	}
	return 0
}

// Mul returns a*b rounded to the nearest Fixed, ties away from zero,
// saturating. The product is exact in 128 bits before rounding.
func (a Fixed) Mul(b Fixed) Fixed {
	hi, lo := bits.Mul64(mag(a), mag(b))
	return fromMag128((a < 0) != (b < 0), hi, lo, FracBits)
}

// Div returns a/b rounded to the nearest Fixed, ties away from zero,
// saturating. Division by zero saturates: MaxValue for a > 0, MinValue for
// a < 0, and 0 for 0/0.
func (a Fixed) Div(b Fixed) Fixed {
	if b == 0 {
		if a == 0 {
			return 0
		}
		return saturate(a < 0)
	}
	neg := (a < 0) != (b < 0)
	ua, ub := mag(a), mag(b)
	hi, lo := ua>>(64-FracBits), ua<<FracBits
	if hi >= ub {
		return saturate(neg)
	}
	q, r := bits.Div64(hi, lo, ub)
	if r >= ub-r { // 2r >= ub: round up
		q++
	}
	return fromMag(neg, q)
}

// MulInt returns a*n, saturating. It is exact.
func (a Fixed) MulInt(n int64) Fixed {
	hi, lo := bits.Mul64(mag(a), mag(Fixed(n)))
	neg := (a < 0) != (n < 0)
	if hi != 0 {
		return saturate(neg)
	}
	return fromMag(neg, lo)
}

// DivInt returns a/n rounded to the nearest Fixed, ties away from zero.
// Division by zero saturates like Div.
func (a Fixed) DivInt(n int64) Fixed {
	if n == 0 {
		return a.Div(0)
	}
	ua, un := mag(a), mag(Fixed(n))
	q, r := ua/un, ua%un
	if r >= un-r {
		q++
	}
	return fromMag((a < 0) != (n < 0), q)
}

// Sqrt returns the square root of a, correctly rounded to the nearest
// Fixed. The square root of a negative number is 0.
func (a Fixed) Sqrt() Fixed {
	if a <= 0 {
		return 0
	}
	u := uint64(a)
	// sqrt(a/2^20) * 2^20 = sqrt(a * 2^20).
	return Fixed(sqrt128(u>>(64-FracBits), u<<FracBits))
}

// sqrt128 returns the square root of the 128-bit integer hi:lo rounded to
// the nearest integer, saturated to math.MaxUint64.
func sqrt128(hi, lo uint64) uint64 {
	s := isqrt128(hi, lo)
	// Round up when n - s² > s, i.e. n >= (s+1/2)² (never a tie: n is an
	// integer).
	sh, sl := bits.Mul64(s, s)
	rl, b := bits.Sub64(lo, sl, 0)
	rh, _ := bits.Sub64(hi, sh, b)
	if (rh != 0 || rl > s) && s != math.MaxUint64 {
		s++
	}
	return s
}

// isqrt128 returns floor(sqrt(hi:lo)) by Newton's iteration from above.
func isqrt128(hi, lo uint64) uint64 {
	if hi == 0 {
		return isqrt64(lo)
	}
	n := 64 + bits.Len64(hi)    // bit length of the input, 65..128
	x := uint64(math.MaxUint64) // >= sqrt(n) for n = 127, 128 bits
	if e := (n + 1) / 2; e < 64 {
		x = uint64(1) << e // 2^ceil(n/2) >= sqrt
	}
	for {
		// Invariant: x >= floor(sqrt(n)). If hi >= x then n >= x*2^64 > x²,
		// so x is also <= floor(sqrt(n)): it is the answer. Otherwise the
		// quotient fits in 64 bits.
		if hi >= x {
			return x
		}
		q, _ := bits.Div64(hi, lo, x)
		s, c := bits.Add64(x, q, 0)
		y := s>>1 | c<<63
		if y >= x {
			return x
		}
		x = y
	}
}

// isqrt64 returns floor(sqrt(n)).
func isqrt64(n uint64) uint64 {
	if n < 2 {
		return n
	}
	x := uint64(1) << ((bits.Len64(n) + 1) / 2) // >= sqrt(n), < 2^33
	for {
		y := (x + n/x) >> 1
		if y >= x {
			return x
		}
		x = y
	}
}

// Min returns the smaller of a and b (the built-in min works too).
func (a Fixed) Min(b Fixed) Fixed { return min(a, b) }

// Max returns the larger of a and b (the built-in max works too).
func (a Fixed) Max(b Fixed) Fixed { return max(a, b) }

// Clamp returns a limited to [lo, hi]: lo if a < lo, hi if a > hi. If
// lo > hi the result is hi.
func (a Fixed) Clamp(lo, hi Fixed) Fixed { return min(max(a, lo), hi) }

// Floor returns the largest integral Fixed <= a.
func (a Fixed) Floor() Fixed { return a &^ Fixed(fracMask) }

// Ceil returns the smallest integral Fixed >= a, saturating to the largest
// integral Fixed (MaxValue.Floor()) above it.
func (a Fixed) Ceil() Fixed {
	if a > MaxValue-Fixed(fracMask) {
		return MaxValue.Floor()
	}
	return (a + Fixed(fracMask)).Floor()
}

// Round returns a rounded to the nearest integral Fixed, ties away from zero,
// saturating like Ceil.
func (a Fixed) Round() Fixed {
	if a < 0 {
		return fromMag(true, (mag(a)+halfRaw)&^fracMask)
	}
	if a > MaxValue-Fixed(halfRaw) {
		return MaxValue.Floor()
	}
	return (a + Fixed(halfRaw)).Floor()
}

// Int returns the integer part of a, truncated toward zero like a Go
// float-to-int conversion: 2.7 gives 2, -2.7 gives -2. Use Floor, Ceil or
// Round first for the other directions.
func (a Fixed) Int() int64 { return int64(a) / oneRaw }

// Frac returns the fractional part of a, a - a.Floor(), in [0, 1).
func (a Fixed) Frac() Fixed { return a & Fixed(fracMask) }

// Lerp returns a + (b-a)*t: a at t = 0, b at t = 1, saturating.
func Lerp(a, b, t Fixed) Fixed { return a.Add(b.Sub(a).Mul(t)) }

// String returns a in decimal, exactly: every Fixed has a finite decimal
// expansion of at most 20 fraction digits. Trailing zeros are dropped, and
// an integral value has no point ("-1.5", "3", "0.00000095367431640625").
// Parse(a.String()) returns a.
func (a Fixed) String() string {
	var buf [48]byte
	return string(a.AppendText(buf[:0]))
}

// AppendText appends a.String() to b. It never fails.
func (a Fixed) AppendText(b []byte) []byte {
	m := mag(a)
	if a < 0 {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, m>>FracBits, 10)
	f := m & fracMask
	if f != 0 {
		b = append(b, '.')
		for f != 0 {
			f *= 10
			b = append(b, byte('0'+f>>FracBits))
			f &= fracMask
		}
	}
	return b
}

// Text returns a in decimal with exactly prec fraction digits, rounded half
// away from zero; prec is limited to [0, 20]. Text(3) of 1.0005 is "1.001".
func (a Fixed) Text(prec int) string {
	prec = min(max(prec, 0), 20)
	m := mag(a)
	ip := m >> FracBits
	var digits [21]byte // the exact expansion, 20 digits, plus one zero
	f := m & fracMask
	for i := range 20 {
		f *= 10
		digits[i] = byte(f >> FracBits)
		f &= fracMask
	}
	if digits[prec] >= 5 { // half or more: away from zero
		i := prec - 1
		for ; i >= 0; i-- {
			if digits[i] < 9 {
				digits[i]++
				break
			}
			digits[i] = 0
		}
		if i < 0 {
			ip++ // at most 2^43: no overflow
		}
	}
	b := make([]byte, 0, 48)
	nonzero := ip != 0
	for _, d := range digits[:prec] {
		nonzero = nonzero || d != 0
	}
	if a < 0 && nonzero {
		b = append(b, '-')
	}
	b = strconv.AppendUint(b, ip, 10)
	if prec > 0 {
		b = append(b, '.')
		for _, d := range digits[:prec] {
			b = append(b, '0'+d)
		}
	}
	return string(b)
}

// MarshalText implements encoding.TextMarshaler with String, so a Fixed
// appears in JSON and other text configuration as an exact decimal string.
func (a Fixed) MarshalText() ([]byte, error) { return a.AppendText(nil), nil }

// UnmarshalText implements encoding.TextUnmarshaler with Parse.
func (a *Fixed) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// fracDigits is the number of fraction digits Parse takes into account; the
// rest only need checking for syntax. 21 digits decide the rounding exactly:
// with n >= 21 digits the scaled value d*2^20/10^n lies a multiple of
// 2^20/10^n away from a rounding midpoint (or on one), and everything after
// the n-th digit adds less than that, so it cannot move the value across a
// midpoint; on a midpoint it rounds away from zero either way.
const fracDigits = 21

// fracDiv is 10^21 / 2^20 = 2 * 5^21: d/fracDiv = d*2^20/10^21.
const fracDiv = 2 * 476837158203125

// Parse returns the Fixed nearest to the decimal number s, ties away from
// zero. s is an optional sign, decimal digits, and optionally a point and
// more digits, with at least one digit in all ("12.345", "-0.5", ".5", "7.",
// "+3"); anything else, including spaces and exponents, is ErrSyntax. A
// number outside [MinValue, MaxValue] is ErrRange. Parse uses integer
// arithmetic only, and is exact for any number of digits.
func Parse(s string) (Fixed, error) {
	t := s
	neg := false
	if len(t) > 0 && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	var ip uint64
	over := false
	digits, i := 0, 0
	for ; i < len(t) && '0' <= t[i] && t[i] <= '9'; i++ {
		digits++
		if ip > math.MaxInt64>>FracBits {
			over = true
			continue
		}
		ip = ip*10 + uint64(t[i]-'0')
	}
	var fh, fl uint64 // the first fracDigits fraction digits, as an integer
	nf := 0
	if i < len(t) && t[i] == '.' {
		for i++; i < len(t) && '0' <= t[i] && t[i] <= '9'; i++ {
			digits++
			if nf < fracDigits {
				fh, fl = mul10add(fh, fl, uint64(t[i]-'0'))
				nf++
			}
		}
	}
	if i != len(t) || digits == 0 {
		return 0, fmt.Errorf("parse %s: %w", quote(s), ErrSyntax)
	}
	for ; nf < fracDigits; nf++ {
		fh, fl = mul10add(fh, fl, 0)
	}
	// fh < 2^6 < fracDiv, so the quotient fits.
	q, r := bits.Div64(fh, fl, fracDiv)
	if r >= fracDiv-r {
		q++
	}
	if over || ip > math.MaxInt64>>FracBits+1 {
		return 0, fmt.Errorf("parse %s: %w", quote(s), ErrRange)
	}
	m := ip<<FracBits + q // ip <= 2^43 and q <= 2^20: no overflow
	if (!neg && m > math.MaxInt64) || (neg && m > 1<<63) {
		return 0, fmt.Errorf("parse %s: %w", quote(s), ErrRange)
	}
	return fromMag(neg, m), nil
}

// mul10add returns hi:lo * 10 + d; callers keep it under 2^128.
func mul10add(hi, lo, d uint64) (uint64, uint64) {
	c, lo := bits.Mul64(lo, 10)
	hi = hi*10 + c
	lo, c = bits.Add64(lo, d, 0)
	return hi + c, lo
}

// quote quotes s for an error message, shortened if it is long.
func quote(s string) string {
	const limit = 40
	if len(s) > limit {
		return strconv.Quote(s[:limit]) + "..."
	}
	return strconv.Quote(s)
}

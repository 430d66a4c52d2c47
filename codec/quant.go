package codec

import (
	"fmt"
	"math"
	"math/bits"
)

// Quantizer maps real values in [min, max] to the integer grid min + i*step
// and back, so that a value costs exactly the bits its grid needs. Build one
// with NewQuantizer, once, and share it: it is immutable.
type Quantizer struct {
	min, step float64
	maxIndex  uint64
	bits      uint
}

// maxQuantIndex keeps every grid index exactly representable in a float64.
const maxQuantIndex = 1 << 53

// NewQuantizer returns the quantizer for [min, max] with the given step.
// max is rounded to the grid. It fails with ErrInvalid when a bound is not
// finite, step is not positive, max < min, or the grid has more than 2^53
// points.
func NewQuantizer(min, max, step float64) (Quantizer, error) {
	if math.IsNaN(min) || math.IsInf(min, 0) || math.IsNaN(max) || math.IsInf(max, 0) ||
		!(step > 0) || math.IsInf(step, 0) || max < min {
		return Quantizer{}, fmt.Errorf("%w: quantizer [%g, %g] step %g", ErrInvalid, min, max, step)
	}
	n := math.Round((max - min) / step)
	if n > maxQuantIndex {
		return Quantizer{}, fmt.Errorf("%w: quantizer [%g, %g] step %g has over 2^53 points", ErrInvalid, min, max, step)
	}
	q := Quantizer{min: min, step: step, maxIndex: uint64(n)}
	q.bits = uint(bits.Len64(q.maxIndex))
	// Every grid point must be a distinct float64: near large values a fine
	// step is lost to rounding.
	if n > 0 {
		if top := q.Value(q.maxIndex); top-q.Value(q.maxIndex-1) < step/2 || q.Value(1)-q.Value(0) < step/2 {
			return Quantizer{}, fmt.Errorf("%w: quantizer step %g is below float64 precision at %g", ErrInvalid, step, top)
		}
	}
	return q, nil
}

// MustQuantizer is NewQuantizer for package-level tables built from
// constants; it panics on an invalid description, at program start.
func MustQuantizer(min, max, step float64) Quantizer {
	q, err := NewQuantizer(min, max, step)
	if err != nil {
		panic(err)
	}
	return q
}

// Bits returns the number of bits one value takes.
func (q Quantizer) Bits() int { return int(q.bits) }

// MaxIndex returns the largest grid index.
func (q Quantizer) MaxIndex() uint64 { return q.maxIndex }

// Min returns the smallest value.
func (q Quantizer) Min() float64 { return q.min }

// Max returns the largest value on the grid.
func (q Quantizer) Max() float64 { return q.Value(q.maxIndex) }

// Step returns the grid step.
func (q Quantizer) Step() float64 { return q.step }

// Index returns the grid index nearest to v. Values outside the range (and
// NaN) give the nearest end (NaN gives 0) and ok == false.
func (q Quantizer) Index(v float64) (i uint64, ok bool) {
	f := math.Round((v - q.min) / q.step)
	switch {
	case f >= 0 && f <= float64(q.maxIndex):
		return uint64(f), true
	case f > float64(q.maxIndex):
		return q.maxIndex, false
	default: // below the range, or NaN
		return 0, false
	}
}

// Value returns the value of grid index i.
func (q Quantizer) Value(i uint64) float64 { return q.min + float64(i)*q.step }

// Round returns v as it will be after a round trip through q.
func (q Quantizer) Round(v float64) float64 {
	i, _ := q.Index(v)
	return q.Value(i)
}

// Equal reports whether a and b fall on the same grid point, so that a
// change smaller than the step does not mark a field dirty.
func (q Quantizer) Equal(a, b float64) bool {
	i, _ := q.Index(a)
	j, _ := q.Index(b)
	return i == j
}

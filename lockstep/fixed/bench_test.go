package fixed

import (
	"math"
	"testing"
)

// Each benchmark runs the Fixed operation beside its float64 counterpart,
// so the ratio is visible in one run. The inputs cycle through a small
// table of map-scale values so that neither side is constant-folded.

var (
	benchFixed = []Fixed{
		12944671, -7340, 104857599000, 3294199, -1298910, 1 << 20, 77777777, -123456789012,
	}
	benchFloat = func() []float64 {
		out := make([]float64, len(benchFixed))
		for i, v := range benchFixed {
			out[i] = v.Float64()
		}
		return out
	}()
	sinkFixed Fixed
	sinkFloat float64
	sinkVec   Vec
)

func benchPair(b *testing.B, fx func(x, y Fixed) Fixed, fl func(x, y float64) float64) {
	b.Run("fixed", func(b *testing.B) {
		var s Fixed
		for i := 0; b.Loop(); i++ {
			s += fx(benchFixed[i&7], benchFixed[(i+3)&7])
		}
		sinkFixed = s
	})
	b.Run("float64", func(b *testing.B) {
		var s float64
		for i := 0; b.Loop(); i++ {
			s += fl(benchFloat[i&7], benchFloat[(i+3)&7])
		}
		sinkFloat = s
	})
}

func BenchmarkMul(b *testing.B) {
	benchPair(b, Fixed.Mul, func(x, y float64) float64 { return x * y })
}

func BenchmarkDiv(b *testing.B) {
	benchPair(b, Fixed.Div, func(x, y float64) float64 { return x / y })
}

func BenchmarkSqrt(b *testing.B) {
	benchPair(b, func(x, _ Fixed) Fixed { return x.Abs().Sqrt() },
		func(x, _ float64) float64 { return math.Sqrt(math.Abs(x)) })
}

func BenchmarkSin(b *testing.B) {
	benchPair(b, func(x, _ Fixed) Fixed { return Sin(x) },
		func(x, _ float64) float64 { return math.Sin(x) })
}

func BenchmarkSinCos(b *testing.B) {
	benchPair(b, func(x, _ Fixed) Fixed { s, c := SinCos(x); return s + c },
		func(x, _ float64) float64 { s, c := math.Sincos(x); return s + c })
}

func BenchmarkAtan2(b *testing.B) {
	benchPair(b, Atan2, math.Atan2)
}

func BenchmarkVecLen(b *testing.B) {
	benchPair(b, func(x, y Fixed) Fixed { return V(x, y).Len() }, math.Hypot)
}

func BenchmarkVecNormalize(b *testing.B) {
	b.Run("fixed", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			sinkVec = V(benchFixed[i&7], benchFixed[(i+3)&7]).Normalize()
		}
	})
	b.Run("float64", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			x, y := benchFloat[i&7], benchFloat[(i+3)&7]
			l := math.Hypot(x, y)
			sinkFloat += x/l + y/l
		}
	})
}

func BenchmarkVecRotate(b *testing.B) {
	for i := 0; b.Loop(); i++ {
		sinkVec = V(benchFixed[i&7], benchFixed[(i+3)&7]).Rotate(benchFixed[(i+5)&7])
	}
}

func BenchmarkParse(b *testing.B) {
	for b.Loop() {
		sinkFixed, _ = Parse("-12345.678901")
	}
}

func BenchmarkRandUint64(b *testing.B) {
	r := NewRand(1)
	var s uint64
	for b.Loop() {
		s += r.Uint64()
	}
	sinkFixed = Fixed(s)
}

func BenchmarkRandIntn(b *testing.B) {
	r := NewRand(1)
	var s int
	for b.Loop() {
		s += r.Intn(1000)
	}
	sinkFixed = Fixed(s)
}

// BenchmarkHasherVec hashes 1000 positions, a frame's state for a mid-size
// match.
func BenchmarkHasherVec(b *testing.B) {
	vs := make([]Vec, 1000)
	for i := range vs {
		vs[i] = V(benchFixed[i&7], benchFixed[(i+1)&7])
	}
	b.SetBytes(int64(len(vs) * 16))
	for b.Loop() {
		var h Hasher
		for _, v := range vs {
			h.WriteVec(v)
		}
		sinkFixed = Fixed(h.Sum64())
	}
}

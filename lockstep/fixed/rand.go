package fixed

import "math/bits"

// Rand is a deterministic pseudo-random generator for the simulation:
// xoshiro256** (Blackman and Vigna), seeded through splitmix64. The same
// seed gives the same sequence on every platform. It is not safe for
// concurrent use and not cryptographic.
//
// A Rand is a plain value of 32 bytes: copying it, or saving State and
// restoring it with SetState, snapshots the generator exactly. The zero
// value is usable and behaves as NewRand(0).
type Rand struct {
	s [4]uint64
}

// NewRand returns a generator seeded with seed.
func NewRand(seed uint64) *Rand {
	r := new(Rand)
	r.Seed(seed)
	return r
}

// Seed resets r to the sequence of seed: the state is the next four
// outputs of splitmix64 started at seed.
func (r *Rand) Seed(seed uint64) {
	for i := range r.s {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
		z = (z ^ z>>27) * 0x94d049bb133111eb
		r.s[i] = z ^ z>>31
	}
}

// State returns the generator's state, for snapshots.
func (r *Rand) State() [4]uint64 { return r.s }

// SetState restores a state from State. The all-zero state, which State
// never returns, is treated like the zero Rand: as NewRand(0).
func (r *Rand) SetState(s [4]uint64) { r.s = s }

// Uint64 returns a uniformly distributed 64-bit number.
func (r *Rand) Uint64() uint64 {
	s := &r.s
	if s[0]|s[1]|s[2]|s[3] == 0 {
		r.Seed(0) // xoshiro's one fixed point; the zero value starts here
	}
	out := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return out
}

// Uint64n returns a uniformly distributed number in [0, n), without bias
// (Lemire's multiply-and-reject method). n == 0 returns 0.
func (r *Rand) Uint64n(n uint64) uint64 {
	if n == 0 {
		return 0
	}
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		thresh := -n % n // 2^64 mod n
		for lo < thresh {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

// Int64n returns a uniformly distributed number in [0, n), without bias.
// n <= 0 returns 0.
func (r *Rand) Int64n(n int64) int64 {
	if n <= 0 {
		return 0
	}
	return int64(r.Uint64n(uint64(n)))
}

// Intn returns a uniformly distributed number in [0, n), without bias.
// n <= 0 returns 0. It draws the same numbers as Int64n.
func (r *Rand) Intn(n int) int { return int(r.Int64n(int64(n))) }

// Bool returns true or false with equal probability.
func (r *Rand) Bool() bool { return r.Uint64()>>63 == 1 }

// Fixed returns a uniformly distributed Fixed in [0, 1): one of the 2^20
// values k * 2^-20.
func (r *Rand) Fixed() Fixed { return Fixed(r.Uint64() >> (64 - FracBits)) }

// Range returns a uniformly distributed Fixed in [lo, hi), without bias, at
// the full raw resolution. If hi <= lo it returns lo without drawing.
func (r *Rand) Range(lo, hi Fixed) Fixed {
	if hi <= lo {
		return lo
	}
	return lo + Fixed(r.Uint64n(uint64(hi)-uint64(lo))) // exact mod 2^64
}

// Shuffle puts n elements in a random order with the Fisher-Yates shuffle,
// calling swap to exchange elements i and j. n <= 1 does nothing.
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}

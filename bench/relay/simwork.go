//go:build !js

package relay

import (
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// simWork is a room's server-side simulation in the bench (-sim-us): a
// room that runs its game to verify its players' hashes
// (lockstep.Config.Simulation) spends the game's CPU a frame on the same
// core as the data path. Each Step does a fixed amount of arithmetic,
// calibrated once to cost about the asked microseconds, and folds the
// frame's inputs into the state.
type simWork struct {
	iters int // of the mixing loop, a frame
	state uint64
}

func (s *simWork) Step(f lockstep.Frame) {
	h := s.state
	for _, sl := range f.Slots {
		for _, in := range sl.Inputs {
			for _, b := range in {
				h = (h ^ uint64(b)) * 0x100000001b3
			}
		}
	}
	s.state = mix(h, s.iters)
}

func (s *simWork) Hash() uint64 { return s.state }

// mix runs n rounds of xorshift over h: work the compiler cannot drop.
func mix(h uint64, n int) uint64 {
	for range n {
		h ^= h << 13
		h ^= h >> 7
		h ^= h << 17
	}
	return h
}

// simIters returns the rounds of mix that take about us microseconds on
// this machine: the fastest of a few timings of a million rounds.
func simIters(us float64) int {
	if us <= 0 {
		return 0
	}
	const n = 1 << 20
	best := time.Duration(1 << 62)
	simSink = 1
	for range 5 {
		t := time.Now()
		simSink = mix(simSink, n)
		best = min(best, time.Since(t))
	}
	return max(int(us*1e3*float64(n)/float64(max(best.Nanoseconds(), 1))), 1)
}

// simSink keeps simIters' timed work from being dropped.
var simSink uint64

// simSpec is -sim-us and the rounds of mix it takes here.
type simSpec struct {
	us    float64
	iters int
}

// simConfig returns the rooms' simulation, nil for none.
func simConfig(iters int) func() lockstep.Simulation {
	if iters <= 0 {
		return nil
	}
	return func() lockstep.Simulation { return &simWork{iters: iters, state: 1} }
}

// Package moba is a seeded model of the inputs of a 5v5 MOBA match, for
// bots and benchmarks: what a player sends, and when, reproducible from a
// seed. Its inputs are 3 bytes that the movers test game
// (lockstep/movers) reads as a heading and a speed.
package moba

import (
	"math/rand/v2"
	"time"
)

// Doc describes the model in one line, for a benchmark's printed header.
const Doc = "each player issues a command every 0.3-1.5 s (uniform): " +
	"60% move (heading, speed), 25% attack (heading, target), 15% skill (heading, skill 0-3); " +
	"3-byte inputs; after a command a 4% chance of an idle stretch of 5-20 s (dead, shopping)"

// Model is a seeded MOBA-like input model: per player, a command every
// 0.3 to 1.5 s; 60% of commands move (a heading that wanders from the
// last one, a speed), 25% attack (a heading and one of 5 targets), 15% cast
// one of 4 skills; after a command, a 4% chance of an idle stretch of 5 to
// 20 s (dead, shopping, waiting). An input is 3 bytes: heading (1/256
// turn), speed (1/16 unit per frame, 0 when standing to attack) and the
// action (0 move, 1-5 attack target, 16-19 skill), which the movers game
// reads as heading and speed.
type Model struct {
	rng     *rand.Rand
	next    []time.Time
	heading []byte
}

// NewModel returns the model for players players, seeded with seed, whose
// first commands fall due after start.
func NewModel(players int, seed uint64, start time.Time) *Model {
	m := &Model{rng: rand.New(rand.NewPCG(seed, 0x6d6f6261)), next: make([]time.Time, players), heading: make([]byte, players)}
	for i := range m.next {
		m.next[i] = start.Add(m.interval())
		m.heading[i] = byte(m.rng.IntN(256))
	}
	return m
}

func (m *Model) interval() time.Duration {
	return 300*time.Millisecond + time.Duration(m.rng.Int64N(int64(1200*time.Millisecond)))
}

// Input returns the command of the player in slot that is due by now, or
// nil when none is. Call it with times that do not go back.
func (m *Model) Input(slot int, now time.Time) []byte {
	if now.Before(m.next[slot]) {
		return nil
	}
	m.next[slot] = now.Add(m.interval())
	if m.rng.Float64() < 0.04 {
		m.next[slot] = m.next[slot].Add(5*time.Second + time.Duration(m.rng.Int64N(int64(15*time.Second))))
	}
	m.heading[slot] += byte(m.rng.IntN(97) - 48)
	h := m.heading[slot]
	switch x := m.rng.Float64(); {
	case x < 0.6:
		return []byte{h, byte(16 + m.rng.IntN(33)), 0}
	case x < 0.85:
		return []byte{h, 0, byte(1 + m.rng.IntN(5))}
	default:
		return []byte{h, byte(8 + m.rng.IntN(9)), byte(16 + m.rng.IntN(4))}
	}
}

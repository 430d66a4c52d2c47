// Package movers is a small deterministic lockstep game for tests and
// replay verification: every player steers a dot around a square field;
// dots bounce off the walls and score when they touch. It runs on
// lockstep/fixed only, so every platform reaches the same state, and it
// implements lockstep.Simulation. A program that verifies its replays
// registers it (Register) under the name "movers".
//
// An input is two bytes or more: the heading (byte 0, in 1/256 of a turn)
// and the speed (byte 1, in 1/16 unit per frame); an empty or made-up
// input keeps the dot's course. Params, when 8 bytes, seed the start
// positions (little endian).
package movers

import (
	"encoding/binary"
	"fmt"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// Name is the game's name in replay headers, under which Register makes
// it known.
const Name = "movers"

// Register makes the game known, by Name, to a program's registry of the
// games whose replays it verifies.
func Register(g *replay.Games) error {
	return g.Register(Name, func(players int, params []byte) (lockstep.Simulation, error) {
		return New(players, params)
	})
}

// Field size and touch distance, in units.
const (
	Size  = 1000
	Touch = 10
)

// Game is the state of one match of movers.
type Game struct {
	frame int
	dots  []dot
}

type dot struct {
	pos, vel fixed.Vec
	score    int64
}

// New returns a game for players players, seeded by params (8 bytes, or
// none for seed 0).
func New(players int, params []byte) (*Game, error) {
	if players < 1 || players > lockstep.MaxPlayers {
		return nil, fmt.Errorf("movers: %d players", players)
	}
	var seed uint64
	switch len(params) {
	case 0:
	case 8:
		seed = binary.LittleEndian.Uint64(params)
	default:
		return nil, fmt.Errorf("movers: params of %d bytes, want 0 or 8", len(params))
	}
	rng := fixed.NewRand(seed)
	g := &Game{dots: make([]dot, players)}
	for i := range g.dots {
		g.dots[i].pos = fixed.V(fixed.FromInt(int64(rng.Uint64()%Size)), fixed.FromInt(int64(rng.Uint64()%Size)))
	}
	return g, nil
}

// Step runs one frame.
func (g *Game) Step(f lockstep.Frame) {
	size := fixed.FromInt(Size)
	for i := range g.dots {
		d := &g.dots[i]
		if i < len(f.Slots) {
			if ins := f.Slots[i].Inputs; len(ins) > 0 {
				in := ins[len(ins)-1]
				if len(in) >= 2 {
					heading := fixed.TwoPi.MulInt(int64(in[0])).DivInt(256)
					d.vel = fixed.FromAngle(heading).Scale(fixed.FromFraction(int64(in[1]), 16))
				}
			}
		}
		d.pos = d.pos.Add(d.vel)
		if d.pos.X < 0 || d.pos.X > size {
			d.vel.X = d.vel.X.Neg()
			d.pos.X = d.pos.X.Clamp(0, size)
		}
		if d.pos.Y < 0 || d.pos.Y > size {
			d.vel.Y = d.vel.Y.Neg()
			d.pos.Y = d.pos.Y.Clamp(0, size)
		}
	}
	touch := fixed.FromInt(Touch)
	for i := range g.dots {
		for j := i + 1; j < len(g.dots); j++ {
			if g.dots[i].pos.Dist(g.dots[j].pos) <= touch {
				g.dots[i].score++
				g.dots[j].score++
			}
		}
	}
	g.frame++
}

// Hash returns the FNV-1a hash of the frame count, positions, velocities
// and scores.
func (g *Game) Hash() uint64 {
	h := fixed.NewHasher()
	h.WriteInt64(int64(g.frame))
	for _, d := range g.dots {
		h.WriteVec(d.pos)
		h.WriteVec(d.vel)
		h.WriteInt64(d.score)
	}
	return h.Sum64()
}

// Score returns a player's score.
func (g *Game) Score(slot int) int64 { return g.dots[slot].score }

// Corrupt flips one bit of a player's position: a desync, for tests.
func (g *Game) Corrupt(slot int) {
	g.dots[slot].pos.X ^= 1
}

// Dump returns the state as text, for desync dumps.
func (g *Game) Dump() []byte {
	var b []byte
	b = fmt.Appendf(b, "frame %d\n", g.frame)
	for i, d := range g.dots {
		b = fmt.Appendf(b, "%d pos %v vel %v score %d\n", i, d.pos, d.vel, d.score)
	}
	return b
}

// snapshotVersion starts every snapshot.
const snapshotVersion = 1

// Snapshot returns the whole state: a version byte, the frame count, the
// number of dots, and per dot its position, velocity and score, each a
// little-endian int64.
func (g *Game) Snapshot() []byte {
	b := make([]byte, 0, 1+8+8+len(g.dots)*5*8)
	b = append(b, snapshotVersion)
	b = binary.LittleEndian.AppendUint64(b, uint64(g.frame))
	b = binary.LittleEndian.AppendUint64(b, uint64(len(g.dots)))
	for _, d := range g.dots {
		for _, v := range [...]int64{d.pos.X.Raw(), d.pos.Y.Raw(), d.vel.X.Raw(), d.vel.Y.Raw(), d.score} {
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// Restore replaces the state with a snapshot of a game with as many
// players; anything else is an error and leaves the state as it was.
func (g *Game) Restore(b []byte) error {
	if len(b) < 17 || b[0] != snapshotVersion {
		return fmt.Errorf("movers: not a snapshot (%d bytes)", len(b))
	}
	frame := binary.LittleEndian.Uint64(b[1:])
	n := binary.LittleEndian.Uint64(b[9:])
	if n != uint64(len(g.dots)) || uint64(len(b)) != 17+n*40 || frame > 1<<40 {
		return fmt.Errorf("movers: snapshot of %d dots at frame %d in %d bytes, game has %d dots", n, frame, len(b), len(g.dots))
	}
	b = b[17:]
	at := func(i int) int64 { return int64(binary.LittleEndian.Uint64(b[i*8:])) }
	for i := range g.dots {
		d := &g.dots[i]
		d.pos = fixed.V(fixed.FromRaw(at(5*i)), fixed.FromRaw(at(5*i+1)))
		d.vel = fixed.V(fixed.FromRaw(at(5*i+2)), fixed.FromRaw(at(5*i+3)))
		d.score = at(5*i + 4)
	}
	g.frame = int(frame)
	return nil
}

var _ lockstep.Snapshotter = (*Game)(nil)

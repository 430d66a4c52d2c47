package game

import (
	"encoding/binary"
	"fmt"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// ServerSim is the arena as a room runs it server-side
// (lockstep.Config.Simulation): its hash is the reference for desync
// detection, so a two-player room can name the player who diverged, and its
// snapshot catches a rejoining player up in one message instead of the
// whole frame log; its kills are the reference for event verification. It
// implements lockstep.Simulation, lockstep.Snapshotter and
// lockstep.EventSource.
type ServerSim struct {
	g   *Game
	err error // the first frame the game refused, for the logs
}

// Simulation returns the factory a room's Config.Simulation takes for a
// game of players seeded with seed (RoomSeed of the room's name, as the
// clients seed theirs).
func Simulation(players int, seed uint64) func() lockstep.Simulation {
	return func() lockstep.Simulation {
		g, err := New(players, seed)
		if err != nil {
			g, _ = New(MinPlayers, seed)
		}
		return &ServerSim{g: g, err: err}
	}
}

// Step runs one frame. A frame the game refuses (the wrong number or slot
// count, which a room never cuts) leaves the state as it was; Err reports
// it.
func (s *ServerSim) Step(f lockstep.Frame) {
	if err := s.g.Step(f); err != nil && s.err == nil {
		s.err = err
	}
}

// StepEvents returns the last frame's events (Game.Events).
func (s *ServerSim) StepEvents() [][]byte { return s.g.Events() }

// Hash is the game's state hash, as every client computes it.
func (s *ServerSim) Hash() uint64 { return s.g.Hash() }

// Snapshot returns the game's state (see Game.Snapshot).
func (s *ServerSim) Snapshot() []byte { return s.g.Snapshot() }

// Restore replaces the game's state with a snapshot.
func (s *ServerSim) Restore(b []byte) error { return s.g.Restore(b) }

// Err returns the first error the game returned, if any.
func (s *ServerSim) Err() error { return s.err }

// Name is the game's name in replay headers, under which Register makes
// it known. Its replays' params are the game seed, 8 bytes little-endian
// (RoomSeed of the room's name in the demo).
const Name = "arena"

// Register makes the arena known, by Name, to a program's registry of the
// games whose replays it verifies (the demo's `replay verify`).
func Register(g *replay.Games) error { return g.Register(Name, newReplaySim) }

// replaySim is ServerSim as a replay's verification runs it: its hash is 0
// once the game refuses a frame, so that verification fails.
type replaySim struct{ *ServerSim }

func newReplaySim(players int, params []byte) (lockstep.Simulation, error) {
	if len(params) != 8 {
		return nil, fmt.Errorf("arena: params are an 8-byte seed, got %d bytes", len(params))
	}
	s := Simulation(players, binary.LittleEndian.Uint64(params))().(*ServerSim)
	if err := s.Err(); err != nil { // the wrong number of players
		return nil, err
	}
	return replaySim{s}, nil
}

// Hash is the game's hash until the game refuses a frame, and 0 from then on.
func (s replaySim) Hash() uint64 {
	if s.Err() != nil {
		return 0
	}
	return s.ServerSim.Hash()
}

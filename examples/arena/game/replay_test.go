package game_test

import (
	"encoding/binary"
	"testing"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// TestReplaySimulation: the arena as a replay's verification finds it
// (registered under game.Name) matches the game itself, and bad params are
// refused.
func TestReplaySimulation(t *testing.T) {
	var games replay.Games
	if err := game.Register(&games); err != nil {
		t.Fatal(err)
	}
	mk, ok := games.Lookup(game.Name)
	if !ok {
		t.Fatalf("the arena is not registered (games: %v)", games.Names())
	}
	if _, err := mk(2, []byte{1}); err == nil {
		t.Fatal("a 1-byte seed was accepted")
	}
	params := binary.LittleEndian.AppendUint64(nil, game.RoomSeed("arena-1"))
	sim, err := mk(2, params)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := game.New(2, game.RoomSeed("arena-1"))
	in := game.Input{MoveX: 1, Fire: true}.Append(nil)
	for n := range 100 {
		f := lockstep.Frame{Number: n, Slots: []lockstep.Slot{{Inputs: [][]byte{in}}, {MadeUp: true}}}
		sim.Step(f)
		g.Step(f)
		if sim.Hash() != g.Hash() {
			t.Fatalf("frame %d: the simulation and the game differ", n)
		}
	}
	sim.Step(lockstep.Frame{Number: 500, Slots: []lockstep.Slot{{}, {}}}) // out of sequence
	if sim.Hash() != 0 {
		t.Fatal("a frame the game refuses went unnoticed")
	}
}

package engine

import (
	"flag"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tongbu/tongbu/internal/vectorfile"
	"github.com/tongbu/tongbu/lockstep"
)

var updateVectors = flag.Bool("update-vectors", false, "rewrite testdata/vectors from the encoders")

// TestVectors: the welcome in testdata/vectors (SPEC.md section 9.2) is
// what the server writes and reads back as what it says; another client
// can check its reader against it byte for byte.
func TestVectors(t *testing.T) {
	w := &welcome{mode: Lockstep, target: "duel-1", role: RolePlayer, slot: 1,
		lockstep: lockstep.Config{Players: 2, Hz: 60, Fill: lockstep.FillRepeat, Late: lockstep.LateNextFrame, InputBytes: 1, HashEvery: 30}.WithDefaults()}
	msg := appendWelcome(nil, w)
	about := `9.2 welcome (version 8): lockstep, a player, room "duel-1", slot 1, the room configuration of versions 7 and 8 ` +
		"(2 players, 60 Hz, repeat-last, late inputs to the next frame, 1-byte inputs, hash every 30, the rest at their defaults)"
	if err := vectorfile.Check(filepath.Join("testdata", "vectors"), "welcome", about, msg, *updateVectors); err != nil {
		t.Fatal(err)
	}
	seats := appendSeats(nil, []Seat{SeatPlaying, SeatLate, SeatGone, SeatOpen})
	if err := vectorfile.Check(filepath.Join("testdata", "vectors"), "seats",
		"9.2 seats: 4 slots, playing, late, gone and open", seats, *updateVectors); err != nil {
		t.Fatal(err)
	}
	if got, err := readSeats(seats, nil); err != nil || !slices.Equal(got, []Seat{SeatPlaying, SeatLate, SeatGone, SeatOpen}) {
		t.Fatalf("seats read back %v, %v", got, err)
	}
	r, err := readWelcome(msg)
	if err != nil || r.target != "duel-1" || r.slot != 1 || r.lockstep.Hz != 60 || r.lockstep.Fill != lockstep.FillRepeat {
		t.Fatalf("read back %+v, %v", r, err)
	}
}

package engine

import (
	"flag"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
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
	about := `9.2 welcome (version 10): lockstep, a player, room "duel-1", slot 1, the room configuration of versions 7 to 10 ` +
		"(2 players, 60 Hz, repeat-last, late inputs to the next frame, 1-byte inputs, hash every 30, the rest at their defaults)"
	if err := vectorfile.Check(filepath.Join("testdata", "vectors"), "welcome", about, msg, *updateVectors); err != nil {
		t.Fatal(err)
	}
	// A world's welcome with field groups (version 10).
	world := &welcome{mode: Interest, target: "field", role: RolePlayer, self: 5, interest: interest.Config{Width: 8, Height: 8, MaxEntities: 1024,
		Groups: []interest.Group{
			{Name: "guild", Fields: []interest.Field{{Name: "id", Bits: 20}, {Name: "rank", Bits: 3}}},
			{Name: "buffs", Every: time.Second, Fields: []interest.Field{{Name: "stacks", Bits: 8, Signed: true}}},
		}}.WithDefaults()}
	wmsg := appendWelcome(nil, world)
	if err := vectorfile.Check(filepath.Join("testdata", "vectors"), "welcome-world",
		`9.2 welcome (version 10): a world, player entity 5, world "field", an 8 x 8-region map of 1024 entities, the other client settings at their defaults, `+
			`and two field groups: "guild" on change (id 20 bits, rank 3 bits), "buffs" every 1 s (stacks, 8 bits signed)`, wmsg, *updateVectors); err != nil {
		t.Fatal(err)
	}
	if r, err := readWelcome(wmsg); err != nil || len(r.interest.Groups) != 2 || r.interest.Groups[1].Every != time.Second || !r.interest.Groups[1].Fields[0].Signed {
		t.Fatalf("world welcome read back %+v, %v", r, err)
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

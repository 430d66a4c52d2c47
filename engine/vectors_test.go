package engine

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	about := `9.2 welcome (version 4): lockstep, a player, room "duel-1", slot 1, the room configuration of 7 ` +
		"(2 players, 60 Hz, repeat-last, late inputs to the next frame, 1-byte inputs, hash every 30, the rest at their defaults)"
	path := filepath.Join("testdata", "vectors", "welcome.hex")
	text := fmt.Sprintf("# %s\n%s\n", about, hex.EncodeToString(msg))
	if *updateVectors {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update-vectors to write it)", err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	got, err := hex.DecodeString(lines[len(lines)-1])
	if err != nil || !bytes.Equal(got, msg) {
		t.Fatalf("%s holds %x, the server writes %x (%v)", path, got, msg, err)
	}
	r, err := readWelcome(got)
	if err != nil || r.target != "duel-1" || r.slot != 1 || r.lockstep.Hz != 60 || r.lockstep.Fill != lockstep.FillRepeat {
		t.Fatalf("read back %+v, %v", r, err)
	}
}

package lockstep

import (
	"errors"
	"fmt"
	"io"
)

// Simulation is a game's deterministic simulation as lockstep runs it:
// every client steps it through the same frames and must reach the same
// state, bit for bit (use lockstep/fixed, never floats). Replays are
// verified through it, and its hash is what clients report for desync
// detection.
type Simulation interface {
	// Step runs one frame: every player's inputs for it, in slot order
	// (a made-up slot as the room's Fill says).
	Step(f Frame)
	// Hash returns a hash of the state that must agree between clients.
	Hash() uint64
}

// Snapshotter is a Simulation whose state can be saved and restored: a
// room running one (Config.Simulation) catches a rejoining player up with
// a snapshot and the frames after it instead of the whole frame log, and
// the client restores its game from the snapshot (Step.Snapshot).
// Restore(Snapshot()) must give a simulation that steps and hashes the
// same as the original, on every platform.
type Snapshotter interface {
	Simulation
	// Snapshot returns the whole state, at most MaxSnapshotBytes.
	Snapshot() []byte
	// Restore replaces the state with a snapshot; it returns an error, and
	// leaves the state as it was, for bytes that are not a snapshot.
	Restore(snapshot []byte) error
}

// VerifyResult is the outcome of re-running a replay.
type VerifyResult struct {
	Frames   int // relay frames run (each Config.Substeps logic frames)
	Checked  int // hash checks with a majority compared against the simulation
	Mismatch int // of those, checks whose majority hash the simulation did not reach
	// FirstMismatch is the first frame whose recorded majority hash the
	// simulation did not reach, or -1.
	FirstMismatch int
	// Desyncs counts the checks in which some player disagreed with the
	// majority (or there was none).
	Desyncs int
	Records int // lifecycle records read
}

// Verify runs every frame of a replay through sim and compares the hash
// after each checked frame with the majority hash the room recorded. It
// returns the reader's error for a damaged or truncated file (with the
// result so far), and nil when the whole replay was read; the result says
// whether the hashes matched.
func Verify(rr *ReplayReader, sim Simulation) (VerifyResult, error) {
	res := VerifyResult{FirstMismatch: -1}
	every := rr.Header().Config.HashEvery
	ours := map[int]uint64{} // hashes of checked frames not yet compared
	var pending []HashCheck
	var logic []Frame
	compare := func() {
		keep := pending[:0]
		for _, c := range pending {
			h, ok := ours[c.Frame]
			if !ok {
				keep = append(keep, c)
				continue
			}
			delete(ours, c.Frame)
			if len(c.Others) > 0 || !c.Majority {
				res.Desyncs++
			}
			if !c.Majority {
				continue
			}
			res.Checked++
			if h != c.Hash {
				res.Mismatch++
				if res.FirstMismatch < 0 || c.Frame < res.FirstMismatch {
					res.FirstMismatch = c.Frame
				}
			}
		}
		pending = keep
	}
	for {
		f, err := rr.Next()
		for _, rec := range rr.Records() {
			res.Records++
			if rec.Kind == RecordCheck {
				pending = append(pending, rec.Check)
			}
		}
		if errors.Is(err, io.EOF) {
			compare()
			if len(pending) > 0 {
				return res, fmt.Errorf("%w: %d hash checks for frames never run", ErrReplay, len(pending))
			}
			return res, nil
		}
		if err != nil {
			return res, err
		}
		logic = rr.Header().Config.Expand(logic[:0], f) // Substeps logic frames a relay frame
		for _, g := range logic {
			sim.Step(g)
		}
		res.Frames++
		if every > 0 && f.Number%every == 0 {
			ours[f.Number] = sim.Hash()
		}
		compare()
	}
}

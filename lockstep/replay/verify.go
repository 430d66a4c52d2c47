package replay

import (
	"errors"
	"fmt"
	"io"

	"github.com/tongbu/tongbu/lockstep"
)

// Result is the outcome of re-running a replay.
type Result struct {
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

// Verify runs every frame of a replay through sim, a fresh simulation of
// the recorded game (as its GameFactory makes it from the header), as the
// clients ran them (lockstep.Config.Expand's logic frames), and compares
// the hash after each checked frame with the majority hash the room
// recorded. It returns the reader's error for a damaged or truncated file
// (with the result so far), and nil when the whole replay was read; the
// result says whether the hashes matched.
func Verify(rr *Reader, sim lockstep.Simulation) (Result, error) {
	res := Result{FirstMismatch: -1}
	every := rr.Header().Config.HashEvery
	ours := map[int]uint64{} // hashes of checked frames not yet compared
	var pending []lockstep.HashCheck
	var logic []lockstep.Frame
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
				return res, fmt.Errorf("%w: %d hash checks for frames never run", ErrDamaged, len(pending))
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

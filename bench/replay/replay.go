package replay

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/bench/internal/moba"
	"github.com/tongbu/tongbu/bench/internal/simmatch"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/lockstep/replay"
)

func init() {
	harness.Register("replay",
		"a 20-minute 5v5 lockstep match at 15 Hz (seeded MOBA-like inputs) recorded with lockstep/replay.Writer: bytes per minute",
		benchReplay)
}

// seedReplayBytes is seed 003's replay size for a 20-minute 5v5 match
// (about 3 MB), the baseline.
const seedReplayBytes = 3_000_000

func benchReplay(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	minutes := fs.Float64("minutes", 20, "simulated match length")
	seed := fs.Uint64("seed", 1, "input model seed")
	file := fs.String("out", "", "also write the replay to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *minutes <= 0 || *minutes > 240 {
		return errors.New("want 0 < -minutes <= 240")
	}
	cfg := lockstep.Config{Players: 10, Hz: 15}
	start := time.Unix(1_700_000_000, 0)
	m, err := simmatch.New(cfg, start, *seed)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	names := []string{"blue1", "blue2", "blue3", "blue4", "blue5", "red1", "red2", "red3", "red4", "red5"}
	rw, err := replay.NewWriter(&buf, replay.Header{Game: movers.Name, Config: m.Cfg, Start: start, Players: names})
	if err != nil {
		return err
	}
	if err := m.Room.Record(rw); err != nil {
		return err
	}
	frames := int(*minutes * 60 * float64(cfg.Hz))
	t0 := time.Now()
	for m.N < frames {
		if err := m.Step(); err != nil {
			return err
		}
	}
	if err := rw.Close(); err != nil {
		return err
	}
	took := time.Since(t0)
	st := rw.Stats()
	rs := m.Room.Stats()
	size := buf.Len()
	perMin := float64(size) / *minutes
	if *file != "" {
		if err := os.WriteFile(*file, buf.Bytes(), 0o644); err != nil {
			return err
		}
	}
	// Read it back and re-run it: the file must hold the match.
	rr, err := replay.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return err
	}
	g, err := movers.New(cfg.Players, nil)
	if err != nil {
		return err
	}
	vr, err := replay.Verify(rr, g)
	if err != nil {
		return fmt.Errorf("reading the replay back: %w", err)
	}
	if vr.Frames != st.Frames || vr.Mismatch != 0 || vr.Checked == 0 {
		return fmt.Errorf("the replay does not verify: %+v", vr)
	}
	seedPerMin := float64(seedReplayBytes) / 20
	fmt.Fprintf(out, "replay: 10 players, 15 Hz, %g simulated minutes (simulated in %v)\n", *minutes, took.Round(time.Millisecond))
	fmt.Fprintf(out, "input model (seed %d): %s\n\n", *seed, moba.Doc)
	fmt.Fprintf(out, "frames                %d (%d inputs, %d made up player-frames)\n", st.Frames, rs.Inputs, rs.MadeUp)
	fmt.Fprintf(out, "blocks, records       %d blocks, %d hash-check and join/leave records\n", st.Blocks, st.Records)
	fmt.Fprintf(out, "verified              %d frames re-run, %d hashes checked, %d mismatches\n", vr.Frames, vr.Checked, vr.Mismatch)
	fmt.Fprintf(out, "%-22s%12s %14s\n", "", "file bytes", "bytes/minute")
	fmt.Fprintf(out, "%-22s%12d %14.0f\n", "tongbu replay", size, perMin)
	fmt.Fprintf(out, "%-22s%12d %14.0f\n", "seed 003 (about 3 MB)", seedReplayBytes, seedPerMin)
	fmt.Fprintf(out, "bytes per frame       %.1f\n", float64(size)/float64(max(st.Frames, 1)))
	if *minutes != 20 {
		fmt.Fprintf(out, "a 20-minute file      about %.0f bytes at this rate\n", perMin*20)
	}
	fmt.Fprintln(out, harness.Result("replay", "players", cfg.Players, "hz", cfg.Hz, "bytes_per_min", int(math.Round(perMin))))
	return nil
}

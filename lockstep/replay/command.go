package replay

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Command is the `replay` command of tongbu's programs: it runs `replay
// info|verify FILE` (args without "replay") and returns the exit status.
// info prints a replay file's header and statistics; verify re-runs it
// through its game's simulation, which games (the program's choice, nil
// for none) must know by the name in the file's header.
func Command(args []string, games *Games, stdout, stderr io.Writer) int {
	if len(args) != 2 || (args[0] != "info" && args[0] != "verify") {
		fmt.Fprintln(stderr, "usage: tongbu replay info FILE | tongbu replay verify FILE")
		return 2
	}
	f, err := os.Open(args[1])
	if err != nil {
		fmt.Fprintln(stderr, "tongbu replay:", err)
		return 1
	}
	defer f.Close()
	run := replayInfo
	if args[0] == "verify" {
		run = func(in io.Reader, out io.Writer) error { return replayVerify(in, games, out) }
	}
	if err := run(f, stdout); err != nil {
		fmt.Fprintf(stderr, "tongbu replay %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// printHeader prints what a replay's header says.
func printHeader(out io.Writer, h Header) {
	c := h.Config
	fmt.Fprintf(out, "game       %q (%d bytes of parameters)\n", h.Game, len(h.Params))
	fmt.Fprintf(out, "started    %s\n", h.Start.UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "room       %d players, %d Hz, fill %v, hash every %d frames\n", c.Players, c.Hz, c.Fill, c.HashEvery)
	for i, n := range h.Players {
		if n != "" {
			fmt.Fprintf(out, "player %-3d %s\n", i, n)
		}
	}
}

// replayInfo prints a replay's header and statistics.
func replayInfo(in io.Reader, out io.Writer) error {
	cr := &countReader{r: in}
	rr, err := NewReader(cr)
	if err != nil {
		return err
	}
	h := rr.Header()
	printHeader(out, h)
	var frames, inputs, madeUp, real int
	var checks, dissent, joins, leaves int
	var dumps []Record
	for {
		f, err := rr.Next()
		for _, r := range rr.Records() {
			switch r.Kind {
			case RecordCheck:
				checks++
				if len(r.Check.Others) > 0 || !r.Check.Majority {
					dissent++
				}
			case RecordJoin:
				joins++
			case RecordLeave:
				leaves++
			case RecordDump:
				dumps = append(dumps, r)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Fprintf(out, "read       %d frames before: %v\n", frames, err)
			return err
		}
		frames++
		for _, s := range f.Slots {
			if s.MadeUp {
				madeUp++
			} else {
				real++
				inputs += len(s.Inputs)
			}
		}
	}
	dur := time.Duration(frames) * h.Config.Period()
	fmt.Fprintf(out, "frames     %d (%v)\n", frames, dur)
	fmt.Fprintf(out, "inputs     %d; %d player-frames with input, %d made up\n", inputs, real, madeUp)
	fmt.Fprintf(out, "checks     %d hash comparisons, %d with dissent\n", checks, dissent)
	fmt.Fprintf(out, "lifecycle  %d joins, %d leaves\n", joins, leaves)
	for _, d := range dumps {
		side := "agreed with the majority"
		if !d.Agrees {
			side = "diverged"
		}
		fmt.Fprintf(out, "dump       player %d, frame %d (%s): %d bytes%s\n", d.Slot, d.Frame, side, d.DumpLen, preview(d.Dump))
	}
	perMin := 0.0
	if dur > 0 {
		perMin = float64(cr.n) / dur.Minutes()
	}
	fmt.Fprintf(out, "size       %d bytes, %.0f bytes per minute\n", cr.n, perMin)
	return nil
}

// preview shows the start of a dump: its first line when it is text (log
// lines), else its first bytes in hex.
func preview(b []byte) string {
	head := b[:min(len(b), 72)]
	if line, _, _ := strings.Cut(string(head), "\n"); utf8.ValidString(line) && !strings.ContainsFunc(line, func(r rune) bool {
		return r < ' ' && r != '\t'
	}) {
		return fmt.Sprintf(": %q", line)
	}
	return fmt.Sprintf(": %x", head[:min(len(head), 16)])
}

// replayVerify re-runs a replay through its game's simulation, made by
// the factory games holds for it.
func replayVerify(in io.Reader, games *Games, out io.Writer) error {
	rr, err := NewReader(in)
	if err != nil {
		return err
	}
	h := rr.Header()
	printHeader(out, h)
	mk, ok := games.Lookup(h.Game)
	if !ok {
		return unknownGame(h.Game, games.Names())
	}
	sim, err := mk(h.Config.Players, h.Params)
	if err != nil {
		return err
	}
	res, err := Verify(rr, sim)
	fmt.Fprintf(out, "ran        %d frames; %d hash checks compared, %d mismatched; %d checks with dissent\n", res.Frames, res.Checked, res.Mismatch, res.Desyncs)
	if err != nil {
		return err
	}
	if res.Mismatch > 0 {
		return fmt.Errorf("the simulation does not reach the recorded hash at %d checks, first at frame %d", res.Mismatch, res.FirstMismatch)
	}
	if res.Checked == 0 {
		return errors.New("the replay records no hash to check")
	}
	fmt.Fprintln(out, "verified")
	return nil
}

// unknownGame says that this program cannot re-run game, which games it
// can, and where game's replays can be verified.
func unknownGame(game string, known []string) error {
	knows := "it verifies no game"
	if len(known) > 0 {
		q := make([]string, len(known))
		for i, n := range known {
			q[i] = strconv.Quote(n)
		}
		knows = "it verifies " + strings.Join(q, ", ")
	}
	return fmt.Errorf("no simulation for game %q in this program (%s): verify the replay with the game's own program, one that registers the game (replay.Games), such as the demo for its arena and duel (tongbu demo replay verify FILE)", game, knows)
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

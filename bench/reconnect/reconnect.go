package reconnect

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// init registers the scenario with the tongbu-bench command.
func init() {
	harness.Register("reconnect",
		"a 5v5 lockstep player drops at minute 19 of 20 and rejoins over a 50 ms RTT link beside 20 other rooms: time to live, bytes, other rooms' cut lateness",
		benchReconnect)
}

// reconnectOpts are the scenario's flags.
type reconnectOpts struct {
	dropAt, latency, baseline time.Duration
	others                    int
	seed                      uint64
}

// reconnectFigures are one run's figures for the RESULT line.
type reconnectFigures struct {
	frames, toLiveMs int
	bytes            uint64
	lateMs           float64
}

// benchReconnect runs the scenario with its flags: the room streams the
// full frame log, or with -snapshot catches the player up from a
// snapshot (run after the full log, and beside it, with -compare).
func benchReconnect(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("reconnect", flag.ContinueOnError)
	var o reconnectOpts
	fs.DurationVar(&o.dropAt, "drop", 19*time.Minute, "match time at which the player drops (simulated up to then)")
	fs.IntVar(&o.others, "rooms", 20, "other rooms of 10 players on the same scheduler")
	fs.DurationVar(&o.latency, "latency", 25*time.Millisecond, "one-way latency of every link")
	fs.DurationVar(&o.baseline, "baseline", 10*time.Second, "baseline window, the player away, before it rejoins")
	fs.Uint64Var(&o.seed, "seed", 1, "input model seed")
	snapshot := fs.Bool("snapshot", false, "the room runs the game (movers) and catches the player up from a snapshot of it")
	compare := fs.Bool("compare", true, "with -snapshot: run the full-log mode first and print it beside")
	resume := fs.Bool("resume", false, "instead: players over real WebRTC whose path goes silent resume by themselves (engine.ClientConfig.OnConnection); -trials of each mode")
	trials := fs.Int("trials", 20, "with -resume: path losses of each mode")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *resume {
		return benchResume(out, *trials)
	}
	if o.dropAt < 10*time.Second || o.others < 0 || o.latency < 0 || o.baseline < time.Second {
		return errors.New("want -drop >= 10s, -rooms >= 0, -latency >= 0, -baseline >= 1s")
	}
	if !*snapshot {
		f, err := reconnectRun(o, false, out)
		if err != nil {
			return err
		}
		fmt.Fprintln(out, harness.Result("reconnect",
			"frames", f.frames,
			"to_live_ms", f.toLiveMs,
			"bytes", f.bytes,
			"other_rooms_p99_late_ms", f.lateMs,
		))
		return nil
	}
	var full reconnectFigures
	if *compare {
		fmt.Fprintf(out, "=== full frame log (the room keeps no simulation)\n")
		var err error
		if full, err = reconnectRun(o, false, out); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n=== snapshot (the room runs movers and sends a snapshot of it)\n")
	}
	f, err := reconnectRun(o, true, out)
	if err != nil {
		return err
	}
	if *compare {
		fmt.Fprintf(out, "\n%-10s %10s %12s %12s %24s\n", "mode", "frames", "to live ms", "bytes", "other rooms p99 late ms")
		for _, r := range []struct {
			name string
			f    reconnectFigures
		}{{"full log", full}, {"snapshot", f}} {
			fmt.Fprintf(out, "%-10s %10d %12d %12d %24.2f\n", r.name, r.f.frames, r.f.toLiveMs, r.f.bytes, r.f.lateMs)
		}
		fmt.Fprintf(out, "snapshot / full log: %.2fx the time to live, %.4fx the bytes\n",
			float64(f.toLiveMs)/float64(max(full.toLiveMs, 1)), float64(f.bytes)/float64(max(full.bytes, 1)))
	}
	fmt.Fprintln(out, harness.Result("reconnect",
		"mode", "snapshot",
		"frames", f.frames,
		"to_live_ms", f.toLiveMs,
		"bytes", f.bytes,
		"other_rooms_p99_late_ms", f.lateMs,
	))
	return nil
}

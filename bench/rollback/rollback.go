//go:build !js

// Package rollback is the benchmark of the prediction mode: a duel at
// 60 Hz through the real Room over the in-memory network in virtual time,
// played by two bots in lockstep.Rollback beside the same match with the
// plain client.
package rollback

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	duel "github.com/tongbu/tongbu/examples/duel/game"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/locksteptest"
	"github.com/tongbu/tongbu/transport/memnet"
)

func init() {
	harness.Register("rollback",
		"a 3-minute duel at 60 Hz through the room, 50 ms ± 10 ms and 2% loss each way: the prediction mode beside the plain client",
		benchRollback)
}

func benchRollback(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("rollback", flag.ContinueOnError)
	minutes := fs.Float64("minutes", 3, "match length, simulated")
	latency := fs.Duration("latency", 50*time.Millisecond, "one-way latency")
	jitter := fs.Duration("jitter", 10*time.Millisecond, "one-way jitter (uniform)")
	loss := fs.Float64("loss", 0.02, "packet loss, each way")
	delay := fs.Int("delay", 0, "input delay, frames")
	seed := fs.Uint64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	link := memnet.LinkConfig{Latency: *latency, Jitter: *jitter, Loss: *loss}
	d := time.Duration(*minutes * float64(time.Minute))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	play := func(plain bool) (locksteptest.RollbackResult, error) {
		return locksteptest.RunRollback(locksteptest.RollbackOptions{
			Config: duel.RoomConfig(), Rollback: lockstep.RollbackConfig{InputDelay: *delay}, Plain: plain,
			Duration: d, Up: link, Down: link, Seed: *seed, Clock: harness.ThreadCPU,
			NewGame: func() lockstep.RollbackGame { return duel.New() }, Input: duel.BotInputs(*seed),
		})
	}
	t0 := time.Now()
	r, err := play(false)
	if err != nil {
		return err
	}
	p, err := play(true)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rollback: a %g-minute duel, 2 bots at %d Hz, %v ± %v one way, %.0f%% loss each way, input delay %d\n",
		*minutes, duel.Hz, *latency, *jitter, 100**loss, *delay)
	fmt.Fprintf(out, "(simulated in %v; work measured in %s)\n\n", time.Since(t0).Round(time.Millisecond), harness.ThreadClock)
	players := float64(duel.Players)
	perMin := func(n int) float64 { return float64(n) / players / d.Minutes() }
	cpu := func(x locksteptest.RollbackResult) float64 {
		return float64(x.Work.Microseconds()) / float64(x.Frames) / players
	}
	depthMean := 0.0
	for _, x := range r.Depths {
		depthMean += float64(x)
	}
	depthMean /= float64(max(1, len(r.Depths)))
	resim := 0
	for _, s := range r.Stats {
		resim += s.Resimulated
	}
	resimPerS := float64(resim) / players / d.Seconds()
	fmt.Fprintf(out, "%-30s %14s %14s\n", "", "prediction", "plain client")
	fmt.Fprintf(out, "%-30s %14.1f %14.1f\n", "own input shown, mean ms", mean(r.OwnInputMs), mean(p.OwnInputMs))
	fmt.Fprintf(out, "%-30s %14.1f %14.1f\n", "own input shown, p99 ms", locksteptest.Percentile(r.OwnInputMs, 0.99), locksteptest.Percentile(p.OwnInputMs, 0.99))
	fmt.Fprintf(out, "%-30s %14d %14s\n", "input changes measured", len(r.OwnInputMs), fmt.Sprint(len(p.OwnInputMs)))
	fmt.Fprintf(out, "%-30s %14.1f %14s\n", "rollback depth, mean frames", depthMean, "-")
	fmt.Fprintf(out, "%-30s %14d %14s\n", "rollback depth, p99 frames", locksteptest.Percentile(r.Depths, 0.99), "-")
	fmt.Fprintf(out, "%-30s %14.1f %14s\n", "frames re-run per second", resimPerS, "-")
	fmt.Fprintf(out, "%-30s %14.2f %14.2f\n", "stalls per minute", perMin(r.Stalls), perMin(p.Stalls))
	fmt.Fprintf(out, "%-30s %14d %14d\n", "desyncs", r.Desyncs, p.Desyncs)
	fmt.Fprintf(out, "%-30s %14d %14d\n", "hash frames compared", r.Checked, p.Checked)
	fmt.Fprintf(out, "%-30s %14.2f %14.2f\n", "cpu µs per frame (with game)", cpu(r), cpu(p))
	if r.Checked == 0 {
		return errors.New("no hash frame compared")
	}
	fmt.Fprintln(out, harness.Result("rollback",
		"own_input_ms", fmt.Sprintf("%.1f", locksteptest.Percentile(r.OwnInputMs, 0.99)),
		"baseline_own_input_ms", fmt.Sprintf("%.1f", locksteptest.Percentile(p.OwnInputMs, 0.99)),
		"rollback_depth_mean", fmt.Sprintf("%.2f", depthMean),
		"rollback_depth_p99", locksteptest.Percentile(r.Depths, 0.99),
		"resim_frames_per_s", fmt.Sprintf("%.1f", resimPerS),
		"cpu_us_per_frame", fmt.Sprintf("%.2f", cpu(r)),
		"desyncs", r.Desyncs,
		"stalls_per_min", fmt.Sprintf("%.2f", perMin(r.Stalls)),
	))
	return nil
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(max(1, len(xs)))
}

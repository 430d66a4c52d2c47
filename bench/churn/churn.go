//go:build !js

package churn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

func init() {
	harness.Register("churn",
		"players join a room over real WebRTC on loopback and leave, a thousand times: what the server keeps (goroutines, heap, descriptors) and how long a join takes",
		benchChurn)
}

// openFDs counts the process's open descriptors (-1 where /proc is
// missing).
func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

// footprint is what the process holds: goroutines, live heap,
// descriptors.
type footprint struct {
	goroutines int
	heap       uint64
	fds        int
}

func measure() footprint {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return footprint{runtime.NumGoroutine(), ms.HeapAlloc, openFDs()}
}

func benchChurn(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("churn", flag.ContinueOnError)
	cycles := fs.Int("cycles", 1000, "join/leave cycles")
	warm := fs.Int("warmup", 20, "cycles before the first measurement (pools and caches fill)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cycles < 1 || *warm < 0 {
		return errors.New("want -cycles >= 1, -warmup >= 0")
	}
	fmt.Fprintf(out, "churn: %d join/leave cycles over WebRTC on loopback (after %d warm-up cycles), each stack with its own clients\n\n", *cycles, *warm)
	var runs []churnRun
	for _, stack := range []transport.Stack{transport.StackLean, transport.StackPion} {
		r, err := churn(stack, *cycles, *warm)
		if err != nil {
			return fmt.Errorf("%s: %w", stack, err)
		}
		runs = append(runs, r)
		fmt.Fprintf(out, "%s, in %v:\n", stack, r.elapsed.Round(time.Millisecond))
		fmt.Fprintf(out, "               before     after\n")
		fmt.Fprintf(out, "goroutines  %9d %9d\n", r.before.goroutines, r.after.goroutines)
		fmt.Fprintf(out, "heap KiB    %9d %9d\n", r.before.heap>>10, r.after.heap>>10)
		fmt.Fprintf(out, "descriptors %9d %9d\n", r.before.fds, r.after.fds)
		fmt.Fprintf(out, "join ms: p50 %.1f  p99 %.1f  max %.1f\n\n", r.p(0.5), r.p(0.99), r.p(1))
	}
	lean, pion := runs[0], runs[1]
	fmt.Fprintln(out, harness.Result("churn", "cycles", *cycles,
		"goroutines_delta", lean.after.goroutines-lean.before.goroutines,
		"heap_kib_delta", (int64(lean.after.heap)-int64(lean.before.heap))/1024,
		"fds_delta", lean.after.fds-lean.before.fds,
		"join_p99_ms", lean.p(0.99),
		"baseline_goroutines_delta", pion.after.goroutines-pion.before.goroutines,
		"baseline_heap_kib_delta", (int64(pion.after.heap)-int64(pion.before.heap))/1024,
		"baseline_fds_delta", pion.after.fds-pion.before.fds,
		"baseline_join_p99_ms", pion.p(0.99)))
	return nil
}

// churnRun is one stack's churn.
type churnRun struct {
	before, after footprint
	joins         []time.Duration // sorted
	elapsed       time.Duration
}

func (r churnRun) p(q float64) float64 {
	return float64(r.joins[int(q*float64(len(r.joins)-1))]) / float64(time.Millisecond)
}

// churn runs the cycles against a server of the stack, with clients of
// the same stack.
func churn(stack transport.Stack, cycles, warm int) (churnRun, error) {
	var r churnRun
	secret := []byte("churn-bench-secret-0123456789")
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, Stack: stack})
	if err != nil {
		return r, err
	}
	url, stop, err := harness.ServeFacing(srv, transport.ListenerConfig{})
	if err != nil {
		return r, err
	}
	defer stop()
	room, err := srv.CreateRoom("churn", lockstep.Config{Players: 2, Hz: 15})
	if err != nil {
		return r, err
	}
	cycle := func() (time.Duration, error) {
		tk, err := srv.Ticket("p", "churn", engine.RolePlayer, time.Minute)
		if err != nil {
			return 0, err
		}
		dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer dcancel()
		began := time.Now()
		c, err := engine.Dial(dctx, url, tk, &engine.ClientConfig{IncludeLoopback: true, Stack: stack})
		if err != nil {
			return 0, err
		}
		joined := time.Since(began)
		err = c.Update(time.Now())
		c.Close()
		return joined, err
	}
	// settle waits until the server has let the connections go.
	settle := func() {
		for deadline := time.Now().Add(30 * time.Second); room.Connected() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // pion's goroutines end after the close
	}
	for range warm {
		if _, err := cycle(); err != nil {
			return r, fmt.Errorf("warm-up: %w", err)
		}
	}
	settle()
	r.before = measure()
	t0 := time.Now()
	r.joins = make([]time.Duration, 0, cycles)
	for i := range cycles {
		d, err := cycle()
		if err != nil {
			return r, fmt.Errorf("cycle %d: %w", i, err)
		}
		r.joins = append(r.joins, d)
	}
	r.elapsed = time.Since(t0)
	settle()
	r.after = measure()
	slices.Sort(r.joins)
	return r, nil
}

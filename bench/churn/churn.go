//go:build !js

package churn

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
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
	secret := []byte("churn-bench-secret-0123456789")
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := engine.HTTPServer("", srv.Handler())
	go hs.Serve(transport.LimitListener(ln, transport.DefaultConnsPerAddr))
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx) }()
	defer func() {
		cancel()
		<-served
		hs.Close()
	}()
	room, err := srv.CreateRoom("churn", lockstep.Config{Players: 2, Hz: 15})
	if err != nil {
		return err
	}
	url := "http://" + ln.Addr().String()
	cycle := func() (time.Duration, error) {
		tk, err := srv.Ticket("p", "churn", engine.RolePlayer, time.Minute)
		if err != nil {
			return 0, err
		}
		dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
		defer dcancel()
		began := time.Now()
		c, err := engine.Dial(dctx, url, tk, &engine.ClientConfig{IncludeLoopback: true})
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
	for range *warm {
		if _, err := cycle(); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	settle()
	before := measure()
	t0 := time.Now()
	joins := make([]time.Duration, 0, *cycles)
	for i := range *cycles {
		d, err := cycle()
		if err != nil {
			return fmt.Errorf("cycle %d: %w", i, err)
		}
		joins = append(joins, d)
	}
	elapsed := time.Since(t0)
	settle()
	after := measure()
	slices.Sort(joins)
	p := func(q float64) float64 {
		return float64(joins[int(q*float64(len(joins)-1))]) / float64(time.Millisecond)
	}
	fmt.Fprintf(out, "churn: %d join/leave cycles over WebRTC on loopback in %v (after %d warm-up cycles)\n\n", *cycles, elapsed.Round(time.Millisecond), *warm)
	fmt.Fprintf(out, "               before     after\n")
	fmt.Fprintf(out, "goroutines  %9d %9d\n", before.goroutines, after.goroutines)
	fmt.Fprintf(out, "heap KiB    %9d %9d\n", before.heap>>10, after.heap>>10)
	fmt.Fprintf(out, "descriptors %9d %9d\n\n", before.fds, after.fds)
	fmt.Fprintf(out, "join ms: p50 %.1f  p99 %.1f  max %.1f\n\n", p(0.5), p(0.99), p(1))
	fmt.Fprintln(out, harness.Result("churn", "cycles", *cycles,
		"goroutines_delta", after.goroutines-before.goroutines,
		"heap_kib_delta", (int64(after.heap)-int64(before.heap))/1024,
		"fds_delta", after.fds-before.fds,
		"join_p99_ms", p(0.99)))
	return nil
}

//go:build !js

package bots

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
)

// The server's side of a scenario whose players are bots in a second
// process (the relay's and the world's over WebRTC): the engine server
// they join, their tickets, the measured window and their closing line.

// NewServer returns the engine server of a scenario over WebRTC: UDP on
// a fresh loopback port, one worker, connections with RelayLimits, at
// most maxConns of them (0: the engine's default), and a fresh random
// secret.
func NewServer(maxConns int) (*engine.Server, error) { return NewServerBehind(maxConns, nil) }

// NewServerBehind is NewServer advertising public instead of its own
// address: the address of a relay in front of it (udpimpair), which
// forwards to its UDP port.
func NewServerBehind(maxConns int, public []string) (*engine.Server, error) {
	secret := make([]byte, 32)
	rand.Read(secret)
	return engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, Workers: 1,
		Limits: RelayLimits, MaxConns: maxConns, PublicIPs: public})
}

// Spec is the bots' process that Start launches and the players it
// plays.
type Spec struct {
	Kind    string   // the scenario: Run's first argument ("relay", "world")
	Args    []string // the scenario's own flags for the bots, after -url
	Shape   Shape
	Players int
	Seat    func(i int) (player, room string) // player i's name and the room (or world) it joins
	TTL     time.Duration                     // how long the tickets are good for
	Profile string                            // when set, the bots' CPU profile goes to Profile.bots (the server's is Profile)
}

// Session is a scenario's engine server, served on loopback, and its
// bots' process, every bot joined.
type Session struct {
	URL   string        // the server's base URL
	Child *Child        // the bots' process
	Join  time.Duration // how long the bots took to join
	stop  func()
}

// Start serves srv on loopback (harness.ServeEngine), writes a ticket
// for each of spec's players, and launches the bots' process with them
// (Launch): Run's spec.Kind with -url, spec.Args and the shape's flags.
// It returns once every bot has joined. When serving fails, it shuts
// srv down.
func Start(srv *engine.Server, spec Spec) (*Session, error) {
	url, stop, err := harness.ServeEngine(srv)
	if err != nil {
		srv.Shutdown(context.Background())
		return nil, err
	}
	input, err := tickets(srv, spec.Players, spec.TTL, spec.Seat)
	if err != nil {
		stop()
		return nil, err
	}
	args := append(append([]string{spec.Kind, "-url", url}, spec.Args...), spec.Shape.Args()...)
	child, join, err := Launch(args, input, spec.Players, spec.Profile)
	if err != nil {
		stop()
		return nil, err
	}
	return &Session{URL: url, Child: child, Join: join, stop: stop}, nil
}

// Close stops serving the server and waits for it to stop. The bots'
// process ends with Child.Finish or Child.Kill.
func (s *Session) Close() { s.stop() }

// tickets returns the bots' process's stdin for n players: a line
// "T <room> <ticket>" for each, in order, then "GO". seat names player i
// and the room (or world) it joins; its ticket is good for ttl.
func tickets(srv *engine.Server, n int, ttl time.Duration, seat func(i int) (player, room string)) (string, error) {
	var tickets strings.Builder
	for i := range n {
		player, room := seat(i)
		t, err := srv.Ticket(player, room, engine.RolePlayer, ttl)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&tickets, "T %s %s\n", room, t)
	}
	tickets.WriteString("GO\n")
	return tickets.String(), nil
}

// Window is what Measure saw of the server over its window.
type Window struct {
	Wall          time.Duration      // the window's length
	CPU           time.Duration      // the server process's CPU time in it
	Sys           time.Duration      // the part of CPU in the kernel
	Runtime       [2]harness.Runtime // the runtime's counters at its start and end (the GC's CPU, allocations)
	Before, After harness.Metrics    // the server's metrics before it and after it
	// ServerCPUBusy is how busy the server's CPU was over the window,
	// from the kernel's count (its process, and the interrupts, softirqs
	// and ksoftirqd run there, which getrusage would not count as the
	// server's), when the shape pinned the server to it (PinApart); -1
	// when it is not known.
	ServerCPUBusy float64
}

// Measure measures the engine server at url (its base URL) over d. It
// reads the server's metrics with the histograms named, starts a CPU
// profile of the window when profile is set, marks the window's start
// and end (the scenario's own count first, as mark returns it, then the
// process's CPU time and the clock), stops the profile and reads the
// metrics again. It returns the window and the marks at its start and
// end.
func Measure[T any](url string, d time.Duration, profile string, mark func() T, histograms ...string) (Window, [2]T, error) {
	var w Window
	var marks [2]T
	metricsURL := strings.TrimSuffix(url, "/") + engine.MetricsPath
	var err error
	if w.Before, err = harness.ReadMetrics(metricsURL, histograms...); err != nil {
		return w, marks, err
	}
	stopProfile := func() {}
	if profile != "" {
		if stopProfile, err = harness.StartCPUProfile(profile); err != nil {
			return w, marks, err
		}
	}
	var user0, sys0, user1, sys1 time.Duration
	var w0, w1 time.Time
	// TONGBU_BENCH_ALLOCS=path writes the allocation profile at the
	// window's start and end (path.0, path.1: go tool pprof -base).
	allocs := os.Getenv("TONGBU_BENCH_ALLOCS")
	if allocs != "" {
		writeAllocs(allocs + ".0")
	}
	// TONGBU_BENCH_TRACE=path writes an execution trace of the window
	// (go tool trace): where the server's goroutines waited.
	if path := os.Getenv("TONGBU_BENCH_TRACE"); path != "" {
		stop, err := harness.StartTrace(path)
		if err != nil {
			return w, marks, err
		}
		defer stop()
	}
	server, _, pinnable := twoCPUs()
	busy0, total0, stat := cpuTicks(server)
	marks[0], w0 = mark(), time.Now()
	user0, sys0 = harness.CPUTimes()
	w.Runtime[0] = harness.ReadRuntime()
	time.Sleep(d)
	w.Runtime[1] = harness.ReadRuntime()
	marks[1], w1 = mark(), time.Now()
	user1, sys1 = harness.CPUTimes()
	w.ServerCPUBusy = -1
	if busy1, total1, ok := cpuTicks(server); pinnable && stat && ok && total1 > total0 && pinnedTo(server) {
		w.ServerCPUBusy = float64(busy1-busy0) / float64(total1-total0)
	}
	if allocs != "" {
		writeAllocs(allocs + ".1")
	}
	stopProfile()
	w.Wall, w.CPU, w.Sys = w1.Sub(w0), user1+sys1-user0-sys0, sys1-sys0
	w.After, err = harness.ReadMetrics(metricsURL, histograms...)
	return w, marks, err
}

// Finish tells the bots to stop as Stop does, with s, and reads their
// DONE line into args by format (fmt.Sscanf). A line that does not
// scan is the error; else Stop's, if any.
func (c *Child) Finish(s, format string, args ...any) error {
	line, err := c.Stop(s)
	if line != "" {
		if _, perr := fmt.Sscanf(line, format, args...); perr != nil {
			return fmt.Errorf("bots' result %q: %w", line, perr)
		}
	}
	return err
}

// writeAllocs writes the process's allocation profile to path.
func writeAllocs(path string) {
	runtime.GC() // the profile is as of the last collection
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	pprof.Lookup("allocs").WriteTo(f, 0)
}

//go:build !js

package bots

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport"
)

// runner is what the relay and world bots' processes share: their common
// flags, the tickets on stdin, the dialing, and the measured window from
// READY to STOP.
type runner struct {
	fs      *flag.FlagSet
	url     string
	dialers int
	loops   int
	profile string
	shared  bool
	nice    int
	sc      *bufio.Scanner
}

// newRunner registers the common flags on a new flag set; the scenario
// adds its own before parse.
func newRunner(name string) *runner {
	r := &runner{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	r.fs.StringVar(&r.url, "url", "", "server URL")
	r.fs.IntVar(&r.dialers, "dialers", 8, "bots dialing at once (well under the server's 256 handshakes in progress)")
	r.fs.IntVar(&r.loops, "loops", 4, "goroutines playing the bots")
	r.fs.StringVar(&r.profile, "cpuprofile", "", "write this process's CPU profile from READY to STOP to this file")
	r.fs.BoolVar(&r.shared, "shared", true, "the bots share one UDP socket, each from its own loopback address (else a socket each)")
	r.fs.IntVar(&r.nice, "nice", 0, "run the bots at this niceness (19: the server runs first when both want a core)")
	return r
}

// parse parses args, sets the niceness and reads the tickets from in
// ("T <target> <ticket>" lines up to "GO").
func (r *runner) parse(args []string, in io.Reader) (targets, tickets []string, err error) {
	if err := r.fs.Parse(args); err != nil {
		return nil, nil, err
	}
	if r.nice != 0 {
		if err := renice(r.nice); err != nil {
			return nil, nil, err
		}
	}
	r.sc = bufio.NewScanner(in)
	r.sc.Buffer(make([]byte, 64<<10), 1<<20)
	return readTickets(r.sc)
}

// dial dials a bot for every ticket, dialers at a time (on the shared
// client socket when shared), and hands each to joined as it connects
// (from the dialing goroutines). A dial the server refused as busy (429:
// too many handshakes in progress, which spends no ticket) is retried
// after the second it asks for: a loaded server finishes its side of the
// handshakes later than the bots do theirs.
func (r *runner) dial(tickets []string, joined func(i int, c *engine.Client)) error {
	sem := make(chan struct{}, max(r.dialers, 1))
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var dialErr error
	for i := range tickets {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a loaded machine is slow
			defer cancel()
			dial := func() (*engine.Client, error) {
				return engine.Dial(ctx, r.url, tickets[i], &engine.ClientConfig{IncludeLoopback: true, Limits: RelayLimits, SharedSocket: r.shared})
			}
			c, err := dial()
			for busy(err) && wait(ctx, time.Second) {
				c, err = dial()
			}
			if err != nil {
				errMu.Lock()
				dialErr = errors.Join(dialErr, fmt.Errorf("bot %d: %w", i, err))
				errMu.Unlock()
				return
			}
			joined(i, c)
		}()
	}
	wg.Wait()
	return dialErr
}

// busy reports whether a dial was refused for the server's load.
func busy(err error) bool {
	var se *transport.SignalingError
	return errors.As(err, &se) && strings.HasPrefix(se.Reason, "busy")
}

// wait waits d, and reports false if ctx ended first.
func wait(ctx context.Context, d time.Duration) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(d):
		return true
	}
}

// window prints READY, runs body (which reads stdin up to "STOP") and
// returns this process's CPU time over the window divided by its length;
// the CPU profile, when asked for, covers the window.
func (r *runner) window(out io.Writer, body func(sc *bufio.Scanner) error) (cores float64, err error) {
	stopProfile := func() {}
	if r.profile != "" {
		if stopProfile, err = harness.StartCPUProfile(r.profile); err != nil {
			return 0, err
		}
	}
	fmt.Fprintln(out, "READY")
	cpu0, wall0 := harness.CPUTime(), time.Now()
	err = body(r.sc)
	if err == nil {
		err = r.sc.Err()
	}
	cpu, wall := harness.CPUTime()-cpu0, time.Since(wall0)
	stopProfile()
	return cpu.Seconds() / wall.Seconds(), err
}

// RelayLimits are the connections' limits on both sides: the defaults but
// a longer handshake, for handshakes queued on a loaded 2-core machine.
var RelayLimits = transport.Limits{HandshakeTimeout: time.Minute}

// readTickets reads "T <target> <ticket>" lines up to "GO".
func readTickets(sc *bufio.Scanner) (targets, tickets []string, err error) {
	for sc.Scan() && sc.Text() != "GO" {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "T" {
			return nil, nil, fmt.Errorf("ticket line %q: want T <target> <ticket>", sc.Text())
		}
		targets, tickets = append(targets, f[1]), append(tickets, f[2])
	}
	if len(tickets) == 0 {
		return nil, nil, errors.New("no tickets on stdin")
	}
	return targets, tickets, nil
}

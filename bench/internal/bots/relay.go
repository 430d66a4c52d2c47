//go:build !js

package bots

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport"
)

// RelayInputBytes is the size of the input every relay bot sends a frame.
const RelayInputBytes = 2

// relayBot is one player of the relay scenario's bots. c is owned by the
// loop goroutine that plays it; played is read at READY and at the end.
type relayBot struct {
	c      *engine.Client
	room   string
	played atomic.Int64 // frames played, from frame 0 (frames play in order)
	lost   atomic.Bool  // the connection closed
	p0     int64        // played when the measured window began
	in     [RelayInputBytes]byte
}

// play runs the bot's client for a render tick and sends an input with
// every tick that played a frame.
func (b *relayBot) play(i int, now time.Time) {
	if b.lost.Load() {
		return
	}
	if err := b.c.Update(now); err != nil {
		b.lost.Store(true)
		return
	}
	ls := b.c.Lockstep()
	st := ls.Advance(now)
	if len(st.Frames) == 0 {
		return
	}
	b.played.Store(int64(st.Frames[len(st.Frames)-1].Number + 1))
	b.in[0], b.in[1] = byte(i), b.in[1]+1
	ls.Input(now, b.in[:]) // ErrBacklog under overload: the room makes the input up
}

func (b *relayBot) close() { b.c.Close() }

// runRelayBots is the child process of bench relay -transport webrtc. On
// its stdin it reads the tickets ("T <room> <ticket>" lines, then "GO"),
// dials a few at a time and plays every bot as it joins; it prints READY
// when all have joined. Then it reads the frames each room had cut when
// the window ended ("CUT <room> <frames>" lines, then "STOP"), plays on
// for a grace period so those frames can arrive, and prints
//
//	DONE expected=<frames> played=<frames> lost=<bots> cores=<cpu>
//
// where expected sums, over the bots, the frames their room cut from the
// one each bot was playing at READY to the end of the window, and played
// the frames of those the bot played; cores is this process's CPU time
// over the window divided by its length.
func runRelayBots(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("relay bots", flag.ContinueOnError)
	url := fs.String("url", "", "server URL")
	dialers := fs.Int("dialers", 8, "bots dialing at once (well under the server's 256 handshakes in progress)")
	tickHz := fs.Int("tick", 30, "the bots' render ticks a second")
	loops := fs.Int("loops", 4, "goroutines playing the bots")
	grace := fs.Duration("grace", time.Second, "play on after STOP for the last frames to arrive")
	profile := fs.String("cpuprofile", "", "write this process's CPU profile from READY to STOP to this file")
	shared := fs.Bool("shared", true, "the bots share one UDP socket, each from its own loopback address (else a socket each)")
	nice := fs.Int("nice", 0, "run the bots at this niceness (19: the server runs first when both want a core)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *nice != 0 {
		if err := renice(*nice); err != nil {
			return err
		}
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	rooms, tickets, err := readTickets(sc)
	if err != nil {
		return err
	}

	var bots flock[*relayBot]
	bots.start(*loops, *tickHz)
	defer bots.end()
	if err := dialAll(*url, tickets, *dialers, *shared, func(i int, c *engine.Client) {
		bots.add(&relayBot{c: c, room: rooms[i]})
	}); err != nil {
		return err
	}
	all := bots.all()
	for _, b := range all {
		b.p0 = b.played.Load()
	}
	stopProfile, err := startProfile(*profile)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "READY")
	cpu0, wall0 := harness.CPUTime(), time.Now()

	cut := map[string]int64{}
	for sc.Scan() && sc.Text() != "STOP" {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "CUT" {
			return fmt.Errorf("cut line %q: want CUT <room> <frames>", sc.Text())
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return fmt.Errorf("cut line %q: %w", sc.Text(), err)
		}
		cut[f[1]] = n
	}
	if err := sc.Err(); err != nil {
		return err
	}
	cpu, wall := harness.CPUTime()-cpu0, time.Since(wall0)
	stopProfile()
	time.Sleep(*grace)
	var expected, played int64
	lost := 0
	for _, b := range all {
		end, ok := cut[b.room]
		if !ok {
			return fmt.Errorf("no CUT line for room %q", b.room)
		}
		if b.lost.Load() {
			lost++
		}
		expected += max(end-b.p0, 0)
		played += max(min(b.played.Load(), end)-b.p0, 0)
	}
	fmt.Fprintf(out, "DONE expected=%d played=%d lost=%d cores=%.2f\n", expected, played, lost, cpu.Seconds()/wall.Seconds())
	return nil
}

// startProfile starts a CPU profile to path, or nothing when path is
// empty.
func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	return harness.StartCPUProfile(path)
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

// dialAll dials a bot for every ticket, dialers at a time (on the shared
// client socket when shared), and hands each to joined as it connects
// (from the dialing goroutines). No retry: the
// ticket is spent at signaling even when the server answers 429 (too many
// handshakes), so dialers stays under that limit.
func dialAll(url string, tickets []string, dialers int, shared bool, joined func(i int, c *engine.Client)) error {
	sem := make(chan struct{}, max(dialers, 1))
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
			c, err := engine.Dial(ctx, url, tickets[i], &engine.ClientConfig{IncludeLoopback: true, Limits: RelayLimits, SharedSocket: shared})
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

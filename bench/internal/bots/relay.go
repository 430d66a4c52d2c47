//go:build !js

package bots

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/engine"
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
	r := newRunner("relay bots")
	tickHz := r.fs.Int("tick", 30, "the bots' render ticks a second")
	grace := r.fs.Duration("grace", time.Second, "play on after STOP for the last frames to arrive")
	rooms, tickets, err := r.parse(args, in)
	if err != nil {
		return err
	}
	var bots flock[*relayBot]
	bots.start(r.loops, *tickHz)
	defer bots.end()
	if err := r.dial(tickets, func(i int, c *engine.Client) {
		bots.add(&relayBot{c: c, room: rooms[i]})
	}); err != nil {
		return err
	}
	all := bots.all()
	for _, b := range all {
		b.p0 = b.played.Load()
	}
	cut := map[string]int64{}
	cores, err := r.window(out, func(sc *bufio.Scanner) error {
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
		return nil
	})
	if err != nil {
		return err
	}
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
	fmt.Fprintf(out, "DONE expected=%d played=%d lost=%d cores=%.2f\n", expected, played, lost, cores)
	return nil
}

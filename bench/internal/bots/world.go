//go:build !js

package bots

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// worldBot is one player of the world scenario's bots.
type worldBot struct {
	c    *engine.Client
	rng  *rand.Rand
	next time.Time // when it next sets off
	lost atomic.Bool
}

// runWorldBots is the child process of bench world -transport webrtc. On
// its stdin it reads the tickets ("T <world> <ticket>" lines, then "GO"),
// dials a few at a time and plays every bot as it joins; it prints READY
// when all have joined. Each bot runs its client at the world's rate and
// every 2-6 s walks (6 m/s) or runs (16 m/s) to a point within 3 regions.
// On "STOP" it prints
//
//	DONE lost=<bots> cores=<cpu> packets=<received>
//
// where cores is this process's CPU time from READY to STOP over that
// time, and packets what the bots received in it.
func runWorldBots(args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("world bots", flag.ContinueOnError)
	url := fs.String("url", "", "server URL")
	dialers := fs.Int("dialers", 8, "bots dialing at once (well under the server's 256 handshakes in progress)")
	loops := fs.Int("loops", 4, "goroutines playing the bots")
	seed := fs.Uint64("seed", 1, "random seed of the bots' walks")
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
	_, tickets, err := readTickets(sc)
	if err != nil {
		return err
	}
	var bots flock[*worldBot]
	bots.start(*loops, 16) // the world's rate
	defer bots.end()
	if err := dialAll(*url, tickets, *dialers, *shared, func(i int, c *engine.Client) {
		b := &worldBot{c: c, rng: rand.New(rand.NewPCG(*seed, uint64(i))), next: time.Now().Add(time.Duration(i%4000) * time.Millisecond)}
		bots.add(b)
	}); err != nil {
		return err
	}
	all := bots.all()
	received := func() (n uint64) {
		for _, b := range all {
			n += b.c.Stats().RecvMessages
		}
		return n
	}
	stopProfile, err := startProfile(*profile)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "READY")
	cpu0, wall0, recv0 := harness.CPUTime(), time.Now(), received()
	for sc.Scan() && sc.Text() != "STOP" {
	}
	if err := sc.Err(); err != nil {
		return err
	}
	cpu, wall, recv := harness.CPUTime()-cpu0, time.Since(wall0), received()-recv0
	stopProfile()
	lost := 0
	for _, b := range all {
		if b.lost.Load() {
			lost++
		}
	}
	fmt.Fprintf(out, "DONE lost=%d cores=%.2f packets=%d\n", lost, cpu.Seconds()/wall.Seconds(), recv)
	return nil
}

func (b *worldBot) close() { b.c.Close() }

// play runs one bot for a tick: its client takes what arrived, and when
// it is time the bot sets off somewhere new.
func (b *worldBot) play(_ int, now time.Time) {
	if b.lost.Load() {
		return
	}
	if err := b.c.Update(now); err != nil {
		b.lost.Store(true)
		return
	}
	is := b.c.Interest()
	is.Advance(now)
	is.Events() // heard, not acted on
	me, ok := is.Self()
	if !ok || now.Before(b.next) {
		return
	}
	b.next = now.Add(2*time.Second + time.Duration(b.rng.Int64N(int64(4*time.Second))))
	cfg := b.c.InterestConfig()
	reach := int32(3 * cfg.RegionSize)
	hi := cfg.Bounds()
	dest := interest.Vec{
		X: min(max(me.Pos.X+b.rng.Int32N(2*reach+1)-reach, 0), hi.X),
		Y: min(max(me.Pos.Y+b.rng.Int32N(2*reach+1)-reach, 0), hi.Y),
	}
	speed := int32(64)
	if b.rng.IntN(2) == 0 {
		speed = 24
	}
	if is.Move(dest, speed) == nil {
		b.c.Flush(now)
	}
}

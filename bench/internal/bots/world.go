//go:build !js

package bots

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

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
	r := newRunner("world bots")
	seed := r.fs.Uint64("seed", 1, "random seed of the bots' walks")
	_, tickets, err := r.parse(args, in)
	if err != nil {
		return err
	}
	var bots flock[*worldBot]
	bots.start(r.loops, 16) // the world's rate
	defer bots.end()
	if err := r.dial(tickets, func(i int, c *engine.Client) {
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
	var recv uint64
	cores, err := r.window(out, func(sc *bufio.Scanner) error {
		recv0 := received()
		for sc.Scan() && sc.Text() != "STOP" {
		}
		recv = received() - recv0
		return nil
	})
	if err != nil {
		return err
	}
	lost := 0
	for _, b := range all {
		if b.lost.Load() {
			lost++
		}
	}
	fmt.Fprintf(out, "DONE lost=%d cores=%.2f packets=%d\n", lost, cores, recv)
	return nil
}

func (b *worldBot) close() { b.c.Close() }

// pollWorld runs a world bot's client for a poll: it takes what arrived
// and steps to now. It returns the interest client, the events heard and
// the player's own entity; ok is false while the player is not in the
// world yet, or once its connection is lost (lost is then set).
func pollWorld(c *engine.Client, lost *atomic.Bool, now time.Time) (is *interest.Client, evs []interest.Event, me interest.Logic, ok bool) {
	if lost.Load() {
		return nil, nil, me, false
	}
	if err := c.Update(now); err != nil {
		lost.Store(true)
		return nil, nil, me, false
	}
	is = c.Interest()
	is.Advance(now)
	evs = is.Events()
	me, ok = is.Self()
	return is, evs, me, ok
}

// play runs one bot for a tick: its client takes what arrived, and when
// it is time the bot sets off somewhere new.
func (b *worldBot) play(_ int, now time.Time) {
	is, _, me, ok := pollWorld(b.c, &b.lost, now) // what it heard is not acted on
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

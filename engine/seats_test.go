//go:build !js

package engine

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestSeats: a room tells its players and spectators what each slot
// holds: a slot nobody took is open, a connected player playing, one
// whose client stopped taking frames late (and playing again once it
// catches up), one who left gone; a bad seats message is dropped and
// counted.
func TestSeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 3}); err != nil {
			t.Fatal(err)
		}
		link := memnet.LinkConfig{Latency: 20 * time.Millisecond}
		var cs []*Client
		for _, p := range []string{"p0", "p1"} {
			c, err := h.join(p, "r", RolePlayer, link)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		watch, err := h.join("w", "r", RoleSpectator, link)
		if err != nil {
			t.Fatal(err)
		}
		// run plays the clients whose run flag is set for d.
		run := func(d time.Duration, playing ...bool) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
				now := time.Now()
				for i, c := range append(cs, watch) {
					if i < len(playing) && !playing[i] {
						continue
					}
					if err := c.Update(now); err != nil {
						continue // a closed client
					}
					if c.Role() == RolePlayer {
						c.Lockstep().Advance(now)
					}
				}
			}
		}
		want := func(c *Client, seats ...Seat) {
			t.Helper()
			if got := c.Seats(); !slices.Equal(got, seats) {
				t.Fatalf("seats %v, want %v", got, seats)
			}
		}
		run(3*time.Second, true, true)
		want(cs[0], SeatPlaying, SeatPlaying, SeatOpen)
		want(watch, SeatPlaying, SeatPlaying, SeatOpen)

		// p1's client stops taking frames: it falls behind and is late.
		run(3*time.Second, true, false)
		want(cs[0], SeatPlaying, SeatLate, SeatOpen)
		run(4*time.Second, true, true)
		want(cs[0], SeatPlaying, SeatPlaying, SeatOpen)

		// p1 leaves: gone, its seat kept.
		cs[1].Close()
		run(3*time.Second, true, false)
		want(cs[0], SeatPlaying, SeatGone, SeatOpen)

		// The reader refuses a cut-off seats message and another kind of
		// message (the client then drops it and keeps its seats).
		bad := appendSeats(nil, []Seat{SeatPlaying, SeatGone, SeatOpen})
		bad = bad[:1] // the count cut off
		if _, err := readSeats(bad, nil); err == nil {
			t.Fatal("a truncated seats message was read")
		}
		if _, err := readSeats(appendBye(nil, byeShutdown, ""), nil); err == nil {
			t.Fatal("a bye was read as seats")
		}
		seats, err := readSeats(appendSeats(nil, []Seat{SeatLate, SeatOpen}), nil)
		if err != nil || !slices.Equal(seats, []Seat{SeatLate, SeatOpen}) {
			t.Fatalf("round trip: %v %v", seats, err)
		}
		for _, c := range append(cs, watch) {
			c.Close()
		}
	})
}

// TestSeatsLookAllocatesNothing: the room's once-a-second look at its
// seats allocates only when it has something to tell.
func TestSeatsLookAllocatesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		r, err := h.s.CreateRoom("r", lockstep.Config{Players: 4})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.join("p0", "r", RolePlayer, memnet.LinkConfig{}); err != nil {
			t.Fatal(err)
		}
		synctest.Wait() // the room's worker waits for its next cut: the seats are this goroutine's
		now := time.Now()
		r.tellSeats(now) // tells, once
		r.tellSeats(now) // tells nothing, and makes the slice the next looks reuse
		if n := testing.AllocsPerRun(100, func() { r.tellSeats(now) }); n != 0 {
			t.Errorf("a look with nothing to tell allocated %.0f times", n)
		}
	})
}

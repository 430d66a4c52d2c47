//go:build js

// Command web is the arena's browser client for `tongbu demo`: it gets a
// ticket from the demo server, joins an arena room over WebRTC and plays it
// in the Ebiten view.
package main

import (
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/examples/arena/view"
	"github.com/tongbu/tongbu/examples/internal/demoweb"
	"github.com/tongbu/tongbu/lockstep"
)

func main() {
	c, err := demoweb.Join("arena")
	if err != nil {
		demoweb.Fail(err)
	}
	v, err := view.New(&session{c: c}, game.RoomSeed(c.Target()))
	if err != nil {
		demoweb.Fail(err)
	}
	if err := view.Run(v, "tongbu arena"); err != nil {
		demoweb.Fail(err)
	}
}

// session is the view's Net over the engine client.
type session struct {
	c   *engine.Client
	err error
}

func (s *session) Slot() int    { return s.c.Slot() }
func (s *session) Players() int { return s.c.LockstepConfig().Players }

func (s *session) Send(now time.Time, in []byte) error {
	if _, err := s.c.Lockstep().Input(now, in); err != nil {
		return err
	}
	s.c.Flush(now) // at once: half a frame sooner than the next Update
	return nil
}

func (s *session) Update(now time.Time) (lockstep.Step, error) {
	s.err = s.c.Update(now)
	return s.c.Lockstep().Advance(now), s.err
}

// ReportHash passes the hash on to the room every HashEvery frames.
func (s *session) ReportHash(frame int, hash uint64) {
	if every := s.c.LockstepConfig().HashEvery; every > 0 && frame%every == 0 {
		s.c.Lockstep().ReportHash(frame, hash)
	}
}

// ReportEvent passes a game event on to a room that verifies events.
func (s *session) ReportEvent(frame int, data []byte) {
	if s.c.LockstepConfig().VerifyEvents {
		s.c.Lockstep().ReportEvent(frame, data)
	}
}

// Seat passes on what the room says of a slot.
func (s *session) Seat(slot int) string {
	if seats := s.c.Seats(); slot < len(seats) {
		return seats[slot].String()
	}
	return ""
}

func (s *session) Stats() view.NetStats {
	st := s.c.Stats()
	return view.NetStats{RTT: st.RTT, Status: demoweb.Status(s.err)}
}

package lockstep

import (
	"math"
	"time"
)

// clientStrict is a client's state in a strict room (Config.Strict).
type clientStrict struct {
	sealed int         // the seal last sent: no input goes to an earlier frame
	pauses []roomPause // the room's waits it learned of, by frame, newest last
	waitOn uint32      // the slots the room waits for now, a bit each
	waitAt int         // the frame it waits to cut
}

// roomPause is one of a strict room's waits as frames packets state it:
// from frame from on, frames are cut ms (in all) behind the schedule.
type roomPause struct {
	from int
	ms   float64
}

// maxPauses bounds the waits a client remembers: enough to place the
// frames of a few packets around the newest ones.
const maxPauses = 16

// pausedAt returns how far behind its schedule the room cut frame n, in
// milliseconds, as far as the client knows.
func (s *clientStrict) pausedAt(n int) float64 {
	for i := len(s.pauses) - 1; i >= 0; i-- {
		if n >= s.pauses[i].from {
			return s.pauses[i].ms
		}
	}
	return 0
}

// paused returns the room's delay in all, as far as the client knows.
func (s *clientStrict) paused() float64 {
	if n := len(s.pauses); n > 0 {
		return s.pauses[n-1].ms
	}
	return 0
}

// learnPause takes a frames packet's pause: frames from from on are cut
// ms behind the room's schedule. Pauses only grow, frame after frame.
func (s *clientStrict) learnPause(from int, ms int64) {
	p := roomPause{from, float64(ms)}
	n := len(s.pauses)
	switch {
	case n > 0 && s.pauses[n-1].from == from:
		return
	case n > 0 && (from < s.pauses[n-1].from || p.ms < s.pauses[n-1].ms):
		return // an older packet: its pause is known, or lies between two known
	case n == maxPauses:
		copy(s.pauses, s.pauses[1:])
		s.pauses = s.pauses[:n-1]
	}
	s.pauses = append(s.pauses, p)
}

// rebasePauses folds the strict room's pauses so far into the client's
// clock and jitter buffer, for a room that continues the match on the
// schedule they moved (RestoreRoom takes Room.Start, which includes
// them): that room's pauses count from zero.
func (c *Client) rebasePauses() {
	p := c.strict.paused()
	if p == 0 {
		return
	}
	c.minOffset += p
	c.jb.paused0 -= p
	c.jb.paused = 0
	c.strict.pauses = c.strict.pauses[:0]
}

// strictBase is the earliest frame an input may target now in a strict
// room: where the room's clock stands with the lead, but no more than a
// few frames beyond the frames held, since the room's clock stops while
// it waits and the client's estimate of it does not.
func (c *Client) strictBase(now time.Time) int {
	lead := math.Ceil(c.lead)
	return min(int(math.Ceil(c.serverFrame(now)+c.lead)), c.have+int(lead)+1)
}

// seal returns the seal for a packet sent now: the first frame this
// client may still send an input for. It promises a frame beyond where
// inputs aim now, so that the room has it before the cut even when the
// packet goes a period after the clock passes the frame; the inputs given
// meanwhile aim at it.
func (c *Client) seal(now time.Time) int {
	if !c.cfg.Strict || c.slot < 0 || c.catching {
		return 0
	}
	c.strict.sealed = max(c.strict.sealed, c.strictBase(now)+1, 1)
	return c.strict.sealed
}

// WaitingFor returns the slots a strict room (Config.Strict) waits for
// before it cuts its next frame, ascending, when it has waited long
// enough to tell ("waiting for player ..."); nil when it waits for no
// one.
func (c *Client) WaitingFor() []int { return slotList(c.strict.waitOn) }

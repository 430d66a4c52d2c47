package view

import (
	"bytes"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep"
)

// hashHistory is how many recent frames' state hashes the session keeps:
// about a minute at game.Hz, so that two clients far apart can still be
// compared.
const hashHistory = 1024

// session is the view's logic without the drawing: it runs the frames the
// Net plays out, sends the local input when it changes, and remembers the
// recent state hashes.
type session struct {
	net  Net
	g    *game.Game
	slot int

	step   lockstep.Step // the latest tick's step, for Alpha and the overlay
	err    error         // the latest error, for the overlay
	errAt  time.Time
	sent   []byte // the last input sent
	sentAt int    // the game frame when it was sent
	hashes [hashHistory]uint64
	from   int    // the first frame this session ran (after a snapshot, its frame)
	fired  int    // the frames in which the local player fired
	seen   []bool // per slot: a real input has come in this session
	gone   []bool // per slot: gone (left or dropped) in the last frame run
}

// Seat states, as the scoreboard shows them.
const (
	seatPlaying = ""     // in the match
	seatOpen    = "open" // no input has come from it yet: nobody has taken the seat
	seatLate    = "late" // connected, but its inputs arrive after their frames (the room says)
	seatAway    = "bot"  // the player left or was dropped; the game's bot plays it
)

// seat says who holds slot i: a player, a late one, nobody yet, or the
// game's bot for a player who left. The room's word (SeatReporter) comes
// first; the frames tell the rest.
func (s *session) seat(i int) string {
	if r, ok := s.net.(SeatReporter); ok {
		switch r.Seat(i) {
		case "late":
			return seatLate
		case "open":
			if i != s.slot {
				return seatOpen
			}
		}
	}
	switch {
	case s.gone[i]:
		return seatAway
	case !s.seen[i] && i != s.slot:
		return seatOpen
	}
	return seatPlaying
}

func newSession(net Net, seed uint64) (*session, error) {
	g, err := game.New(net.Players(), seed)
	if err != nil {
		return nil, err
	}
	if s := net.Slot(); s < 0 || s >= net.Players() {
		return nil, fmt.Errorf("%w: local slot %d of %d", game.ErrPlayers, s, net.Players())
	}
	return &session{net: net, g: g, slot: net.Slot(), sentAt: -1,
		seen: make([]bool, net.Players()), gone: make([]bool, net.Players())}, nil
}

// tick runs one render tick: it updates the network, runs the frames due,
// and sends in if it differs from the last input sent and a frame has run
// since (or nothing was sent yet). It reports whether in was sent.
func (s *session) tick(now time.Time, in game.Input) bool {
	step, err := s.net.Update(now)
	s.fail(now, err)
	s.step = step
	if step.Snapshot != nil {
		// A room that runs the game catches a rejoining player up from
		// its state after SnapshotFrame-1; the frames after follow.
		if err := s.g.Restore(step.Snapshot); err != nil {
			s.fail(now, err)
			return false
		}
		s.from = s.g.Frame()
	}
	for _, f := range step.Frames {
		if err := s.g.Step(f); err != nil {
			s.fail(now, err)
			break
		}
		for i, sl := range f.Slots {
			s.seen[i] = s.seen[i] || !sl.MadeUp
			s.gone[i] = sl.Gone
		}
		if s.g.Fired(s.slot) {
			s.fired++
		}
		s.hashes[f.Number%hashHistory] = s.g.Hash()
		if r, ok := s.net.(HashReporter); ok {
			r.ReportHash(f.Number, s.hashes[f.Number%hashHistory])
		}
		if r, ok := s.net.(EventReporter); ok {
			for _, e := range s.g.Events() {
				r.ReportEvent(f.Number, e)
			}
		}
	}
	b := in.Append(nil)
	if bytes.Equal(b, s.sent) || (s.sent != nil && s.g.Frame() <= s.sentAt) {
		return false
	}
	if err := s.net.Send(now, b); err != nil {
		s.fail(now, err)
		return false
	}
	s.sent, s.sentAt = b, s.g.Frame()
	return true
}

func (s *session) fail(now time.Time, err error) {
	if err != nil {
		s.err, s.errAt = err, now
	}
}

// hashAt returns the state hash after frame n ran (the game's Frame() was
// n+1), if n is among the recent frames.
func (s *session) hashAt(n int) (uint64, bool) {
	last := s.g.Frame() - 1
	if n < s.from || n > last || n <= last-hashHistory {
		return 0, false
	}
	return s.hashes[n%hashHistory], true
}

// firing reports whether the last input sent holds the trigger.
func (s *session) firing() bool {
	in, err := game.DecodeInput(s.sent)
	return err == nil && in.Fire
}

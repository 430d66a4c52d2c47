// Package view is the duel's client: Session runs a player's match over an
// engine connection in the prediction mode, and (in the browser) View
// draws it with Ebiten and reads the keyboard. The demo's bot plays
// through a Session too.
package view

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/duel/game"
	"github.com/tongbu/tongbu/lockstep"
)

// Session is one player's duel: the connection, the prediction session
// over its lockstep client, and the game it runs.
type Session struct {
	c    *engine.Client
	rb   *lockstep.Rollback
	g    *game.Game
	last lockstep.RollbackTick
	err  error
}

// NewSession starts a duel over c, a player's connection to a duel room,
// with the prediction settings rc (rc.OnConfirmedHash sees the hashes of
// confirmed states the room compares).
func NewSession(c *engine.Client, rc lockstep.RollbackConfig) (*Session, error) {
	if c.Lockstep() == nil || c.LockstepConfig().Players != game.Players {
		return nil, fmt.Errorf("duel: the connection is not to a duel room")
	}
	s := &Session{c: c, g: game.New()}
	rb, err := lockstep.NewRollback(c.Lockstep(), rc)
	if err != nil {
		return nil, err
	}
	s.rb = rb
	return s, nil
}

// Tick runs one render tick with the player's input: it takes what
// arrived, runs the frames the prediction session asks for (rolling back
// when the room's frames differ from the guess), and sends the input at
// once. It returns the connection's error once it is closed.
func (s *Session) Tick(now time.Time, in game.Input) error {
	if err := s.c.Receive(now); err != nil {
		s.err = err
	}
	s.last = s.rb.Update(now, in.Bytes())
	if err := s.rb.Run(s.g, s.last.Requests); err != nil {
		s.err = err
	}
	s.c.Flush(now) // one uplink packet a tick, with the new frames' input
	for _, f := range s.c.Lockstep().DumpRequests() {
		s.c.Lockstep().Dump(f, s.g.SaveState(nil)) // the room asks after a desync
	}
	return s.err
}

// Game returns the game at the present (partly predicted).
func (s *Session) Game() *game.Game { return s.g }

// Slot returns the player's slot.
func (s *Session) Slot() int { return s.c.Slot() }

// Last returns what the last tick did.
func (s *Session) Last() lockstep.RollbackTick { return s.last }

// Stats returns the prediction session's counters.
func (s *Session) Stats() lockstep.RollbackStats { return s.rb.Stats() }

// RTT returns the connection's round-trip time, 0 while unknown.
func (s *Session) RTT() time.Duration { return s.c.Stats().RTT }

// Err returns the last error, or nil.
func (s *Session) Err() error { return s.err }

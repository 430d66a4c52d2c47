// Package local runs a whole arena match in one process: a lockstep.Room,
// one lockstep.Client per slot wired straight to it (Deliver, Tick and
// Packet called directly, no transport), a person in one slot and
// game.Pilot bots in the others, each bot on its own copy of the game as a
// bot client would be. A Match implements view.Net, so the view plays
// offline through it; tests drive it with synthetic time.
package local

import (
	"errors"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/examples/arena/view"
	"github.com/tongbu/tongbu/lockstep"
)

// Match is an in-process arena match. It is not safe for concurrent use.
type Match struct {
	cfg     lockstep.Config
	room    *lockstep.Room // nil until the first Update or Send
	clients []*lockstep.Client
	pilots  []*game.Pilot // nil in the person's slot
	slot    int
	now     time.Time // the time of the call in progress, for the room's sends
}

var _ view.Net = (*Match)(nil)

// New returns a match of players slots (game.MinPlayers to
// game.MaxPlayers) at game.Hz, with the person in slot and bots in every
// other slot. The room starts, and cuts its first frame, at the first call
// of Update or Send, so the time a page takes to start up does not arrive
// as a burst of frames.
func New(players, slot int, seed uint64) (*Match, error) {
	if players < game.MinPlayers || players > game.MaxPlayers || slot < 0 || slot >= players {
		return nil, fmt.Errorf("%w: slot %d of %d players", game.ErrPlayers, slot, players)
	}
	cfg := game.RoomConfig(players)
	m := &Match{cfg: cfg, slot: slot, pilots: make([]*game.Pilot, players)}
	for i := range players {
		c, err := lockstep.NewClient(cfg, i)
		if err != nil {
			return nil, err
		}
		m.clients = append(m.clients, c)
		if i != slot {
			if m.pilots[i], err = game.NewPilot(players, i, seed); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// at sets the time of the call in progress and starts the room at the
// first call.
func (m *Match) at(now time.Time) error {
	m.now = now
	if m.room != nil {
		return nil
	}
	room, err := lockstep.NewRoom(m.cfg, now, wire{m})
	m.room = room
	return err
}

// wire delivers what the room sends to a slot to that slot's client at
// once.
type wire struct{ m *Match }

// SendUnreliable delivers msg to the slot's client.
func (w wire) SendUnreliable(slot int, msg []byte) error {
	return w.m.clients[slot].Deliver(w.m.now, msg)
}

// SendReliable delivers msg to the slot's client: in one process nothing
// is lost.
func (w wire) SendReliable(slot int, msg []byte) error { return w.SendUnreliable(slot, msg) }

// Slot returns the person's slot.
func (m *Match) Slot() int { return m.slot }

// Players returns the number of slots.
func (m *Match) Players() int { return len(m.clients) }

// Send queues the person's input and delivers it to the room at once.
func (m *Match) Send(now time.Time, in []byte) error {
	if err := m.at(now); err != nil {
		return err
	}
	c := m.clients[m.slot]
	if _, err := c.Input(now, in); err != nil {
		return err
	}
	return m.room.Deliver(m.slot, c.Packet(now), now)
}

// Update runs the match up to now: every client's packet goes to the
// room, the room cuts the frames due and sends them, every bot plays its
// frames and sends its next input if it changed, and the person's client
// plays out its step, which Update returns.
func (m *Match) Update(now time.Time) (lockstep.Step, error) {
	if err := m.at(now); err != nil {
		return lockstep.Step{}, err
	}
	var errs []error
	for i, c := range m.clients {
		if err := m.room.Deliver(i, c.Packet(now), now); err != nil {
			errs = append(errs, err)
		}
	}
	m.room.Tick(now)
	for i, p := range m.pilots {
		if p == nil {
			continue
		}
		c := m.clients[i]
		st := c.Advance(now)
		for _, f := range st.Frames {
			if err := p.Step(f); err != nil {
				errs = append(errs, fmt.Errorf("bot %d: %w", i, err))
				break
			}
		}
		if len(st.Frames) == 0 {
			continue
		}
		if b, changed := p.Input(); changed {
			if _, err := c.Input(now, b); err != nil {
				errs = append(errs, fmt.Errorf("bot %d: %w", i, err))
			}
		}
	}
	return m.clients[m.slot].Advance(now), errors.Join(errs...)
}

// Stats reports a perfect link: the match has no network.
func (m *Match) Stats() view.NetStats { return view.NetStats{Status: "offline"} }

// Pilot returns the bot in slot, or nil for the person's slot.
func (m *Match) Pilot(slot int) *game.Pilot { return m.pilots[slot] }

// Room returns the match's room, for its statistics; nil before the first
// Update or Send.
func (m *Match) Room() *lockstep.Room { return m.room }

package main

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/examples/moba"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
)

// queueSender queues the room's messages for each peer; the simulated
// match hands them to the clients at once (no network).
type queueSender struct{ q [][][]byte }

func (s *queueSender) SendUnreliable(peer int, msg []byte) error {
	s.q[peer] = append(s.q[peer], append([]byte(nil), msg...))
	return nil
}

func (s *queueSender) SendReliable(peer int, msg []byte) error {
	return s.SendUnreliable(peer, msg)
}

// switchSender is a room's Sender that goes straight to the clients while
// the match is simulated, then over connections (see realSender).
type switchSender struct {
	direct *queueSender
	real   lockstep.Sender
}

func (s *switchSender) SendUnreliable(peer int, msg []byte) error {
	if s.real != nil {
		return s.real.SendUnreliable(peer, msg)
	}
	return s.direct.SendUnreliable(peer, msg)
}

func (s *switchSender) SendReliable(peer int, msg []byte) error {
	if s.real != nil {
		return s.real.SendReliable(peer, msg)
	}
	return s.direct.SendReliable(peer, msg)
}

// simMatch is a room and its clients run on a simulated clock with no
// network: each frame every client takes the room's messages, acts by the
// input model, sends its packet, runs the frames it is given in a movers
// game and reports its hashes; then the room cuts the frame.
type simMatch struct {
	cfg     lockstep.Config
	start   time.Time
	room    *lockstep.Room
	out     *switchSender
	clients []*lockstep.Client
	games   []*movers.Game
	model   *moba.Model
	n       int // frames run
}

func newSimMatch(cfg lockstep.Config, start time.Time, seed uint64) (*simMatch, error) {
	cfg = cfg.WithDefaults()
	out := &switchSender{direct: &queueSender{q: make([][][]byte, cfg.Players)}}
	room, err := lockstep.NewRoom(cfg, start, out)
	if err != nil {
		return nil, err
	}
	m := &simMatch{cfg: cfg, start: start, room: room, out: out, model: moba.NewModel(cfg.Players, seed, start)}
	for slot := range cfg.Players {
		c, err := lockstep.NewClient(cfg, slot)
		if err != nil {
			return nil, err
		}
		g, err := movers.New(cfg.Players, nil)
		if err != nil {
			return nil, err
		}
		m.clients = append(m.clients, c)
		m.games = append(m.games, g)
	}
	return m, nil
}

// cutTime is when frame n is cut.
func (m *simMatch) cutTime(n int) time.Time {
	return m.start.Add(time.Duration(int64(n) * int64(time.Second) / int64(m.cfg.Hz)))
}

// step runs one frame of the simulated match.
func (m *simMatch) step() error {
	now := m.cutTime(m.n)
	for slot, c := range m.clients {
		for _, msg := range m.out.direct.q[slot] {
			if err := c.Deliver(now, msg); err != nil {
				return fmt.Errorf("client %d: %w", slot, err)
			}
		}
		m.out.direct.q[slot] = m.out.direct.q[slot][:0]
		if in := m.model.Input(slot, now); in != nil {
			c.Input(now, in) // an input the client cannot place is dropped, as a game would
		}
		if err := m.room.Deliver(slot, c.Packet(now), now); err != nil {
			return fmt.Errorf("room: player %d: %w", slot, err)
		}
		playFrames(c, m.games[slot], c.Advance(now).Frames, m.cfg.HashEvery)
		for _, msg := range c.Outbox() {
			if err := m.room.Deliver(slot, msg, now); err != nil {
				return fmt.Errorf("room: player %d: %w", slot, err)
			}
		}
	}
	m.room.Tick(now)
	m.n++
	return nil
}

// playFrames runs frames in a client's game and reports the hashes.
func playFrames(c *lockstep.Client, g *movers.Game, frames []lockstep.Frame, every int) {
	for _, f := range frames {
		g.Step(f)
		if every > 0 && f.Number%every == 0 {
			c.ReportHash(f.Number, g.Hash())
		}
	}
}

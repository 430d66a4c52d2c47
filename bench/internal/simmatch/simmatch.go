// Package simmatch plays a lockstep match on a simulated clock with no
// network, for the scenarios that need one to replay or to rejoin.
package simmatch

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/bench/internal/moba"
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
	Real   lockstep.Sender // once set, the room sends here instead
}

func (s *switchSender) SendUnreliable(peer int, msg []byte) error {
	if s.Real != nil {
		return s.Real.SendUnreliable(peer, msg)
	}
	return s.direct.SendUnreliable(peer, msg)
}

func (s *switchSender) SendReliable(peer int, msg []byte) error {
	if s.Real != nil {
		return s.Real.SendReliable(peer, msg)
	}
	return s.direct.SendReliable(peer, msg)
}

// Match is a room and its clients run on a simulated clock with no
// network: each frame every client takes the room's messages, acts by the
// input model, sends its packet, runs the frames it is given in a movers
// game and reports its hashes; then the room cuts the frame.
type Match struct {
	Cfg     lockstep.Config
	Start   time.Time
	Room    *lockstep.Room
	Out     *switchSender
	Clients []*lockstep.Client
	Games   []*movers.Game
	Model   *moba.Model
	N       int // frames run
}

// New starts a match of cfg at start, its players' inputs drawn from
// the MOBA model seeded with seed.
func New(cfg lockstep.Config, start time.Time, seed uint64) (*Match, error) {
	cfg = cfg.WithDefaults()
	out := &switchSender{direct: &queueSender{q: make([][][]byte, cfg.Players)}}
	room, err := lockstep.NewRoom(cfg, start, out)
	if err != nil {
		return nil, err
	}
	m := &Match{Cfg: cfg, Start: start, Room: room, Out: out, Model: moba.NewModel(cfg.Players, seed, start)}
	for slot := range cfg.Players {
		c, err := lockstep.NewClient(cfg, slot)
		if err != nil {
			return nil, err
		}
		g, err := movers.New(cfg.Players, nil)
		if err != nil {
			return nil, err
		}
		m.Clients = append(m.Clients, c)
		m.Games = append(m.Games, g)
	}
	return m, nil
}

// cutTime is when frame n is cut.
func (m *Match) cutTime(n int) time.Time {
	return m.Start.Add(time.Duration(int64(n) * int64(time.Second) / int64(m.Cfg.Hz)))
}

// Step runs one frame of the simulated match.
func (m *Match) Step() error {
	now := m.cutTime(m.N)
	for slot, c := range m.Clients {
		for _, msg := range m.Out.direct.q[slot] {
			if err := c.Deliver(now, msg); err != nil {
				return fmt.Errorf("client %d: %w", slot, err)
			}
		}
		m.Out.direct.q[slot] = m.Out.direct.q[slot][:0]
		if in := m.Model.Input(slot, now); in != nil {
			c.Input(now, in) // an input the client cannot place is dropped, as a game would
		}
		if err := m.Room.Deliver(slot, c.Packet(now), now); err != nil {
			return fmt.Errorf("room: player %d: %w", slot, err)
		}
		PlayFrames(c, m.Games[slot], c.Advance(now).Frames, m.Cfg.HashEvery)
		for _, msg := range c.Outbox() {
			if err := m.Room.Deliver(slot, msg, now); err != nil {
				return fmt.Errorf("room: player %d: %w", slot, err)
			}
		}
	}
	m.Room.Tick(now)
	m.N++
	return nil
}

// PlayFrames runs frames in a client's game and reports the hashes.
func PlayFrames(c *lockstep.Client, g *movers.Game, frames []lockstep.Frame, every int) {
	for _, f := range frames {
		g.Step(f)
		if every > 0 && f.Number%every == 0 {
			c.ReportHash(f.Number, g.Hash())
		}
	}
}

package view

import (
	"errors"
	"fmt"
	"time"

	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

// Local is a Net that runs the demo world in process, with no server: the
// world's packets go straight to the player's client and the client's
// uplink straight to the world. It is the offline mode.
type Local struct {
	demo *world.Demo
	w    *interest.World
	c    *interest.Client
	id   interest.ID
	now  time.Time
}

// localSender hands the world's packets for the player to its client.
type localSender struct{ l *Local }

func (s localSender) SendUnreliable(id interest.ID, msg []byte) error { return s.l.deliver(id, msg) }
func (s localSender) SendReliable(id interest.ID, msg []byte) error   { return s.l.deliver(id, msg) }

// NewLocal builds the demo world of cfg (cfg.World and cfg.Sender must be
// nil: Local is the Sender) starting at cfg.Start, and spawns the player
// with the given name.
func NewLocal(cfg world.Config, name string) (*Local, error) {
	if cfg.World != nil || cfg.Sender != nil {
		return nil, errors.New("mmo: Local builds its own world and is its Sender")
	}
	l := &Local{now: cfg.Start}
	cfg.Sender = localSender{l}
	d, err := world.New(cfg)
	if err != nil {
		return nil, err
	}
	l.demo, l.w = d, d.World()
	if l.id, err = d.SpawnPlayer(name); err != nil {
		return nil, err
	}
	if l.c, err = interest.NewClient(l.w.Config(), l.id); err != nil {
		return nil, fmt.Errorf("mmo: %w", err)
	}
	return l, nil
}

func (l *Local) deliver(id interest.ID, msg []byte) error {
	if id != l.id || l.c == nil {
		return fmt.Errorf("%w: %d", world.ErrNoRoute, id)
	}
	return l.c.Deliver(l.now, msg)
}

// Client returns the player's client.
func (l *Local) Client() *interest.Client { return l.c }

// Player returns the player's entity.
func (l *Local) Player() interest.ID { return l.id }

// Config returns the world's configuration.
func (l *Local) Config() interest.Config { return l.w.Config() }

// Demo returns the demo world Local runs.
func (l *Local) Demo() *world.Demo { return l.demo }

// Update hands the world the client's uplink, runs the demo and the world
// up to now (their packets reach the client as the world sends them),
// and advances the client. The world's refusals of the uplink are counted
// in its Stats, not returned: they are the world judging the player, not
// the session failing.
func (l *Local) Update(now time.Time) error {
	if pkt := l.c.Packet(now); pkt != nil {
		_ = l.w.Deliver(l.id, pkt)
	}
	l.now = now
	l.demo.Tick(now)
	l.w.Tick(now)
	l.c.Advance(now)
	return nil
}

// Stats reports an in-process session: no wire, no round trip.
func (l *Local) Stats() NetStats { return NetStats{Status: "offline"} }

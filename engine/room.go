//go:build !js

package engine

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// ErrFull is returned when a room has no free slot or the server is at a
// limit.
var ErrFull = errors.New("engine: full")

// Room is a lockstep room hosted by a Server. Players join it with tickets
// naming it; the first time a player id joins it takes the next free
// slot, and a player who reconnects gets its slot back (the old
// connection, if still open, is closed).
type Room struct {
	s     *Server
	name  string
	cfg   lockstep.Config
	room  *lockstep.Room
	host  *lockstep.Host
	slots []atomic.Pointer[peer] // the connection of each slot, nil when away

	mu      sync.Mutex
	players map[string]int // player id to slot, kept after a disconnect
	ctl     []func()       // run on the room's worker before its next tick
	closed  bool
	stats   lockstep.RoomStats
	pstats  []lockstep.PlayerStats
	due     time.Time
}

// Name returns the room's name.
func (r *Room) Name() string { return r.name }

// Config returns the room's lockstep configuration.
func (r *Room) Config() lockstep.Config { return r.cfg }

// Stats returns the room's counters as of its last tick.
func (r *Room) Stats() lockstep.RoomStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// PlayerStats returns a player's counters as of the room's last tick.
func (r *Room) PlayerStats(slot int) lockstep.PlayerStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	if slot < 0 || slot >= len(r.pstats) {
		return lockstep.PlayerStats{}
	}
	return r.pstats[slot]
}

// Players returns the slot of every player who has joined, connected or
// not.
func (r *Room) Players() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string]int, len(r.players))
	for k, v := range r.players {
		m[k] = v
	}
	return m
}

// Connected returns how many slots have a connection now.
func (r *Room) Connected() int {
	n := 0
	for i := range r.slots {
		if r.slots[i].Load() != nil {
			n++
		}
	}
	return n
}

// Do runs f on the room's worker before its next tick, where the
// lockstep.Room may be touched (lockstep rooms are not safe for
// concurrent use).
func (r *Room) Do(f func(*lockstep.Room)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctl = append(r.ctl, func() { f(r.room) })
}

// Close closes the room: its connections are told and closed, and the
// server forgets its name.
func (r *Room) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	for i := range r.slots {
		if p := r.slots[i].Swap(nil); p != nil {
			p.bye(byeClosed, r.name)
		}
	}
	r.s.forget(r.name)
}

// attach seats the ticket's player and starts reading its connection.
func (r *Room) attach(p *peer) error {
	t := p.ticket
	if t.Role == RoleSpectator {
		return fmt.Errorf("room %q: spectators are not supported by this server yet", r.name)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("room %q is closed", r.name)
	}
	slot, ok := r.players[t.Player]
	if !ok {
		if len(r.players) >= r.cfg.Players {
			r.mu.Unlock()
			return fmt.Errorf("%w: room %q has all %d slots taken", ErrFull, r.name, r.cfg.Players)
		}
		slot = len(r.players)
		r.players[t.Player] = slot
	}
	r.mu.Unlock()
	if err := p.conn.SendReliable(appendWelcome(nil, &welcome{
		mode: Lockstep, target: r.name, role: t.Role, slot: slot, lockstep: r.cfg,
	})); err != nil {
		return err
	}
	if old := r.slots[slot].Swap(p); old != nil {
		old.bye(byeReplaced, "")
	}
	go func() {
		p.receive(func(msg []byte, now time.Time) { r.host.Deliver(slot, msg, now) })
		r.slots[slot].CompareAndSwap(p, nil)
		r.s.release(p)
	}()
	return nil
}

// Run is the room's scheduler job: the control functions, then the
// packets and the cuts that are due.
func (r *Room) Run(now time.Time) time.Time {
	r.mu.Lock()
	ctl, closed, due := r.ctl, r.closed, r.due
	r.ctl = nil
	r.mu.Unlock()
	if closed {
		return time.Time{}
	}
	for _, f := range ctl {
		f()
	}
	if !due.IsZero() && r.room.NextFrame() > 0 {
		r.s.metrics.cutLate(now.Sub(due))
	}
	next := r.host.Run(now)
	r.mu.Lock()
	prev := r.stats
	r.stats = r.room.Stats()
	for i := range r.pstats {
		r.pstats[i] = r.room.PlayerStats(i)
	}
	r.due = next
	r.mu.Unlock()
	r.s.metrics.roomDelta(&prev, &r.stats)
	return next
}

// sender is the room's way to its players: the connection in each slot.
type roomSender struct{ r *Room }

func (s roomSender) SendUnreliable(slot int, msg []byte) error {
	p := s.r.slots[slot].Load()
	if p == nil {
		return errAway
	}
	return p.conn.SendUnreliable(msg)
}

func (s roomSender) SendReliable(slot int, msg []byte) error {
	p := s.r.slots[slot].Load()
	if p == nil {
		return errAway
	}
	return p.conn.SendReliable(msg)
}

var errAway = errors.New("engine: player not connected")

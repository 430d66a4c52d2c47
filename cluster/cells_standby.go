//go:build !js

package cluster

import (
	"context"
	"encoding/binary"
	"strings"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// A cell's players near a border: a place held for each next door, where
// its client waits (engine.World.Standby), and the crossing that switches
// to it or transfers the player the ordinary way.

// handoverState is the state a cell's transfer of a crossing player
// carries: the player's entity, which the neighbour owns by then.
const handoverMagic = "tongbu-cell\x00"

func handoverState(id interest.ID) []byte {
	return binary.LittleEndian.AppendUint32([]byte(handoverMagic), uint32(id))
}

func readHandover(b []byte) (interest.ID, bool) {
	rest, ok := strings.CutPrefix(string(b), handoverMagic)
	if !ok || len(rest) != 4 {
		return 0, false
	}
	return interest.ID(binary.LittleEndian.Uint32([]byte(rest))), true
}

// heldPlace is a standby place this cell holds for a neighbour's player.
type heldPlace struct {
	booking uint64
	expires time.Time
}

// standby is a player near a border, whose client is connected to the
// neighbour's cell and waits there (engine.World.Standby): the crossing
// costs no handshake. Owned by the world's worker.
type standby struct {
	to       int       // the neighbour
	cancel   func()    // gives the place up
	lastIn   int       // the frame the player was last in the band
	handedAt time.Time // when its entity was handed over; zero before
	stopped  bool      // cancel was called
	then     func()    // what to do once it has ended without a move
}

// Standby timing: a player out of the band for standbyLinger frames
// gives its place up; a player handed over whose client has not switched
// within standbyGrace is transferred the ordinary way.
const (
	standbyLinger = 16
	standbyGrace  = 2 * time.Second
)

// orphanAfter is how long an adopted player's entity waits for its client
// before the cell removes it.
const orphanAfter = engine.BookingTTL + 10*time.Second

// heldFor notes a standby place booked in world for the entity state
// names (a cell's handover state); it is admitted when the entity
// crosses, or at once if it has.
func (n *Node) heldFor(world string, state []byte, bk uint64) {
	id, ok := readHandover(state)
	if !ok {
		return
	}
	n.mu.Lock()
	var c *cellRunner
	for _, x := range n.ws.cells {
		if CellName(x.m.Map, x.i) == world {
			c = x
		}
	}
	n.mu.Unlock()
	if c == nil {
		return
	}
	ew := c.ew.Load()
	ew.Do(func(w *interest.World) {
		if _, owned := w.Logic(id); owned && !w.Ghost(id) {
			ew.Admit(bk) // it crossed before its place was booked
			return
		}
		c.held[id] = heldPlace{bk, time.Now().Add(engine.StandbyTTL)}
	})
}

// transfer hands the client of player (entity id, handed to neighbour j
// this frame) to j the ordinary way: it dials at the crossing.
func (c *cellRunner) transfer(ew *engine.World, player string, id interest.ID, j int) {
	to := CellName(c.m.Map, j)
	dest := seamless{c.n.Destination(JoinRequest{World: to})}
	err := ew.Transfer(player, dest, handoverState(id), func(err error) {
		if err != nil {
			c.n.opts.Logger.Info("cluster: a player could not follow its entity to the next cell", "player", player, "to", to, "err", err)
		}
	})
	if err != nil {
		c.n.opts.Logger.Info("cluster: cell handover", "player", player, "err", err)
	}
}

// standbys books a standby place next door for every player of this cell
// in a border's band (mirrored to the neighbour: it may cross at any
// moment), gives up those of the players who left the band, and falls
// back to an ordinary transfer for a player handed over whose client did
// not switch in time.
func (c *cellRunner) standbys(w *interest.World, ew *engine.World, now time.Time) {
	var j int // the neighbour whose band is being looked at
	visit := func(id interest.ID, k interest.Kind, _ *interest.Logic) {
		if k != interest.Player || w.Ghost(id) {
			return
		}
		if st := c.standby[id]; st != nil {
			if st.to == j {
				st.lastIn = c.frame
			}
			return
		}
		if player, ok := ew.Player(id); ok {
			c.book(ew, player, id, j)
		}
	}
	for j = range c.borders {
		if c.down[j] >= downAfter {
			continue
		}
		for _, g := range c.bands[j] {
			w.Each(g, visit)
		}
	}
	for id, st := range c.standby {
		switch {
		case st.stopped:
		case !st.handedAt.IsZero() && now.Sub(st.handedAt) > standbyGrace:
			player, _ := ew.Player(id)
			to := st.to
			st.stop(func() { c.transfer(ew, player, id, to) })
		case st.handedAt.IsZero() && c.frame-st.lastIn > standbyLinger:
			st.stop(nil) // it walked away from the border
		}
	}
}

// book holds player a standby place in neighbour j's cell.
func (c *cellRunner) book(ew *engine.World, player string, id interest.ID, j int) {
	st := &standby{to: j, lastIn: c.frame}
	dest := seamless{c.n.Destination(JoinRequest{World: CellName(c.m.Map, j), TicketTTL: engine.StandbyTTL, standby: true})}
	cancel, err := ew.Standby(player, dest, handoverState(id), func(err error) {
		if ew.Closed() {
			return // on the goroutine closing the cell, beside its worker: the cell's state is the worker's
		}
		if c.standby[id] == st {
			delete(c.standby, id)
		}
		if err != nil && st.then != nil {
			st.then()
		}
	})
	if err != nil {
		return
	}
	st.cancel = cancel
	c.standby[id] = st
}

// stop gives the standby up, then runs then (if not nil) once it has
// ended without a move.
func (st *standby) stop(then func()) {
	st.stopped, st.then = true, then
	st.cancel()
}

// seamless books the next cell's place as a seamless move: the client
// keeps what it knows.
type seamless struct{ engine.Destination }

func (s seamless) Book(ctx context.Context, player string, state []byte, arrived func()) (engine.Booking, error) {
	b, err := s.Destination.Book(ctx, player, state, arrived)
	b.Seamless = true
	return b, err
}

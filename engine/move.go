//go:build !js

package engine

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/errstack"
)

// Booking is a place held in a world for a player on its way there
// (World.Reserve, Destination.Book): the player's client takes it by
// connecting with Ticket before Expires.
type Booking struct {
	// World is the world that holds the place.
	World string
	// URL is the base URL of the server that holds the world, the one
	// the client dials; empty for a world of the server the player is on.
	URL string
	// Ticket is the one-use ticket that takes the place.
	Ticket string
	// ID names the booking to Settle (the ticket's nonce).
	ID uint64
	// Expires is when the place is given up if the player has not come.
	Expires time.Time
	// Seamless says the world is the next cell of the same map (package
	// cluster): the client keeps the entities it knows across the move
	// (interest.Client.Inherit).
	Seamless bool
	// Standby says the place is held as a standby (World.Hold): the
	// client connects at once and waits, parked, until the world admits
	// the player (World.Admit). World.Standby needs one.
	Standby bool
}

// A Destination is where World.Transfer sends a player: a world of the
// same server (World.Destination) or of another process (package
// cluster). Its methods may block for a network round trip; they are
// called from goroutines of their own, never from a world's worker.
type Destination interface {
	// Book holds a place for player with the game's state of it, and
	// calls arrived once (from any goroutine, without blocking) when the
	// player has taken it. An error means nothing is held.
	Book(ctx context.Context, player string, state []byte, arrived func()) (Booking, error)
	// Settle says whether the player has taken the place, and gives the
	// place up if not, so that the answer is final: after false the
	// player can no longer arrive. An error means the answer is not known
	// (the destination did not answer); Transfer asks again.
	Settle(ctx context.Context, b Booking) (arrived bool, err error)
}

// BookingTTL is how long a booked place waits for its player when
// Reserve is given no time.
const BookingTTL = 20 * time.Second

// How long a transfer waits before it settles on its own, and how long it
// keeps asking a destination that does not answer.
const (
	bookTimeout   = 10 * time.Second
	settleGrace   = 5 * time.Second
	settleGiveUp  = 30 * time.Second
	settleRetry   = 500 * time.Millisecond
	settledForget = 2 * time.Minute // how long a settled booking's outcome is kept
)

// A reservation's status.
const (
	reservePending = iota
	reserveArrived
	reserveCancelled
)

// reservation is a booked place in this world.
type reservation struct {
	player  string
	state   []byte
	expires time.Time
	status  int
	arrived func()
	hold    bool // a standby: its connection waits for Admit
}

// Reserve holds a place in the world for player, carrying state (the
// game's own encoding of the player, which WorldConfig.Arrive receives),
// for ttl (0: BookingTTL; at most the server's MaxTicketTTL). The place
// counts against WorldConfig.MaxPlayers until it is taken, settled or
// expired; arrived, if not nil, is called once, on the world's worker,
// when the player takes it. It returns ErrFull when the world has no room.
//
// World.Transfer calls it through a Destination; a game server calls it
// directly to hand a newly connecting player a place it cannot lose.
func (w *World) Reserve(player string, state []byte, ttl time.Duration, arrived func()) (Booking, error) {
	b, err := w.reserve(player, state, ttl, arrived)
	return b, errstack.With(err)
}

func (w *World) reserve(player string, state []byte, ttl time.Duration, arrived func()) (Booking, error) {
	if err := checkName("player", player); err != nil {
		return Booking{}, err
	}
	if w.s.creds.kickedSince(player, time.Now().Add(-kickBookings)) {
		return Booking{}, fmt.Errorf("%w: player %q was kicked a moment ago", ErrKicked, player)
	}
	if ttl <= 0 {
		ttl = BookingTTL
	}
	ttl = min(ttl, w.s.cfg.MaxTicketTTL)
	now := time.Now()
	t := Ticket{Player: player, Target: w.name, Role: RolePlayer, Expires: now.Add(ttl)}
	var b [8]byte
	for t.Nonce == 0 {
		rand.Read(b[:])
		t.Nonce = binary.LittleEndian.Uint64(b[:])
	}
	w.resMu.Lock()
	defer w.resMu.Unlock()
	w.sweep(now)
	switch {
	case w.resClosed:
		return Booking{}, fmt.Errorf("%w: world %q", ErrClosed, w.name)
	case w.cfg.MaxPlayers > 0 && len(w.present)+w.pending >= w.cfg.MaxPlayers:
		return Booking{}, fmt.Errorf("%w: world %q holds %d players and %d booked places of %d", ErrFull, w.name, len(w.present), w.pending, w.cfg.MaxPlayers)
	case len(w.res) >= maxReservations:
		return Booking{}, fmt.Errorf("%w: world %q has %d bookings", ErrFull, w.name, len(w.res))
	}
	token, err := signTicket(w.s.cfg.Secret, t)
	if err != nil {
		return Booking{}, err
	}
	w.res[t.Nonce] = &reservation{player: player, state: state, expires: t.Expires, arrived: arrived}
	w.pending++
	return Booking{World: w.name, Ticket: token, ID: t.Nonce, Expires: t.Expires}, nil
}

// maxReservations bounds a world's bookings, settled ones included.
const maxReservations = 65536

// Settle says whether the player booked as id has taken its place; if it
// has not, the place is given up, so that the answer is final. An unknown
// or expired booking has not been taken.
func (w *World) Settle(id uint64) (arrived bool) {
	w.resMu.Lock()
	defer w.resMu.Unlock()
	r := w.res[id]
	if r == nil {
		return false
	}
	if r.status == reservePending {
		r.status = reserveCancelled
		w.pending--
		if r.hold { // its connection may be parked: tell it
			w.host.Do(func() { w.unpark(id, byeRefused, "the standby place was given up") })
		}
	}
	return r.status == reserveArrived
}

// Hold makes booking id (World.Reserve) a standby: the client that takes
// it connects at once and is parked, with no welcome and no entity, until
// Admit; the place counts against MaxPlayers meanwhile. A cell of a map
// (package cluster) holds one for a player near its border, so that
// crossing costs no handshake. Settle gives the place up and closes the
// parked connection, as does the booking's expiry: reserve it for as long
// as the standby may last (StandbyTTL).
func (w *World) Hold(id uint64) error {
	w.resMu.Lock()
	defer w.resMu.Unlock()
	r := w.res[id]
	if r == nil || r.status != reservePending {
		return errstack.Wrapf(ErrTransfer, "world %q holds no booking %d", w.name, id)
	}
	r.hold = true
	return nil
}

// Admit lets the player of standby booking id in: its parked connection
// is welcomed now (Arrive places it), or as soon as it connects. Call it
// on the world's worker (a hook, or Do).
func (w *World) Admit(id uint64) error {
	w.resMu.Lock()
	r := w.res[id]
	ok := r != nil && r.status == reservePending
	if ok {
		r.hold = false
	}
	w.resMu.Unlock()
	if !ok {
		return errstack.Wrapf(ErrTransfer, "world %q holds no booking %d", w.name, id)
	}
	if p := w.parked[id]; p != nil {
		delete(w.parked, id)
		w.nParked.Store(int32(len(w.parked)))
		w.join(p)
	}
	return nil
}

// unpark closes the parked connection of booking id, if any; on the
// worker.
func (w *World) unpark(id uint64, reason int, text string) {
	if p := w.parked[id]; p != nil {
		delete(w.parked, id)
		w.nParked.Store(int32(len(w.parked)))
		p.bye(reason, text)
		w.s.release(p)
	}
}

// sweepParked closes the parked connections whose place was given up or
// expired, and forgets those that closed; on the worker, once a second.
func (w *World) sweepParked() {
	now := time.Now()
	for id, p := range w.parked {
		w.resMu.Lock()
		r := w.res[id]
		live := r != nil && r.status == reservePending && now.Before(r.expires)
		w.resMu.Unlock()
		select {
		case <-p.conn.Done():
			live = false
		default:
		}
		if !live {
			w.unpark(id, byeRefused, "the standby place expired")
		}
	}
}

// Load returns the players in the world and the places booked for players
// on their way.
func (w *World) Load() (players, booked int) {
	w.resMu.Lock()
	defer w.resMu.Unlock()
	w.sweep(time.Now())
	return len(w.present), w.pending
}

// Players returns the players in the world, sorted.
func (w *World) Players() []string {
	w.resMu.Lock()
	out := make([]string, 0, len(w.present))
	for p := range w.present {
		out = append(out, p)
	}
	w.resMu.Unlock()
	slices.Sort(out)
	return out
}

// sweep gives up the bookings past their expiry and forgets settled ones
// after a while; w.resMu is held.
func (w *World) sweep(now time.Time) {
	if now.Before(w.nextSweep) {
		return
	}
	w.nextSweep = now.Add(time.Second)
	for id, r := range w.res {
		switch {
		case r.status == reservePending && now.After(r.expires):
			r.status = reserveCancelled
			w.pending--
		case r.status != reservePending && now.After(r.expires.Add(settledForget)):
			delete(w.res, id)
		}
	}
}

// Destination returns the world as the destination of transfers from the
// other worlds of its server: the client stays on the same server.
func (w *World) Destination() Destination { return localDest{w} }

type localDest struct{ w *World }

func (d localDest) Book(_ context.Context, player string, state []byte, arrived func()) (Booking, error) {
	return d.w.Reserve(player, state, 0, arrived)
}

func (d localDest) Settle(_ context.Context, b Booking) (bool, error) { return d.w.Settle(b.ID), nil }

// transfer is a player on its way out of this world. Its fields, and
// World.moving, are under World.resMu; done runs on the worker.
type transfer struct {
	wp        *worldPeer
	to        Destination
	done      func(error)
	b         Booking
	booked    bool
	gone      bool // its connection closed meanwhile
	settling  bool
	timer     *time.Timer
	standby   bool // World.Standby: the player plays on until it arrives
	cancelled bool // a standby given up before its booking came back
}

// Transfer moves player to another world: a portal, a map change, a line
// switch. to books the player's place there with state (the game's own
// encoding of the player, which the destination's WorldConfig.Arrive
// receives); the player's client is told where to go and connects to it
// by itself, over a new connection, before it closes this one.
//
// The player stays in this world until the destination has it, its
// commands ignored meanwhile (its state is in state). Then its entity
// leaves this world (WorldConfig.Leave runs) and done(nil) is called. If
// the destination refuses or cannot be reached, or the client cannot
// connect to it, the player stays here and done gets an error that
// matches ErrTransfer. A crash of either process on the way never leaves
// the player in both worlds or in neither (SPEC.md section 9.3). done runs
// on the world's worker, or on the goroutine that closes the world, and
// may be nil. Transfer may be called from any goroutine, the world's
// hooks included: it does not wait.
func (w *World) Transfer(player string, to Destination, state []byte, done func(error)) error {
	_, err := w.transfer(player, to, state, done, false)
	return err
}

// Standby books player a standby place at to (a destination that holds
// one: Booking.Standby, as the next cell of a map does) and tells its
// client to connect there now and wait. The player stays in this world
// and plays on. When the destination admits it (World.Admit, at the
// crossing), the client switches to the waiting connection at once, the
// player leaves this world (WorldConfig.Leave runs) and done(nil) is
// called, as for a Transfer. cancel gives the standby up (the player
// turned back from the border): the destination closes the waiting
// connection, and done gets an error that matches ErrTransfer, as it does
// when the destination refuses or the place expires. Transfer refuses a
// player with a standby under way: cancel it first.
func (w *World) Standby(player string, to Destination, state []byte, done func(error)) (cancel func(), err error) {
	t, err := w.transfer(player, to, state, done, true)
	if t == nil {
		return func() {}, err
	}
	return func() {
		w.resMu.Lock()
		t.cancelled = true
		booked := t.booked
		w.resMu.Unlock()
		if booked {
			w.settle(t)
		} // else book settles it when the booking comes back
	}, nil
}

func (w *World) transfer(player string, to Destination, state []byte, done func(error), standby bool) (*transfer, error) {
	if to == nil {
		return nil, errstack.Wrapf(ErrConfig, "transfer of %q: no destination", player)
	}
	if done == nil {
		done = func(error) {}
	}
	w.resMu.Lock()
	wp := w.present[player]
	var err error
	switch {
	case w.resClosed:
		w.resMu.Unlock()
		return nil, errstack.Wrapf(ErrClosed, "world %q", w.name)
	case wp == nil:
		err = errstack.Wrapf(ErrTransfer, "player %q is not in world %q", player, w.name)
	case w.moving[player] != nil:
		err = errstack.Wrapf(ErrTransfer, "player %q is already on its way out of world %q", player, w.name)
	}
	if err != nil {
		w.resMu.Unlock()
		if !w.host.Do(func() { done(err) }) {
			done(err) // closing meanwhile
		}
		return nil, nil
	}
	t := &transfer{wp: wp, to: to, done: done, standby: standby}
	w.moving[player] = t
	if !standby {
		w.nMoving.Add(1)
	}
	w.resMu.Unlock()
	go w.book(t, player, state)
	return t, nil
}

// book books the player's place and tells its client where to go, off
// the worker: a transfer costs the client no wait for a world tick.
func (w *World) book(t *transfer, player string, state []byte) {
	ctx, cancel := context.WithTimeout(context.Background(), bookTimeout)
	b, err := t.to.Book(ctx, player, state, func() { w.host.Do(func() { w.settled(t, true) }) })
	cancel()
	if err == nil && (len(b.Ticket) > maxMoveTicket || len(b.URL) > maxMoveURL || checkName("world", b.World) != nil) {
		go t.to.Settle(context.Background(), b)
		err = fmt.Errorf("booking does not fit a move message: world %q, URL of %d bytes, ticket of %d", b.World, len(b.URL), len(b.Ticket))
	}
	if err == nil && t.standby && !b.Standby {
		go t.to.Settle(context.Background(), b)
		err = fmt.Errorf("world %q holds no standby places", b.World)
	}
	w.resMu.Lock()
	if w.moving[player] != t {
		w.resMu.Unlock()
		if err == nil {
			go t.to.Settle(context.Background(), b) // the world closed: give the place up
		}
		return
	}
	if err != nil {
		w.resMu.Unlock()
		w.s.log.Info("transfer refused", "world", w.name, "player", player, "err", err)
		w.host.Do(func() { w.ended(t, false, errstack.Wrapf(ErrTransfer, "player %q to another world: %v", player, err)) })
		return
	}
	t.b, t.booked = b, true
	gone := t.gone || t.cancelled
	if !gone {
		t.timer = time.AfterFunc(time.Until(b.Expires)+settleGrace, func() { w.settle(t) })
	}
	w.resMu.Unlock()
	if gone || t.wp.conn.SendReliable(appendMove(nil, &move{world: b.World, url: b.URL, ticket: b.Ticket, seamless: b.Seamless, standby: t.standby})) != nil {
		w.settle(t)
	}
}

// settle asks the destination, off the worker, whether the player arrived,
// until it answers or settleGiveUp has passed.
func (w *World) settle(t *transfer) {
	w.resMu.Lock()
	if t.settling || !t.booked || w.moving[t.wp.ticket.Player] != t {
		w.resMu.Unlock()
		return
	}
	t.settling = true
	w.resMu.Unlock()
	deadline := time.Now()
	if t.b.Expires.After(deadline) {
		deadline = t.b.Expires // until then the player may still arrive
	}
	deadline = deadline.Add(settleGiveUp)
	go func() {
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			arrived, err := t.to.Settle(ctx, t.b)
			cancel()
			if err == nil {
				w.host.Do(func() { w.settled(t, arrived) })
				return
			}
			if time.Now().After(deadline) {
				w.s.log.Warn("transfer: the destination never answered; the player stays", "world", w.name, "player", t.wp.ticket.Player, "to", t.b.World, "err", err)
				w.host.Do(func() { w.settled(t, false) })
				return
			}
			time.Sleep(settleRetry)
		}
	}()
}

// settled runs on the worker once the transfer's outcome is known.
func (w *World) settled(t *transfer, arrived bool) {
	if arrived {
		w.ended(t, true, nil)
		return
	}
	w.ended(t, false, errstack.Wrapf(ErrTransfer, "player %q did not arrive in world %q", t.wp.ticket.Player, t.b.World))
}

// ended runs on the worker at the end of t (if it is not over already):
// the player leaves the world when it moved, and when it stayed but its
// connection has closed meanwhile.
func (w *World) ended(t *transfer, moved bool, err error) {
	w.resMu.Lock()
	if w.moving[t.wp.ticket.Player] != t {
		w.resMu.Unlock()
		return
	}
	delete(w.moving, t.wp.ticket.Player)
	if !t.standby {
		w.nMoving.Add(-1)
	}
	gone := t.gone
	w.resMu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
	}
	w.s.metrics.transferEnded(moved)
	if moved {
		// Its credentials here admit it no more: a resume is told where
		// it went (the player is in exactly one world).
		w.s.creds.moved(t.wp.ticket.Player, w.name, t.wp.ticket.Session, t.b.World, t.b.URL, time.Now())
		w.leave(t.wp)
		t.wp.bye(byeMoved, t.b.World)
	} else if gone {
		w.leave(t.wp)
	}
	t.done(err)
}

// moveFailed runs on the worker when a client says it could not make its
// move: the destination is asked to give the place up.
func (w *World) moveFailed(wp *worldPeer, text string) {
	w.resMu.Lock()
	t := w.moving[wp.ticket.Player]
	ok := t != nil && t.wp == wp && t.booked
	w.resMu.Unlock()
	if !ok {
		w.s.metrics.drop("engine", "unexpected")
		return
	}
	w.s.log.Info("transfer: the client could not connect", "world", w.name, "player", wp.ticket.Player, "to", t.b.World, "reason", text)
	w.settle(t)
}

// leaving reports whether wp is on its way out: its connection's close
// waits for the transfer's outcome (it may have arrived), and sets off
// the settling.
func (w *World) leaving(wp *worldPeer) bool {
	w.resMu.Lock()
	t := w.moving[wp.ticket.Player]
	if t == nil || t.wp != wp {
		w.resMu.Unlock()
		return false
	}
	t.gone = true
	booked := t.booked
	w.resMu.Unlock()
	if booked {
		w.settle(t)
	}
	return true
}

// frozen reports whether player is on its way out (its packets are
// dropped); called on the worker per packet, it costs an atomic load
// while no one is.
func (w *World) frozen(player string) bool {
	if w.nMoving.Load() == 0 {
		return false
	}
	w.resMu.Lock()
	defer w.resMu.Unlock()
	t := w.moving[player]
	return t != nil && !t.standby
}

// closeTransfers ends the transfers of a closed world, on the goroutine
// that closes it: the bookings expire at their destinations if not taken.
func (w *World) closeTransfers() {
	w.resMu.Lock()
	ts := make([]*transfer, 0, len(w.moving))
	for _, t := range w.moving {
		ts = append(ts, t)
	}
	clear(w.moving)
	w.nMoving.Store(0)
	// Standby places expire at their destinations; the clients waiting
	// there are told then.
	w.resMu.Unlock()
	for _, t := range ts {
		if t.timer != nil {
			t.timer.Stop()
		}
		t.done(errstack.Wrapf(ErrClosed, "world %q closed during the transfer of %q", w.name, t.wp.ticket.Player))
	}
}

// arrival finds the booking a joining peer's ticket takes, or checks the
// world's room for a player who has none; w.resMu is held.
func (w *World) arrival(p *peer) (*reservation, error) {
	r := w.res[p.ticket.Nonce]
	if r != nil && r.player == p.ticket.Player {
		if r.status != reservePending || time.Now().After(r.expires) {
			return nil, fmt.Errorf("%w: the place booked in world %q was given up", ErrTransfer, w.name)
		}
		return r, nil
	}
	if w.cfg.MaxPlayers > 0 && len(w.present)+w.pending >= w.cfg.MaxPlayers {
		return nil, fmt.Errorf("%w: world %q holds %d players and %d booked places of %d", ErrFull, w.name, len(w.present), w.pending, w.cfg.MaxPlayers)
	}
	return nil, nil
}

// place makes the player's entity: the Arrive hook for a player who came
// with a booking, Join for one who did not.
func (w *World) place(player string, r *reservation) (interest.ID, error) {
	switch {
	case r != nil && w.cfg.Arrive != nil:
		return w.cfg.Arrive(w.world, player, r.state)
	case w.cfg.Join != nil:
		return w.cfg.Join(w.world, player)
	}
	return defaultJoin(w.world, player)
}

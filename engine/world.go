//go:build !js

package engine

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/sched"
)

// WorldConfig describes an interest world hosted by a Server.
type WorldConfig struct {
	// Interest is the world's configuration.
	Interest interest.Config
	// Join places a joining player: it returns the player's entity,
	// spawned (World.Spawn) or found. The server then attaches the
	// connection to it (World.Join): the hook does not call Join, which is
	// for a game that drives an interest.World without a Server. It runs
	// on the world's worker. Nil spawns a player entity at the map's
	// centre (Width*RegionSize/2, Height*RegionSize/2 in world units),
	// with life and mana 100 and the player id as its name.
	Join func(w *interest.World, player string) (interest.ID, error)
	// Arrive places a player who came through a transfer (World.Transfer,
	// World.Reserve) with the state its old world gave it; it runs on the
	// world's worker like Join. Nil calls Join, and the state is dropped.
	Arrive func(w *interest.World, player string, state []byte) (interest.ID, error)
	// Leave is called on the world's worker when a player's connection
	// closes, or when it has moved to another world (World.Transfer). Nil
	// despawns its entity.
	Leave func(w *interest.World, player string, id interest.ID)
	// Tick runs the game's own logic on the world's worker before every
	// world tick: NPCs, bots, combat.
	Tick func(w *interest.World, now time.Time)
	// AfterTick runs on the world's worker after every world tick: what
	// must see the frame's movement (a cell's border messages, package
	// cluster).
	AfterTick func(w *interest.World, now time.Time)
	// Start is the instant of the world's frame 0 (default: when it is
	// created). The cells of one map share it, so that their frame
	// numbers agree.
	Start time.Time
	// MaxPlayers caps the players in the world, places booked for
	// players on their way (World.Reserve) included: a player over the cap
	// is refused with ErrFull. 0: no cap but the server's MaxConns.
	MaxPlayers int
	// Sender, when set, receives the world's packets for players that
	// have no connection here: server-side bots that run their own client
	// halves. It is called on the world's worker.
	Sender interest.Sender
	// Checkpoint, when set, returns the game's own state of the world
	// (NPCs' brains, players' inventories: what the interest.World does
	// not hold), at most MaxGameState bytes the game encodes, for
	// World.Checkpoint. It runs on the world's worker, between two ticks;
	// entity IDs are kept across a restore, so state may be keyed by them.
	Checkpoint func(w *interest.World) []byte
	// Restore, when set, gives the game back its state from a checkpoint
	// (Server.RestoreWorld, World.Release), on the world's worker, once
	// its entities are back and before it ticks. An error fails the
	// restore.
	Restore func(w *interest.World, state []byte) error
}

// World is an interest world hosted by a Server. Its interest.World is
// owned by one worker: reach it with Do, or from the WorldConfig hooks.
type World struct {
	s     *Server
	name  string
	cfg   WorldConfig
	world *interest.World
	start time.Time

	// Worlds that outlive their server (worldstore.go).
	held           atomic.Bool     // PrepareWorld: it does not tick until Release
	feed           WorldFeed       // owned by the worker
	standby        string          // owned by the worker: SetStandby's URL
	restored       int             // the frame a crash restore went back to; -1: none
	fromCheckpoint map[string]bool // the players told it yet, owned by the worker
	snapBuf        []byte

	host *sched.Host[worldPacket]

	mu     sync.Mutex
	closed bool
	stats  interest.Stats

	// Bookings (move.go), and the players they count against MaxPlayers.
	resMu     sync.Mutex
	res       map[uint64]*reservation // by ticket nonce
	present   map[string]*worldPeer   // players joined
	moving    map[string]*transfer    // players on their way out, by player id
	nMoving   atomic.Int32            // len(moving), read without the lock
	pending   int                     // bookings not yet taken
	nextSweep time.Time
	resClosed bool

	// Owned by the worker.
	peers   map[interest.ID]*worldPeer
	players map[string]*worldPeer
	batch   []interest.Uplink // the inbox's packets from current peers
	parked  map[uint64]*peer  // standby connections waiting for Admit, by booking
	nParked atomic.Int32      // len(parked), read off the worker
	away    map[string]away   // players whose connection was lost, by player id
	frames  int
}

type worldPeer struct {
	*peer
	id interest.ID
}

type worldPacket struct {
	from *worldPeer
	msg  []byte
}

// Name returns the world's name.
func (w *World) Name() string { return w.name }

// Config returns the world's interest configuration, with defaults.
func (w *World) Config() interest.Config { return w.world.Config() }

// Stats returns the world's counters as of its last tick.
func (w *World) Stats() interest.Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Player returns the player whose connection is attached to entity id.
// Call it on the world's worker (in a hook, or in Do).
func (w *World) Player(id interest.ID) (string, bool) {
	if wp := w.peers[id]; wp != nil {
		return wp.ticket.Player, true
	}
	return "", false
}

// Do runs f on the world's worker before its next tick.
func (w *World) Do(f func(*interest.World)) {
	w.host.Do(func() { f(w.world) })
}

// Closed reports whether the world was closed (Close, or the server's
// Shutdown). A transfer's done may then run on the goroutine that closes
// it, beside the world's worker: a done that touches what only the
// worker may touch checks Closed first and leaves it.
func (w *World) Closed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// Close closes the world: its connections are told and closed.
func (w *World) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	w.resMu.Lock()
	w.resClosed = true
	w.resMu.Unlock()
	w.closeTransfers()
	w.host.Close() // its worker says goodbye to the players (worldLoop.Stop)
	w.s.forget(w.name)
}

func (w *World) attach(p *peer) error {
	if p.ticket.Role != RolePlayer {
		return fmt.Errorf("%w: a %v cannot join world %q", ErrRole, p.ticket.Role, w.name)
	}
	if !w.host.Do(func() { w.join(p) }) {
		return fmt.Errorf("%w: world %q", ErrClosed, w.name)
	}
	return nil
}

// join runs on the worker: it places the player (taking its booking if
// it came with one), makes it an observer and welcomes it.
func (w *World) join(p *peer) {
	player := p.ticket.Player
	if w.frozen(player) {
		w.refuse(p, fmt.Errorf("%w: player %q is on its way out of world %q", ErrTransfer, player, w.name))
		return
	}
	w.resMu.Lock()
	r := w.res[p.ticket.Nonce]
	booked := r != nil && r.player == player // placed by its booking (a transfer)
	standby := booked && r.hold
	back := booked && string(r.state) == rejoinMagic // to its entity here (a world that moved)
	w.resMu.Unlock()
	if w.held.Load() && !standby {
		w.refuse(p, w.errHeld())
		return
	}
	if old := w.players[player]; old != nil {
		if booked {
			w.leave(old)
		} else {
			// The same player again: the newer connection wins, and takes
			// the entity over (the old one may be a path that died, which
			// the server has not noticed yet).
			delete(w.peers, old.id)
			delete(w.players, player)
			w.world.Leave(old.id)
			w.away[player] = away{id: old.id, until: time.Now()}
		}
		old.bye(byeReplaced, "")
	}
	if a, ok := w.away[player]; ok && (!standby || back) { // back from a lost connection: to its entity
		delete(w.away, player)
		switch {
		case back:
			if w.rejoinBooked(p, a.id) {
				return
			}
		case !booked && w.rejoin(p, a.id, nil):
			return
		}
		w.resMu.Lock()
		delete(w.present, player) // its entity is gone, or it comes with a booking: a fresh place below
		w.resMu.Unlock()
		if booked {
			w.unplace(player, a.id)
		}
	}
	// The booking is taken when the welcome is on its way, under resMu:
	// from then on Settle says the player arrived.
	w.resMu.Lock()
	r, err := w.arrival(p)
	if err == nil && r != nil && r.hold {
		w.resMu.Unlock()
		w.parked[p.ticket.Nonce] = p // a standby: welcomed at Admit
		w.nParked.Store(int32(len(w.parked)))
		return
	}
	var id interest.ID
	if err == nil {
		id, err = w.place(player, r)
	}
	if err == nil {
		join := w.world.Join
		if p.wire >= inheritWire {
			join = w.world.JoinInherited // a client that followed its entity across a cell border goes on in its command sequence
		}
		if err = join(id); err != nil {
			w.unplace(player, id)
		}
	}
	if err == nil {
		if fo := w.failoverFor(player); fo != nil && p.wire >= failoverWire {
			p.conn.SendReliable(appendFailover(nil, fo))
		}
		err = p.conn.SendReliable(appendWelcome(nil, &welcome{
			version: p.wire, mode: Interest, target: w.name, role: RolePlayer, self: id, interest: w.world.Config(),
		}))
		if err != nil {
			w.world.Leave(id)
			w.unplace(player, id)
		}
	}
	if err == nil {
		w.present[player] = nil // set to its peer below
		if r != nil {
			r.status = reserveArrived
			w.pending--
		}
	}
	w.resMu.Unlock()
	if err != nil {
		w.refuse(p, err)
		return
	}
	w.attachPeer(p, id, r)
}

// attachPeer makes p, welcomed, the connection of entity id (r: the
// booking it came with, if any).
func (w *World) attachPeer(p *peer, id interest.ID, r *reservation) {
	player := p.ticket.Player
	wp := &worldPeer{peer: p, id: id}
	w.peers[id] = wp
	w.players[player] = wp
	w.resMu.Lock()
	w.present[player] = wp
	w.resMu.Unlock()
	if r != nil && r.arrived != nil {
		r.arrived()
	}
	p.onEngine = func(msg []byte) {
		if engineType(msg) != typeMoveFail {
			w.s.metrics.drop("engine", "unexpected")
			return
		}
		text, err := readMoveFail(msg)
		if err != nil {
			w.s.metrics.drop("engine", "malformed")
			return
		}
		w.host.Do(func() { w.moveFailed(wp, text) })
	}
	w.s.offerResume(p)
	p.receive(func(msg []byte, _ time.Time) { w.host.Deliver(worldPacket{wp, msg}) }, func() {
		w.Do(func(*interest.World) { w.disconnected(wp) })
		w.s.release(p)
	})
}

// away is a player whose connection was lost, whose entity the world
// keeps until until for it to come back (Config.ResumeWindow).
type away struct {
	id    interest.ID
	until time.Time
}

// rejoin attaches p, a player back from a lost connection, to its
// entity id, and reports false when the entity is gone (the game
// despawned it): the player is then placed afresh.
func (w *World) rejoin(p *peer, id interest.ID, r *reservation) bool {
	if _, ok := w.world.Logic(id); !ok {
		return false
	}
	if err := w.world.Join(id); err != nil {
		return false
	}
	if fo := w.failoverFor(p.ticket.Player); fo != nil && p.wire >= failoverWire {
		p.conn.SendReliable(appendFailover(nil, fo)) // before the welcome: the client reads it as it takes the connection
	}
	err := p.conn.SendReliable(appendWelcome(nil, &welcome{
		version: p.wire, mode: Interest, target: w.name, role: RolePlayer, self: id, interest: w.world.Config(),
	}))
	if err != nil {
		w.world.Leave(id)
		w.away[p.ticket.Player] = away{id: id, until: time.Now().Add(w.s.cfg.ResumeWindow)}
		w.s.release(p)
		return true
	}
	if r == nil {
		w.s.metrics.resumed()
	}
	w.attachPeer(p, id, r)
	return true
}

// rejoinBooked attaches p, which came with a booking to take its entity
// id back (RejoinState: the world moved here whole), to it, taking the
// booking; it reports false when the booking or the entity is gone: the
// player is placed afresh.
func (w *World) rejoinBooked(p *peer, id interest.ID) bool {
	w.resMu.Lock()
	r, err := w.arrival(p)
	if err != nil || r == nil {
		w.resMu.Unlock()
		return false
	}
	r.status = reserveArrived
	w.pending--
	w.resMu.Unlock()
	return w.rejoin(p, id, r)
}

// hold keeps the entity of wp, whose connection was lost, for the
// player to come back within the resume window; it reports false when
// the player is to leave now.
func (w *World) hold(wp *worldPeer) bool {
	if w.s.cfg.ResumeWindow <= 0 || w.peers[wp.id] != wp || !pathLost(wp.conn) {
		return false
	}
	delete(w.peers, wp.id)
	delete(w.players, wp.ticket.Player)
	w.world.Leave(wp.id) // no observer: nothing is sent for it
	w.away[wp.ticket.Player] = away{id: wp.id, until: time.Now().Add(w.s.cfg.ResumeWindow)}
	return true
}

// dropAway lets go of the players that did not come back in time, on the
// worker, once a second.
func (w *World) dropAway(now time.Time) {
	for player, a := range w.away {
		if !now.Before(a.until) {
			w.letGo(player, a)
		}
	}
}

// letGo lets go of player's entity, held for it while it was away; on the
// worker.
func (w *World) letGo(player string, a away) {
	delete(w.away, player)
	w.resMu.Lock()
	delete(w.present, player)
	w.resMu.Unlock()
	w.unplace(player, a.id)
}

// refuse turns a joining connection away.
func (w *World) refuse(p *peer, err error) {
	w.s.log.Warn("world join refused", "world", w.name, "player", p.ticket.Player, "err", err)
	p.bye(byeFor(err), err.Error())
	w.s.release(p)
}

// unplace undoes place for a join that failed after it.
func (w *World) unplace(player string, id interest.ID) {
	if w.cfg.Leave != nil {
		w.cfg.Leave(w.world, player, id)
	} else {
		w.world.Despawn(id)
	}
}

func defaultJoin(w *interest.World, player string) (interest.ID, error) {
	c := w.Config()
	mid := interest.Vec{X: int32(c.Width * c.RegionSize / 2), Y: int32(c.Height * c.RegionSize / 2)}
	name := player
	if len(name) > interest.MaxName {
		name = name[:interest.MaxName]
	}
	return w.Spawn(interest.Player, interest.Logic{Pos: mid, Dest: mid, Life: 100, Mana: 100}, interest.Display{Name: name})
}

// disconnected runs on the worker when a player's connection is gone. A
// player on its way out stays until its transfer is settled: it may have
// arrived at its destination.
func (w *World) disconnected(wp *worldPeer) {
	if !w.leaving(wp) && !w.hold(wp) {
		w.leave(wp)
	}
}

// dropOrphans closes the connections of players whose entity is gone
// from the world by other means than their leaving (the game despawned
// it; the cell it was handed to died before its client switched): they
// would see nothing and steer nothing. On the worker, once a second.
func (w *World) dropOrphans() {
	for id, wp := range w.peers {
		if _, ok := w.world.Logic(id); ok {
			continue
		}
		w.s.log.Info("world: a player's entity is gone; closing its connection", "world", w.name, "player", wp.ticket.Player, "entity", id)
		w.leave(wp)
		wp.bye(byeClosed, "the player's entity is gone from world "+w.name)
	}
}

// leave runs on the worker when a player leaves the world.
func (w *World) leave(wp *worldPeer) {
	if w.peers[wp.id] != wp {
		return // already replaced
	}
	delete(w.peers, wp.id)
	delete(w.players, wp.ticket.Player)
	w.resMu.Lock()
	delete(w.present, wp.ticket.Player)
	w.resMu.Unlock()
	w.world.Leave(wp.id)
	w.unplace(wp.ticket.Player, wp.id)
}

// worldLoop is the world's loop on its Host.
type worldLoop struct{ w *World }

// Take hands the world the packets of its current players, in one batch.
func (l worldLoop) Take(in []worldPacket) {
	w := l.w
	if !w.ticking() {
		return // standing still: the clients send their moves again where it goes on
	}
	batch := w.batch[:0]
	for _, pk := range in {
		if w.frozen(pk.from.ticket.Player) {
			continue // on its way out: its state went with the transfer
		}
		if w.peers[pk.from.id] == pk.from {
			batch = append(batch, interest.Uplink{Player: pk.from.id, Msg: pk.msg})
		}
	}
	w.world.DeliverAll(batch) // a bad packet is counted by the world
	clear(batch)
	w.batch = batch[:0]
}

// Stop says goodbye to the players of a closed world.
func (l worldLoop) Stop() {
	for _, wp := range l.w.peers {
		wp.bye(byeClosed, l.w.name)
	}
	for id := range l.w.parked {
		l.w.unpark(id, byeClosed, l.w.name)
	}
}

// Tick runs the game's tick and the world's frame.
func (l worldLoop) Tick(now time.Time) time.Time {
	w := l.w
	if !w.ticking() {
		// Held for a move, or without its lease: the world stands still,
		// its worker still doing what is queued for it, soon (a move's
		// hand-over and release wait on it, and every player with them).
		return now.Add(min(holdPoll, w.world.Config().Period()))
	}
	start := time.Now()
	if w.cfg.Tick != nil {
		w.cfg.Tick(w.world, now)
	}
	w.world.Tick(now)
	if w.cfg.AfterTick != nil {
		w.cfg.AfterTick(w.world, now)
	}
	if w.frames++; w.frames%w.world.Config().Hz == 0 {
		if len(w.parked) > 0 {
			w.sweepParked()
		}
		w.dropOrphans()
		w.dropAway(now)
	}
	w.s.metrics.worldTick(time.Since(start))
	st := w.world.Stats()
	w.mu.Lock()
	prev := w.stats
	w.stats = st
	w.mu.Unlock()
	w.s.metrics.worldDelta(&prev, &st)
	return w.world.NextFrame()
}

// ticking reports whether the world runs its frames: not while it is
// held (PrepareWorld) or its feed's lease says no. On the worker.
func (w *World) ticking() bool {
	return !w.held.Load() && (w.feed.MayTick == nil || w.feed.MayTick())
}

// worldSender reaches a world's players through their connections, and
// the players with none (server-side bots) through WorldConfig.Sender.
type worldSender struct{ w *World }

func (s worldSender) SendUnreliable(id interest.ID, msg []byte) error {
	if p := s.w.peers[id]; p != nil {
		return p.conn.SendUnreliable(msg)
	}
	if s.w.cfg.Sender != nil {
		return s.w.cfg.Sender.SendUnreliable(id, msg)
	}
	return errAway
}

func (s worldSender) SendReliable(id interest.ID, msg []byte) error {
	if p := s.w.peers[id]; p != nil {
		return p.conn.SendReliable(msg)
	}
	if s.w.cfg.Sender != nil {
		return s.w.cfg.Sender.SendReliable(id, msg)
	}
	return errAway
}

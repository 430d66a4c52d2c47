//go:build !js

package engine

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
)

// Room is a lockstep room hosted by a Server. Players join it with tickets
// naming it; the first time a player id joins it takes the next free
// slot, and a player who reconnects gets its slot back (the old
// connection, if still open, is closed).
type Room struct {
	s     *Server
	name  string
	cfg   lockstep.Config
	room  *lockstep.Room
	host  *sched.Host[roomPacket]
	slots []atomic.Pointer[peer] // the connection of each slot, nil when away

	mu      sync.Mutex
	spect   map[int]*peer // spectators by peer id (Players and above)
	delay   time.Duration // spectators' delay
	onEvent func(lockstep.Event)
	onClose func(idle bool)
	quality lockstep.Quality
	players map[string]int // player id to slot, kept after a disconnect
	closed  bool
	stats   lockstep.RoomStats
	pstats  []lockstep.PlayerStats
	absent  []bool // strict rooms: slots marked gone until their player joins (markAbsent); the worker's
	due     time.Time

	feed    RoomFeed     // the standby's (standby.go)
	standby string       // the standby's URL, told to clients
	parking []parkedPeer // a held room's connections, until Release; nil when not held

	mayCut    func() bool   // owned by the worker: RoomFeed.MayCut
	restore   *restoreState // owned by the worker: a restored room's gathering; nil for a room that cut its match from the start
	waiting   bool          // owned by the worker: frame 0 waits for players (Config.Start)
	qualityAt time.Time     // owned by the worker
	seats     seatWatch     // owned by the worker
	emptyAt   time.Time     // owned by the worker: since when no one is connected
	desynced  atomic.Bool
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

// Connected returns how many slots have a connection now (spectators not
// counted).
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
	r.host.Do(func() { f(r.room) })
}

// Close closes the room: its connections are told and closed, and the
// server forgets its name.
func (r *Room) Close() { r.close(false) }

// close closes the room; idle says it was for Config.RoomIdleTimeout.
func (r *Room) close(idle bool) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	onClose, fed := r.onClose, r.feed.Closed
	r.mu.Unlock()
	if fed != nil {
		defer fed()
	}
	if onClose != nil {
		defer onClose(idle)
	}
	r.host.Close()
	r.mu.Lock()
	frames := r.stats.Frames
	r.mu.Unlock()
	if frames > 0 {
		r.s.metrics.matchEnded(r.desynced.Load())
	}
	for i := range r.slots {
		if p := r.slots[i].Swap(nil); p != nil {
			p.bye(byeClosed, r.name)
		}
	}
	r.mu.Lock()
	for _, p := range r.spect {
		p.bye(byeClosed, r.name)
	}
	for _, pp := range r.parking {
		pp.p.bye(byeClosed, r.name)
		defer r.s.release(pp.p)
	}
	r.parking = nil
	r.mu.Unlock()
	r.s.forget(r.name)
}

// SetSpectatorDelay sets how far behind the cut spectators who join from
// now on watch (default 0). A delay keeps a spectator from relaying the
// match live to a player.
func (r *Room) SetSpectatorDelay(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delay = max(d, 0)
}

// OnEvent sets a function that receives the room's events (desyncs with
// the diverging players, state dumps, players back live after a
// reconnect, game-event verdicts, a server-side simulation falling
// behind). It runs on the room's worker: keep it short. At the end of a
// match that verifies events (lockstep.Config.VerifyEvents), read the
// agreed result on the worker: r.Do(func(l *lockstep.Room) { res := l.Result(); ... }).
func (r *Room) OnEvent(f func(lockstep.Event)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onEvent = f
}

// OnClose sets a function called once the room is closed: by Close, by
// the server's Shutdown, or, with idle set, for having been empty for
// Config.RoomIdleTimeout. The room's name is free again by then, so the
// function may create a fresh room of the same name.
func (r *Room) OnClose(f func(idle bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onClose = f
}

// Quality returns the match's quality report as of the last second: RTT,
// loss each way, jitter, stalls, late drops, redundancy, bytes each way and
// reconnects, per player and spectator and for the whole match.
func (r *Room) Quality() lockstep.Quality {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.quality
}

// attach seats the ticket's player, or adds a spectator, and starts
// reading its connection. A player seen before gets its slot back and the
// frame log streamed from frame 0 (lockstep.Room.Join); so does a player
// who first joins a match already under way.
func (r *Room) attach(p *peer) error {
	t := p.ticket
	if err := r.wireFor(p.wire); err != nil {
		return err
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return fmt.Errorf("%w: room %q", ErrClosed, r.name)
	}
	if t.Role == RoleSpectator {
		delay := r.delay
		r.mu.Unlock()
		if !r.host.Do(func() { r.addSpectator(p, delay) }) {
			return fmt.Errorf("%w: room %q", ErrClosed, r.name)
		}
		return nil
	}
	slot, seen := r.players[t.Player]
	if !seen {
		if len(r.players) >= r.cfg.Players {
			r.mu.Unlock()
			return fmt.Errorf("%w: room %q has all %d slots taken", ErrFull, r.name, r.cfg.Players)
		}
		slot = len(r.players)
		r.players[t.Player] = slot
	}
	arrived := len(r.players)
	if r.parking != nil { // a held room (RoomState.Hold): welcomed at Release
		r.parking = append(r.parking, parkedPeer{p, slot, seen, arrived})
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	return r.seat(p, slot, seen, arrived)
}

// parkedPeer is a connection a held room took, to be seated at Release.
type parkedPeer struct {
	p       *peer
	slot    int
	seen    bool
	arrived int
}

// seat welcomes a player's connection in its slot and starts reading it.
func (r *Room) seat(p *peer, slot int, seen bool, arrived int) error {
	t := p.ticket
	r.mu.Lock()
	standby := r.standby
	r.mu.Unlock()
	restored := r.restoredFrom()
	if standby != "" || restored >= 0 {
		// Before the welcome: a client that kept its lockstep state reads
		// it as it takes the new connection (SPEC.md §9.6).
		if err := p.conn.SendReliable(appendFailover(nil, &failover{standby: standby, carry: restored})); err != nil {
			return err
		}
	}
	if err := p.conn.SendReliable(appendWelcome(nil, &welcome{
		version: p.wire, mode: Lockstep, target: r.name, role: t.Role, slot: slot, lockstep: r.cfg,
	})); err != nil {
		return err
	}
	old := r.slots[slot].Swap(p)
	if old != nil {
		old.bye(byeReplaced, "")
	}
	r.s.offerResume(p)
	at := time.Now()
	if restored >= 0 {
		p.onEngine = func(msg []byte) {
			if engineType(msg) == typeFailover {
				r.host.Deliver(roomPacket{Slot: slot, Msg: msg, At: time.Now()})
			} else {
				r.s.metrics.drop("engine", "unexpected")
			}
		}
	}
	r.Do(func(room *lockstep.Room) {
		if r.restore != nil {
			r.arrived(slot, p, time.Now()) // its carry says where it stands
			return
		}
		r.arrive(arrived, at)
		if r.absent[slot] || seen || room.NextFrame() > 0 {
			r.absent[slot] = false
			room.Join(slot, time.Now()) // a fresh client: stream it the match so far
		}
	})
	p.receive(func(msg []byte, now time.Time) { r.host.Deliver(roomPacket{Slot: slot, Msg: msg, At: now}) }, func() {
		if r.slots[slot].CompareAndSwap(p, nil) { // not replaced: the player is away
			r.Do(func(room *lockstep.Room) { room.Leave(slot) })
		}
		r.s.release(p)
	})
	return nil
}

// arrive runs on the worker when a player has taken its slot, arrived
// of the room's players in all: a room that waits for its players starts
// when its Config.Start says.
func (r *Room) arrive(arrived int, now time.Time) {
	if !r.waiting || r.cfg.Start == lockstep.StartAllPlayers && arrived < r.cfg.Players {
		return
	}
	r.waiting = false
	r.room.StartAt(now)
	r.markAbsent()
	r.s.log.Info("room started", "room", r.name, "players", arrived)
}

// wireFor returns ErrWireVersion when a client that reads wire version
// wire cannot play in the room: a strict room, and an authoritative one
// (whose views come in parts), need strictWire.
func (r *Room) wireFor(wire int) error {
	switch {
	case wire >= strictWire:
	case r.cfg.Strict:
		return fmt.Errorf("%w: room %q is strict lockstep, which clients read from wire version %d; the client reads %d: update the client", ErrWireVersion, r.name, strictWire, wire)
	case r.cfg.Authoritative:
		return fmt.Errorf("%w: room %q is authoritative, whose views clients read from wire version %d; the client reads %d: update the client", ErrWireVersion, r.name, strictWire, wire)
	}
	return nil
}

// markAbsent, in a strict room that starts, marks the players not there
// gone until they join, so that the room does not wait for them; on the
// worker.
func (r *Room) markAbsent() {
	if !r.cfg.Strict {
		return
	}
	for i := range r.slots {
		if r.slots[i].Load() == nil {
			r.absent[i] = true
			r.room.Leave(i)
		}
	}
}

// addSpectator runs on the worker: the room takes the spectator, which is
// then welcomed with its peer id.
func (r *Room) addSpectator(p *peer, delay time.Duration) {
	id, err := r.room.AddSpectator(delay, time.Now())
	if err == nil {
		err = p.conn.SendReliable(appendWelcome(nil, &welcome{
			version: p.wire, mode: Lockstep, target: r.name, role: RoleSpectator, slot: id, lockstep: r.cfg,
		}))
	}
	if err != nil {
		if id >= r.cfg.Players {
			r.room.RemoveSpectator(id)
		}
		p.bye(byeFor(err), err.Error())
		r.s.release(p)
		return
	}
	r.mu.Lock()
	r.spect[id] = p
	r.mu.Unlock()
	r.s.offerResume(p)
	p.receive(func(msg []byte, now time.Time) { r.host.Deliver(roomPacket{Slot: id, Msg: msg, At: now}) }, func() {
		r.mu.Lock()
		delete(r.spect, id)
		r.mu.Unlock()
		r.Do(func(room *lockstep.Room) { room.RemoveSpectator(id) })
		r.s.release(p)
	})
}

// roomPacket is a packet for a lockstep room: from the peer in Slot (a
// player's slot or a spectator's id), received At.
type roomPacket struct {
	Slot int
	Msg  []byte
	At   time.Time
}

// roomLoop is the room's loop on its Host: the packets, then the cuts
// that are due, the events, and the counters the server reads.
type roomLoop struct{ r *Room }

// Take delivers the packets to the room.
func (l roomLoop) Take(in []roomPacket) {
	for _, p := range in {
		if isEngine(p.Msg) { // a client's carry, in a restored room
			l.r.takeCarry(p.Slot, p.Msg, p.At)
			continue
		}
		l.r.room.Deliver(p.Slot, p.Msg, p.At)
	}
}

func (roomLoop) Stop() {} // Close told the connections already

func (l roomLoop) Tick(now time.Time) time.Time {
	r := l.r
	if r.waiting { // no frames yet: keep the seats told and the idle clock running
		if now.Sub(r.qualityAt) >= time.Second {
			r.qualityAt = now
			r.tellSeats(now)
		}
		if l.idle(now) {
			r.s.log.Info("room closed: empty", "room", r.name, "after", r.s.cfg.RoomIdleTimeout)
			r.close(true)
		}
		return now.Add(r.cfg.Period())
	}
	if r.restore != nil && !r.gather(now) || r.mayCut != nil && !r.mayCut() {
		// Held: the players of a restored room are coming back, or the
		// standby may be taking the room over. The frames owed are cut
		// at once when it goes on.
		return now.Add(holdPoll)
	}
	r.mu.Lock()
	due := r.due
	r.mu.Unlock()
	if !due.IsZero() && r.room.NextFrame() > 0 {
		r.s.metrics.cutLateBy(now.Sub(due))
	}
	// The cut sends to every player: their connections' state is fetched
	// side by side first, not one send after another (transport.Warmer).
	for i := range r.slots {
		if p := r.slots[i].Load(); p != nil {
			p.warm()
		}
	}
	r.room.Tick(now)
	next := r.room.NextCut()
	if l.idle(now) {
		r.s.log.Info("room closed: empty", "room", r.name, "after", r.s.cfg.RoomIdleTimeout)
		r.close(true)
	}
	events := r.room.Events()
	var quality lockstep.Quality
	fresh := now.Sub(r.qualityAt) >= time.Second
	if fresh {
		quality, r.qualityAt = r.room.Quality(), now
	}
	r.mu.Lock()
	prev := r.stats
	r.stats = r.room.Stats()
	for i := range r.pstats {
		r.pstats[i] = r.room.PlayerStats(i)
	}
	if fresh {
		r.quality = quality
	}
	r.due = next
	onEvent := r.onEvent
	r.mu.Unlock()
	r.s.metrics.roomDelta(&prev, &r.stats)
	if fresh {
		r.tellSeats(now)
	}
	for _, e := range events {
		r.s.metrics.event(e.Kind.String())
		switch e.Kind {
		case lockstep.EventDesync:
			r.desynced.Store(true)
			r.s.log.Warn("desync", "room", r.name, "frame", e.Frame, "players", e.Players, "agreed", e.Agreed)
		case lockstep.EventDispute:
			r.desynced.Store(true)
			r.s.log.Warn("desync with no majority", "room", r.name, "frame", e.Frame, "players", e.Players)
		case lockstep.EventVerdict:
			r.s.log.Warn("game events disagree", "room", r.name, "frame", e.Frame, "players", e.Players)
		case lockstep.EventSimBehind:
			r.s.log.Warn("room simulation behind", "room", r.name, "frame", e.Frame, "behind", e.Behind)
		}
		if onEvent != nil {
			onEvent(e)
		}
	}
	return next
}

// holdPoll is how often a held room looks again.
const holdPoll = 5 * time.Millisecond

// restoredFrom returns, for a restored room, the frames it took from its
// standby's log (the carry its clients are asked for); -1 for a room
// that cut its match from the start.
func (r *Room) restoredFrom() int {
	if r.restore == nil {
		return -1
	}
	return r.restore.from // set before the room is registered, never changed
}

// idle reports whether the room has had no one connected for the server's
// RoomIdleTimeout.
func (l roomLoop) idle(now time.Time) bool {
	r := l.r
	limit := r.s.cfg.RoomIdleTimeout
	if limit <= 0 {
		return false
	}
	r.mu.Lock()
	watched := len(r.spect) > 0
	r.mu.Unlock()
	if watched || r.Connected() > 0 {
		r.emptyAt = time.Time{}
		return false
	}
	if r.emptyAt.IsZero() {
		r.emptyAt = now
	}
	return now.Sub(r.emptyAt) >= limit
}

// sender is the room's way to its players: the connection in each slot.
type roomSender struct{ r *Room }

func (s roomSender) peer(id int) *peer {
	if id < len(s.r.slots) {
		return s.r.slots[id].Load()
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return s.r.spect[id]
}

func (s roomSender) SendUnreliable(slot int, msg []byte) error {
	p := s.peer(slot)
	if p == nil {
		return errAway
	}
	return p.conn.SendUnreliable(msg)
}

func (s roomSender) SendReliable(slot int, msg []byte) error {
	p := s.peer(slot)
	if p == nil {
		return errAway
	}
	return p.conn.SendReliable(msg)
}

var errAway = errors.New("engine: player not connected")

// seatWatch is what the room last told its connections of its seats.
type seatWatch struct {
	told []Seat
	look []Seat // the next look's seats (the slice told before, reused): a look that tells nothing allocates nothing, after the first
	at   time.Time
	late []uint64 // each slot's late inputs (dropped and moved) at the last look
}

// seatsEvery is how often the room repeats its seats when nothing
// changed, for connections that joined since.
const seatsEvery = 5 * time.Second

// tellSeats runs on the worker once a second: it works out what each
// slot holds and, when that changed or seatsEvery has passed, tells every
// player and spectator.
func (r *Room) tellSeats(now time.Time) {
	w := &r.seats
	if w.late == nil {
		w.late = make([]uint64, r.cfg.Players)
	}
	r.mu.Lock()
	taken := len(r.players)
	r.mu.Unlock()
	if len(w.look) != r.cfg.Players {
		w.look = make([]Seat, r.cfg.Players)
	}
	seats := w.look
	behind := r.room.NextFrame() - r.cfg.Hz/2
	for i := range seats {
		st := r.room.PlayerStats(i)
		late := st.LateDrops + st.LateMoved
		switch {
		case i >= taken:
			seats[i] = SeatOpen
		case r.slots[i].Load() == nil:
			seats[i] = SeatGone
		case late > w.late[i] || st.Have < behind:
			seats[i] = SeatLate
		default:
			seats[i] = SeatPlaying
		}
		w.late[i] = late
	}
	if slices.Equal(seats, w.told) && now.Sub(w.at) < seatsEvery {
		return
	}
	w.told, w.look, w.at = seats, w.told, now
	msg := appendSeats(nil, seats)
	for i := range r.slots {
		if p := r.slots[i].Load(); p != nil {
			p.conn.SendReliable(msg)
		}
	}
	r.mu.Lock()
	spect := make([]*peer, 0, len(r.spect))
	for _, p := range r.spect {
		spect = append(spect, p)
	}
	r.mu.Unlock()
	for _, p := range spect {
		p.conn.SendReliable(msg)
	}
}

//go:build !js

package engine

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
)

// Rooms that outlive their server (SPEC.md §9.6). A room's frames and
// seats go, as the room makes them, to a standby on another server
// (Room.Feed; package cluster carries them there); the standby continues
// the match with RestoreRoom when the room's server falls silent or hands
// it over. Every client is told the standby's URL (Room.SetStandby) and
// resumes there by itself; it keeps its lockstep state and carries back
// the frames the standby may lack.

// A RoomFeed is what a room gives its standby (Room.Feed). Its functions
// must not block: Frame and MayCut run on the room's worker, as it cuts.
type RoomFeed struct {
	// Frame takes each frame the room cut, in order from frame 0, with
	// the moment of the room's frame 0 on its schedule (lockstep.Room.Start).
	// The frame's bytes are valid only during the call.
	Frame func(start time.Time, f lockstep.EncodedFrame)
	// Seat takes a player's seat each time it changes: when the player
	// takes its slot, and with each resume credential the player is given.
	// It may run on any goroutine.
	Seat func(s SeatRecord)
	// MayCut, when set, is asked before every cut: false holds the room's
	// frames back (they are cut, all at once, when it says true again).
	// A cluster holds a room whose standby may be taking it over.
	MayCut func() bool
	// Closed, when set, is called once the room is closed (after
	// OnClose's function): the standby may forget it.
	Closed func()
}

// SeatRecord is one player's seat in a room, as a standby needs it to
// take the player back: its slot, and the resume credentials its client
// holds (their session and their one-use nonces, opaque to the game).
type SeatRecord struct {
	Player  string    `json:"player"`
	Slot    int       `json:"slot"`
	Session time.Time `json:"session"`
	Resume  [2]uint64 `json:"resume"`
}

// RoomState is what a standby holds of a room to continue its match:
// its schedule's start, its frames in order from frame 0 (their full
// bodies, as RoomFeed.Frame gave them) and its players' seats.
type RoomState struct {
	Start  time.Time
	Frames []lockstep.EncodedFrame
	Seats  []SeatRecord
	// Carry bounds the frames past Frames the room takes from its
	// returning clients: those the original room may have cut that the
	// standby had not got (a cluster knows the bound from how far its
	// standby may lag). 0: a second's worth of frames.
	Carry int
	// Hold restores the room held, for a hand-over made in advance: it
	// cuts nothing, takes more frames with Append, and parks the
	// connections that come (their clients wait, connected, for the
	// welcome) until Release.
	Hold bool
}

// Feed sends the room's frames (those cut so far at once, then each as
// it is cut) and seats (those taken so far, then each change) to f, for
// a standby: see RoomFeed. A room has one feed; a second call replaces
// it, and a zero RoomFeed stops it.
func (r *Room) Feed(f RoomFeed) {
	r.mu.Lock()
	r.feed = f
	seats := r.seatRecords()
	r.mu.Unlock()
	r.host.Do(func() {
		r.mayCut = f.MayCut
		if f.Frame == nil {
			r.room.Tap(nil)
			return
		}
		r.room.Tap(func(ef lockstep.EncodedFrame) { f.Frame(r.room.Start(), ef) })
	})
	if f.Seat != nil {
		for _, s := range seats {
			f.Seat(s)
		}
	}
}

// SetStandby tells the room's clients, now and as they join, where the
// match goes on if this server falls silent: the standby server's base
// URL (empty: none). A client that hears nothing from the room for
// FailoverSilence resumes there by itself.
func (r *Room) SetStandby(url string) {
	r.mu.Lock()
	if r.standby == url {
		r.mu.Unlock()
		return
	}
	r.standby = url
	r.mu.Unlock()
	msg := appendFailover(nil, &failover{standby: url, carry: -1})
	for i := range r.slots {
		if p := r.slots[i].Load(); p != nil && p.wire >= failoverWire {
			p.conn.SendReliable(msg)
		}
	}
}

// Standby returns the standby URL the room tells its clients.
func (r *Room) Standby() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.standby
}

// failoverWire is the first wire version whose clients read failover
// notices; older ones ignore them (SPEC.md §9.4), so every version is
// sent them.
const failoverWire = 0

// seatRecords returns every seated player's record; r.mu is held.
func (r *Room) seatRecords() []SeatRecord {
	out := make([]SeatRecord, 0, len(r.players))
	for player, slot := range r.players {
		rec := SeatRecord{Player: player, Slot: slot}
		rec.Session, rec.Resume = r.s.creds.vouched(player, r.name)
		out = append(out, rec)
	}
	return out
}

// seatChanged tells the feed of player's seat.
func (r *Room) seatChanged(player string) {
	r.mu.Lock()
	slot, ok := r.players[player]
	f := r.feed.Seat
	r.mu.Unlock()
	if !ok || f == nil {
		return
	}
	rec := SeatRecord{Player: player, Slot: slot}
	rec.Session, rec.Resume = r.s.creds.vouched(player, r.name)
	f(rec)
}

// RestoreRoom continues a match another server's room played, from the
// state its standby kept (RoomFeed): a room named name with cfg (the
// original room's), whose log is st.Frames and whose next frame is cut on
// the original schedule, at once if it is due. Its players are away
// until their clients come back: each resumes with the credentials the
// original server gave it (st.Seats), carries back the frames it holds
// past the log, and plays on where it stands. The room gathers them for
// up to GatherWait before it cuts its first frame, takes the newest
// frames the returning clients agree on, and then cuts on; a player back
// later is taken back as well, and one whose frames are not the match's
// is told to start over (a fresh client, caught up from frame 0).
func (s *Server) RestoreRoom(name string, cfg lockstep.Config, st RoomState) (*Room, error) {
	r, err := s.restoreRoom(name, cfg, st)
	return r, errstack.With(err)
}

// GatherWait bounds how long a restored room waits for its players'
// clients before it cuts its first frame (RestoreRoom); it stops waiting
// once every player is back.
const GatherWait = 1500 * time.Millisecond

// gatherAfterFirst is how long a restored room waits for the others once
// a first client is back: clients notice the silence within moments of
// each other.
const gatherAfterFirst = 300 * time.Millisecond

// carryWait is how long a client in a restored room has to send its
// carry before it is taken as a fresh client: long, since a client that
// follows a match here carries as soon as it takes the connection (one
// that does not know carries never follows a match by itself), and one
// taken as fresh too early would run the match again from frame 0.
const carryWait = 5 * time.Second

func (s *Server) restoreRoom(name string, cfg lockstep.Config, st RoomState) (*Room, error) {
	if len(name) == 0 || len(name) > MaxNameLen {
		return nil, fmt.Errorf("%w: room name %q: want 1 to %d bytes", ErrConfig, name, MaxNameLen)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Room{s: s, name: name, cfg: cfg, players: map[string]int{}, spect: map[int]*peer{},
		slots: make([]atomic.Pointer[peer], cfg.Players), pstats: make([]lockstep.PlayerStats, cfg.Players)}
	for _, seat := range st.Seats {
		if seat.Slot < 0 || seat.Slot >= cfg.Players || checkName("player", seat.Player) != nil {
			return nil, fmt.Errorf("%w: seat %+v in a room of %d players", ErrConfig, seat, cfg.Players)
		}
		r.players[seat.Player] = seat.Slot
	}
	room, err := lockstep.RestoreRoom(cfg, st.Start, st.Frames, roomSender{r})
	if err != nil {
		return nil, err
	}
	r.room = room
	now := time.Now()
	bound := st.Carry
	if bound <= 0 {
		bound = cfg.Hz
	}
	r.restore = &restoreState{from: room.NextFrame(), maxCarry: bound, until: now.Add(GatherWait), got: map[int]*carry{}, await: map[int]time.Time{}, peers: map[int]*peer{}}
	r.restore.held = st.Hold
	if st.Hold {
		r.parking = []parkedPeer{}
	}
	r.host = sched.NewHost[roomPacket](roomLoop{r})
	if err := s.register(name, r, nil); err != nil {
		return nil, err
	}
	// The players' credentials, as the original server vouched for them:
	// good here for the resume window, as after a lost path.
	for _, seat := range st.Seats {
		s.creds.adopt(seat.Player, name, seat.Session, seat.Resume, now.Add(max(s.cfg.ResumeWindow, GatherWait)))
	}
	s.sched.Add(r.host, now)
	s.log.Info("room restored", "room", name, "frames", room.NextFrame(), "players", len(st.Seats))
	return r, nil
}

// restoreState is a restored room's gathering of its returning clients;
// owned by the worker.
type restoreState struct {
	from     int               // the frames the room took from its standby's log
	maxCarry int               // RoomState.Carry
	until    time.Time         // when gathering ends at the latest
	first    time.Time         // when the first carry came
	got      map[int]*carry    // carries received, not yet taken, by slot
	await    map[int]time.Time // slots attached, not yet carried: until when their carry is awaited
	peers    map[int]*peer     // the connections attached, by slot
	gathered bool              // the room took its frames and cuts on
	held     bool              // RoomState.Hold, until Release
	resyncs  int               // clients told to start over
	carried  int               // frames taken from the clients
}

// arrived runs on the worker when a client took its slot in a restored
// room: its carry is awaited, unless it came first.
func (r *Room) arrived(slot int, p *peer, now time.Time) {
	rs := r.restore
	rs.peers[slot] = p
	c, ok := rs.got[slot]
	switch {
	case !ok:
		rs.await[slot] = now.Add(carryWait)
	case rs.gathered:
		delete(rs.got, slot)
		r.rejoin(slot, c, now)
	}
}

// takeCarry runs on the worker with a client's carry.
func (r *Room) takeCarry(slot int, msg []byte, now time.Time) {
	rs := r.restore
	if rs == nil || slot >= r.cfg.Players {
		r.s.metrics.drop("engine", "unexpected")
		return
	}
	c, err := readCarry(msg)
	if err != nil {
		r.s.metrics.drop("engine", "malformed")
		r.s.log.Info("carry dropped", "room", r.name, "slot", slot, "err", err)
		c = &carry{} // taken as a fresh client
	}
	delete(rs.await, slot)
	if rs.gathered && rs.peers[slot] != nil {
		r.rejoin(slot, c, now)
		return
	}
	rs.got[slot] = c
	if rs.first.IsZero() {
		rs.first = now
	}
}

// gather runs on the worker before a restored room's tick: it reports
// whether the room may cut, ending the gathering once every seated
// player carried (or the waits ran out), and takes late clients.
func (r *Room) gather(now time.Time) bool {
	rs := r.restore
	if rs.held {
		return false
	}
	for slot, until := range rs.await {
		if now.After(until) { // no carry: a client that kept nothing
			delete(rs.await, slot)
			if rs.gathered {
				r.rejoin(slot, &carry{}, now)
			} else {
				rs.got[slot] = &carry{}
			}
		}
	}
	if rs.gathered {
		return true
	}
	r.mu.Lock()
	seated := len(r.players)
	r.mu.Unlock()
	all := len(rs.got) >= seated && len(rs.await) == 0
	if !all && now.Before(rs.until) && (rs.first.IsZero() || now.Sub(rs.first) < gatherAfterFirst) {
		return false
	}
	rs.gathered = true
	ext := agreed(rs.got, rs.from)
	if len(ext) > rs.maxCarry {
		// Further than the original room can have cut past the standby's
		// log: a client's forgery, or a standby far behind. Never more.
		r.s.log.Warn("carried frames past the bound dropped", "room", r.name, "carried", len(ext), "bound", rs.maxCarry)
		ext = ext[:rs.maxCarry]
	}
	if len(ext) > 0 {
		if err := r.room.Extend(ext); err != nil {
			r.s.log.Warn("carried frames refused", "room", r.name, "err", err)
		} else {
			rs.carried = len(ext)
		}
	}
	for slot, c := range rs.got {
		if rs.peers[slot] != nil {
			delete(rs.got, slot)
			r.rejoin(slot, c, now)
		}
	}
	r.s.log.Info("room continues", "room", r.name, "from", rs.from, "carried", rs.carried, "players", seated)
	return true
}

// agreed returns the frames from from on that the clients' carries
// agree on: each frame is taken while every client that holds it holds
// it alike; the first frame two clients hold differently, and every
// frame after it, is not.
func agreed(carries map[int]*carry, from int) []lockstep.EncodedFrame {
	var out []lockstep.EncodedFrame
	for n := from; ; n++ {
		var pick *lockstep.EncodedFrame
		for _, c := range carries {
			f := carried(c, n)
			switch {
			case f == nil:
			case pick == nil:
				pick = f
			case f.FullBits != pick.FullBits || !bytes.Equal(f.Full, pick.Full):
				return out
			}
		}
		if pick == nil {
			return out
		}
		out = append(out, *pick)
	}
}

// carried returns frame n of a carry, or nil.
func carried(c *carry, n int) *lockstep.EncodedFrame {
	if len(c.frames) == 0 {
		return nil
	}
	i := n - c.frames[0].Number
	if i < 0 || i >= len(c.frames) {
		return nil
	}
	return &c.frames[i]
}

// rejoin takes a client back in its slot where its carry says it stands:
// one whose frames are all the match's plays on from them; one that
// holds frames the room does not (or none) is told to start over and
// caught up from frame 0.
func (r *Room) rejoin(slot int, c *carry, now time.Time) {
	rs := r.restore
	p := rs.peers[slot]
	if p == nil || r.slots[slot].Load() != p {
		return // gone, or replaced by a newer connection (which is awaited)
	}
	ok := c.have > 0 && c.have <= r.room.NextFrame()
	for i := range c.frames {
		f := &c.frames[i]
		if !ok || f.Number < rs.from {
			continue
		}
		body, bits := r.frameBody(f.Number)
		ok = bits == f.FullBits && bytes.Equal(body, f.Full[:(bits+7)/8])
	}
	if ok {
		if err := r.room.Rejoin(slot, c.have, c.acked, now); err == nil {
			return
		}
	}
	if c.have > 0 {
		rs.resyncs++
		r.s.log.Warn("client told to start over", "room", r.name, "slot", slot, "holds", c.have, "next", r.room.NextFrame())
		p.conn.SendReliable(appendFailover(nil, &failover{standby: r.Standby(), carry: -1, resync: true}))
	}
	r.room.Join(slot, now)
}

// frameBody returns frame n's full body as the room encodes it.
func (r *Room) frameBody(n int) ([]byte, int) {
	body, bits, _ := r.room.FullBody(n)
	return body, bits
}

// Append queues more frames of the match for a held room's log
// (RoomState.Hold): the frames its standby got since the room was
// restored, in order. It does not wait for the room (a caller may hold
// a lock the rooms' workers take); a frame the room refuses (out of
// order, not a frame, a room not held) is logged and dropped, and the
// room's Release then finds its log short of the hand-over's frames.
func (r *Room) Append(frames []lockstep.EncodedFrame) {
	r.host.Do(func() {
		if r.restore == nil || !r.restore.held {
			r.s.log.Warn("frames for a room not held dropped", "room", r.name, "frames", len(frames))
			return
		}
		if err := r.room.Extend(frames); err != nil {
			r.s.log.Warn("frames for a held room refused", "room", r.name, "err", err)
		}
		r.restore.from = r.room.NextFrame()
	})
}

// Frames returns how many frames the room's log holds (read on its
// worker).
func (r *Room) Frames() int {
	n := make(chan int, 1)
	if !r.host.Do(func() { n <- r.room.NextFrame() }) {
		return 0
	}
	return <-n
}

// Parked returns how many connections a held room parked.
func (r *Room) Parked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.parking)
}

// Release lets a held room go on: its parked connections are welcomed
// (each client switches to it at once, and carries what it holds), and
// it cuts from its log's end as RestoreRoom says, gathering its players
// for two frame periods at most: its log is whole, so a player whose
// carry comes later only misses the frames' inputs it would have sent
// meanwhile. It refuses, with ErrClosed, a room that is not held.
func (r *Room) Release() error {
	done := make(chan error, 1)
	if !r.host.Do(func() {
		rs := r.restore
		if rs == nil || !rs.held {
			done <- fmt.Errorf("%w: room %q is not held", ErrClosed, r.name)
			return
		}
		// Its log is whole (the room it continues stopped first): it
		// waits two frames for its players' carries, not for the slowest
		// of them; one whose carry comes later is taken back then.
		rs.held, rs.until = false, time.Now().Add(2*r.cfg.Period())
		done <- nil
	}) {
		return errstack.With(fmt.Errorf("%w: room %q", ErrClosed, r.name))
	}
	if err := <-done; err != nil {
		return errstack.With(err)
	}
	r.mu.Lock()
	parked := r.parking
	r.parking = nil
	r.mu.Unlock()
	for _, pp := range parked {
		select {
		case <-pp.p.conn.Done():
			r.s.release(pp.p)
			continue
		default:
		}
		if err := r.seat(pp.p, pp.slot, pp.seen, pp.arrived); err != nil {
			pp.p.bye(byeFor(err), err.Error())
			r.s.release(pp.p)
		}
	}
	return nil
}

// MoveTo tells every player connected to the room to go on at url, the
// server that continues its match (RestoreRoom; a drain hands rooms over
// this way): each is given a ticket there, opens its new connection while
// this one lasts, and switches, keeping its lockstep state. With standby,
// the clients connect and wait, parked, for the room there to be
// released (RoomState.Hold): the switch then costs no handshake. It
// returns how many were told.
func (r *Room) MoveTo(url string, standby bool) int {
	n := 0
	for i := range r.slots {
		p := r.slots[i].Load()
		if p == nil {
			continue
		}
		tk, err := r.s.Ticket(p.ticket.Player, r.name, RolePlayer, forwardTTL)
		if err != nil {
			continue
		}
		if p.conn.SendReliable(appendMove(nil, &move{world: r.name, url: url, ticket: tk, standby: standby})) == nil {
			n++
		}
	}
	return n
}

// Drain prepares the server to stop without ending a match: from now on
// it creates no room (CreateRoom and RestoreRoom refuse with
// ErrServerClosed), while its rooms play on and their players may still
// come back to them; it returns once no room has a player connected
// (every match ended, or was handed to another server: cluster's
// Node.Drain does that first), or when ctx is done, with ctx's error.
// Shutdown then closes what is left. This is what a deploy's SIGTERM
// does (tongbu serve, with -drain-timeout), as Agones's graceful
// termination lets a match end before its server goes.
func (s *Server) Drain(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		playing := 0
		for _, r := range s.rooms {
			playing += r.Connected()
		}
		s.mu.Unlock()
		if playing == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return errstack.With(ctx.Err())
		case <-t.C:
		}
	}
}

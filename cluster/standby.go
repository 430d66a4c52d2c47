//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/internal/seal"
	"github.com/tongbu/tongbu/lockstep"
)

// Rooms that outlive their node (DESIGN.md, "Rooms that outlive a
// node"; SPEC.md §11.4). Every room a node creates has a standby on
// another node, of the same region when there is one: the primary
// streams it the room's config, seats and every frame it cuts, in one
// batch per standby every streamEvery (which is also the primary's
// heartbeat to it); the standby acknowledges every ackEvery, and the
// acknowledgement is the primary's lease: a room cuts only while its
// standby acknowledged within leaseTTL. A standby that hears nothing
// from a primary for silentAfter stops acknowledging; once the lease it
// gave has run out, and the primary does not answer for the room, it
// takes the room over: it restores it (engine.Server.RestoreRoom), tells
// the directory, and the clients, which noticed the silence too, resume
// there. A primary that was only slow finds its lease gone and cuts no
// more; told that its room was taken over, it moves its clients there.
// The one rule: a room cuts a frame only under a lease from the node
// that would take it over, and that node takes it over only after the
// lease ran out.
const (
	streamEvery = 50 * time.Millisecond
	ackEvery    = 100 * time.Millisecond
	leaseTTL    = 250 * time.Millisecond
	silentAfter = 200 * time.Millisecond
	// takeAfter is the silence after which a standby asks the primary
	// and takes the room over if it does not answer: the lease it gave
	// last, at silentAfter, has run out by then.
	takeAfter = silentAfter + leaseTTL + 50*time.Millisecond
	// dropAfter is how long a primary waits for a standby that does not
	// acknowledge before it gives it up and names another.
	dropAfter = 2 * time.Second
	// carryBound bounds the frames a room taken over takes from its
	// clients past the standby's log: what the primary can cut in
	// streamEvery and leaseTTL at 60 Hz, with two to spare.
	carryBound = int((streamEvery+leaseTTL)*60/time.Second) + 2
	// maxStandbyRooms bounds the rooms one node stands by for, so that
	// a flood of room announcements cannot eat its memory.
	maxStandbyRooms = 4 * MaxCapacity
	// maxStandbyFrames bounds the frames a standby keeps of one room:
	// 30 minutes at 60 Hz.
	maxStandbyFrames = 60 * 60 * 30
)

// A Restore continues, on this node, a room that another node held
// (Node.ServeStandbys): the room's name, the configuration its request
// carried (RoomRequest.Config, for the host to read as it reads a new
// room's) and the state its standby kept. It returns the room, made with
// engine.Server.RestoreRoom.
type Restore func(room string, config json.RawMessage, st engine.RoomState) (*engine.Room, error)

// standbys is a node's part in rooms that outlive their node.
type standbys struct {
	n       *Node
	srv     *engine.Server
	restore Restore

	mu     sync.Mutex
	out    map[string]*outRoom      // this node's rooms, by name
	leases map[string]time.Time     // standby node -> its last acknowledgement
	until  map[string]*atomic.Int64 // standby node -> when its lease runs out (unix ns), read by the rooms' workers
	in     map[string]*inRoom       // the rooms this node stands by for
	heard  map[string]time.Time     // primary node -> its last stream batch
	subs   []*nats.Subscription
	stop   chan struct{}
	done   chan struct{}
	took   uint64 // rooms taken over
	handed uint64 // rooms handed over by a drain

	// Worlds (worldheir.go, worldmove.go).
	outw  map[string]*outWorld       // this node's worlds, by name
	inw   map[string]*inWorld        // the worlds this node is the heir of
	store atomic.Pointer[worldStore] // the checkpoint bucket, once open (bucket)
	// storeTried: the bucket's first opening is over, opened or not.
	storeTried atomic.Bool
	tookW      uint64 // worlds taken over
	movedW     uint64 // worlds moved away by a drain
	movedIn    uint64 // worlds moved here
}

// outRoom is one of this node's rooms, as its standby is fed.
type outRoom struct {
	room    *engine.Room
	config  json.RawMessage
	standby string // the standby node; "" while none
	was     priors // the standbys named before it
	url     string // its URL
	since   time.Time
	start   time.Time
	frames  []lockstep.EncodedFrame // cut, not yet sent
	want    int                     // the next frame the feed takes
	seats   map[string]engine.SeatRecord
	dirty   bool // seats or config not yet sent to the standby
	resend  bool // a new standby: its whole log is to be sent again
	handing bool // a drain is handing it over: it cuts no more
	taken   bool // another node took it over

	// What the room's worker reads before every cut, without s.mu.
	held  atomic.Bool                  // handing || taken
	lease atomic.Pointer[atomic.Int64] // the standby's lease (unix ns it runs to); nil: no standby
}

// priors are the nodes that stood by for a room or a world before the
// present one, the newest few.
type priors [4]string

// add notes id ("" is none) as a node that stood by.
func (p *priors) add(id string) {
	if id == "" || p.has(id) {
		return
	}
	copy(p[1:], p[:len(p)-1])
	p[0] = id
}

// has reports whether id stood by before.
func (p *priors) has(id string) bool {
	for _, x := range p {
		if x != "" && x == id {
			return true
		}
	}
	return false
}

// hold sets what the room's worker reads of handing and taken; s.mu is
// held.
func (o *outRoom) hold() { o.held.Store(o.handing || o.taken) }

// inRoom is a room this node stands by for.
type inRoom struct {
	primary  string
	instance uint64
	config   json.RawMessage
	state    engine.RoomState
	seats    map[string]engine.SeatRecord
	gap      bool         // frames came that do not follow the log
	prepared *engine.Room // held here for a hand-over (prepare), until go or cancel
}

// ServeStandbys makes the node's rooms outlive it: each room the node
// creates from now on gets a standby on another node, which continues
// its match if this node dies or drains (Drain), and this node stands by
// for the rooms of others, continuing them with restore. srv is the
// server the node's Host creates rooms on. Without it (a one-node
// cluster, or a node that never calls it) rooms live and die with their
// node, as before.
func (n *Node) ServeStandbys(srv *engine.Server, restore Restore) error {
	if srv == nil || restore == nil {
		return fmt.Errorf("%w: ServeStandbys needs the server and a Restore", ErrInvalid)
	}
	s := &standbys{n: n, srv: srv, restore: restore, out: map[string]*outRoom{}, leases: map[string]time.Time{}, until: map[string]*atomic.Int64{},
		in: map[string]*inRoom{}, heard: map[string]time.Time{}, outw: map[string]*outWorld{}, inw: map[string]*inWorld{},
		stop: make(chan struct{}), done: make(chan struct{})}
	for _, sub := range []struct {
		subject string
		f       func(*seal.Msg)
	}{{n.opts.subjStream(n.info.ID), s.onStream}, {n.opts.subjControl(n.info.ID), s.onControl}, {n.opts.subjAck(n.info.ID), s.onAck}} {
		ss, err := n.c.Subscribe(sub.subject, sub.f)
		if err != nil {
			for _, x := range s.subs {
				x.Unsubscribe()
			}
			return err
		}
		s.subs = append(s.subs, ss)
	}
	n.mu.Lock()
	n.sb = s
	var worlds []*hosted
	var reqs []WorldRequest
	for name, h := range n.ws.worlds {
		if _, _, cell := splitCell(name); cell && !h.cell {
			continue // a cell of a map no node hosts: it cannot move
		}
		if h.w != nil && !h.held {
			worlds = append(worlds, h)
			reqs = append(reqs, WorldRequest{World: name, Cap: h.cap, Config: h.config})
		}
	}
	n.mu.Unlock()
	for i, h := range worlds { // placed before: they get heirs too
		s.createdWorld(reqs[i], h.w, 0)
	}
	go s.run()
	if n.opts.CheckpointEvery >= 0 {
		go s.openStore()
	}
	go s.checkpoints()
	return nil
}

// openStore opens the checkpoint bucket, trying again while it cannot:
// the first nodes of a NATS cluster race to create it (the losers'
// requests may go unanswered), and a NATS server may have no JetStream
// yet. The node stands by and moves worlds meanwhile, and its worlds'
// checkpoints are written once it opens.
func (s *standbys) openStore() {
	wait := storeRetry
	for warned := false; ; {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		st, err := openStore(ctx, s.n.nc, s.n.c, &s.n.opts)
		cancel()
		if err == nil {
			s.store.Store(st)
			s.storeTried.Store(true)
			if warned {
				s.n.opts.Logger.Info("cluster: the worlds' checkpoint bucket is open")
			}
			return
		}
		s.storeTried.Store(true) // a world's creation waits no more (claimWorld)
		if !warned && wait >= storeWarn {
			s.n.opts.Logger.Warn("cluster: no checkpoints of worlds yet (they need JetStream): a world whose node dies now is lost", "err", err)
			warned = true
		}
		select {
		case <-s.stop:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, storeMaxRetry)
	}
}

// The waits between two tries to open the checkpoint bucket: the first,
// the longest, and the wait past which a failure is logged.
const (
	storeRetry    = 250 * time.Millisecond
	storeMaxRetry = 10 * time.Second
	storeWarn     = 2 * time.Second
)

// bucket is the checkpoint bucket; nil until it opens.
func (s *standbys) bucket() *worldStore { return s.store.Load() }

// created starts feeding a room the node just created (or took over)
// to a standby.
func (s *standbys) created(name string, config json.RawMessage) {
	room, ok := s.srv.Room(name)
	if !ok {
		return
	}
	o := &outRoom{room: room, config: config, seats: map[string]engine.SeatRecord{}}
	s.mu.Lock()
	s.out[name] = o
	s.pick(name, o)
	o.resend = false // the feed's tap sends the frames cut so far
	s.mu.Unlock()
	room.Feed(engine.RoomFeed{
		Frame: func(start time.Time, f lockstep.EncodedFrame) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if f.Number != o.want {
				return // a frame the resend of the whole log has
			}
			o.want++
			o.start = start
			o.frames = append(o.frames, lockstep.EncodedFrame{Number: f.Number, Full: append([]byte(nil), f.Full...), FullBits: f.FullBits})
		},
		Seat: func(rec engine.SeatRecord) {
			s.mu.Lock()
			o.seats[rec.Player] = rec
			o.dirty = true
			s.mu.Unlock()
		},
		MayCut: func() bool { return s.mayCut(o) },
		Closed: func() { s.closed(name) },
	})
}

// resendAll queues the room's whole log for a standby named anew: it
// runs on the room's worker, between two cuts.
func (s *standbys) resendAll(o *outRoom) {
	o.room.Do(func(l *lockstep.Room) {
		s.mu.Lock()
		defer s.mu.Unlock()
		o.frames = o.frames[:0]
		for i := range l.NextFrame() {
			body, bits, _ := l.FullBody(i)
			o.frames = append(o.frames, lockstep.EncodedFrame{Number: i, Full: append([]byte(nil), body...), FullBits: bits})
		}
		o.want, o.start = l.NextFrame(), l.Start()
	})
}

// pick names a standby for room o: another live node, of this node's
// region when one is; s.mu is held.
func (s *standbys) pick(name string, o *outRoom) {
	o.was.add(o.standby)
	st, ok := s.candidate(o.standby, 0)
	if !ok {
		o.standby, o.url = "", ""
		o.lease.Store(nil)
		o.room.SetStandby("")
		return
	}
	o.lease.Store(s.leaseOf(st.ID))
	o.standby, o.url, o.since, o.dirty, o.resend = st.ID, st.URL, time.Now(), true, true
	o.room.SetStandby(st.URL)
	s.n.opts.Logger.Info("cluster: standby named", "room", name, "standby", st.ID)
}

// candidate picks, at random, a node to stand by for a room or a world
// of this node: another live node that is not draining and has room for
// players world players (0: any), not the one named before (but), of
// this node's region when one is.
func (s *standbys) candidate(but string, players int) (NodeStatus, bool) {
	return s.candidateOf(but, players, "")
}

// candidateOf is candidate, among the hosts of cell map cells when it is
// not "".
func (s *standbys) candidateOf(but string, players int, cells string) (NodeStatus, bool) {
	var same, any []NodeStatus
	for _, st := range s.n.dir.Nodes() {
		if st.ID == s.n.info.ID || !st.Alive || st.Draining || st.ID == but || st.Players < players {
			continue
		}
		if cells != "" && !hostsCells(st, cells) {
			continue
		}
		any = append(any, st)
		if st.Region == s.n.info.Region {
			same = append(same, st)
		}
	}
	if len(same) > 0 {
		any = same
	}
	if len(any) == 0 {
		return NodeStatus{}, false
	}
	return any[rand.IntN(len(any))], true
}

// mayCut is a room's lease: it cuts while its standby acknowledged
// within leaseTTL, or while it has none. It runs on the room's worker
// before every cut, and takes no lock.
func (s *standbys) mayCut(o *outRoom) bool {
	if o.held.Load() {
		return false
	}
	l := o.lease.Load()
	return l == nil || time.Now().UnixNano() < l.Load()
}

// leaseOf returns the lease cell of standby node id; s.mu is held.
func (s *standbys) leaseOf(id string) *atomic.Int64 {
	l := s.until[id]
	if l == nil {
		l = new(atomic.Int64)
		s.until[id] = l
	}
	return l
}

// closed forgets a room the node closed, and tells its standby.
func (s *standbys) closed(name string) {
	s.mu.Lock()
	o := s.out[name]
	delete(s.out, name)
	s.mu.Unlock()
	if o != nil && o.standby != "" && !o.taken {
		publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(o.standby), standbyControl{Op: "drop", Room: name})
	}
}

// run sends the stream batches and the acknowledgements, and watches
// the primaries this node stands by for.
func (s *standbys) run() {
	defer close(s.done)
	stream := time.NewTicker(streamEvery)
	defer stream.Stop()
	lastAck := time.Time{}
	for {
		select {
		case <-s.stop:
			return
		case now := <-stream.C:
			s.flush()
			if now.Sub(lastAck) >= ackEvery {
				lastAck = now
				s.ack(now)
			}
			s.watch(now)
		}
	}
}

// flush sends each standby the batch of its rooms' new frames, and the
// rooms' configs and seats that changed: every streamEvery, even empty,
// as the primary's heartbeat to it.
func (s *standbys) flush() {
	type ctl struct {
		to string
		m  standbyControl
	}
	var ctls []ctl
	var resend []*outRoom
	batches := map[string]*codec.Writer{}
	counts := map[string]int{}
	s.mu.Lock()
	now := time.Now()
	for name, o := range s.out {
		if o.taken {
			continue
		}
		if o.standby != "" && time.Since(s.leases[o.standby]) > dropAfter && now.Sub(o.since) > dropAfter {
			s.n.opts.Logger.Warn("cluster: standby does not answer; naming another", "room", name, "standby", o.standby)
			s.pick(name, o)
		}
		if o.standby == "" {
			if now.Sub(o.since) > time.Second {
				o.since = now
				s.pick(name, o) // a node may have joined
			}
			o.frames = o.frames[:0]
			continue
		}
		if o.dirty {
			seats := make([]engine.SeatRecord, 0, len(o.seats))
			for _, r := range o.seats {
				seats = append(seats, r)
			}
			ctls = append(ctls, ctl{o.standby, standbyControl{Op: "room", Room: name, Config: o.config, Seats: seats}})
			o.dirty = false
		}
		if o.resend {
			o.resend = false
			resend = append(resend, o)
			continue
		}
		if len(o.frames) == 0 {
			continue
		}
		w := batches[o.standby]
		if w == nil {
			w = codec.NewWriter(nil)
			batches[o.standby] = w
		}
		counts[o.standby]++
		appendBatchRoom(w, name, o.start, o.frames)
		o.frames = o.frames[:0]
	}
	// An empty batch to every standby with a room here, and every heir
	// of a world: the heartbeat.
	for _, o := range s.out {
		if o.standby != "" && batches[o.standby] == nil {
			batches[o.standby] = codec.NewWriter(nil)
		}
	}
	wctls, heirs := s.flushWorlds(now)
	for _, h := range heirs {
		if batches[h] == nil {
			batches[h] = codec.NewWriter(nil)
		}
	}
	for _, c := range wctls {
		ctls = append(ctls, ctl{c.to, c.m})
	}
	s.mu.Unlock()
	for _, o := range resend {
		s.resendAll(o)
	}
	for _, c := range ctls {
		s.publishControl(c.to, c.m)
	}
	for to, w := range batches {
		s.n.c.Publish(s.n.opts.subjStream(to), batchMessage(counts[to], w))
	}
}

// publishControl sends a standby control message on the stream subject
// of node to, in order with the frames.
func (s *standbys) publishControl(to string, m standbyControl) {
	b, err := json.Marshal(m)
	if err == nil {
		err = s.n.c.Publish(s.n.opts.subjStream(to), append([]byte{streamControl}, b...))
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		s.n.opts.Logger.Warn("cluster: standby publish", "to", to, "err", err)
	}
}

// onAck takes a standby's acknowledgement: its lease to this node.
func (s *standbys) onAck(m *seal.Msg) {
	if m.From.Role != seal.RoleNode {
		s.n.c.Refuse(m, "a standby acknowledgement from a "+m.From.Role.String())
		return
	}
	a, err := decode[standbyAck](m.Data)
	if err != nil {
		return
	}
	s.mu.Lock()
	now := time.Now()
	s.leases[m.From.ID] = now
	s.leaseOf(m.From.ID).Store(now.Add(leaseTTL).UnixNano())
	for _, name := range a.Resend {
		if o := s.out[name]; o != nil && o.standby == m.From.ID {
			o.resend = true
		}
	}
	for _, o := range s.outw {
		// An heir that restarted under the same ID knows nothing of its
		// worlds, and may listen elsewhere: another is named.
		switch {
		case o.heir != m.From.ID || o.heirIn == m.From.Instance || o.taken || o.handing:
		case o.heirIn == 0:
			o.heirIn = m.From.Instance
		default:
			s.n.opts.Logger.Info("cluster: heir restarted; naming another", "world", o.req.World, "heir", o.heir)
			s.pickHeir(o)
		}
	}
	s.mu.Unlock()
}

// taken: the standby of one of this node's rooms took it over (this
// node was slow, or handed it over): the clients still here move there,
// and the room here closes. A standby named before the present one
// counts: a node that wakes from a pause names a new standby for a room
// its old one silent, and may do so before it reads the old one's word
// that it took the room over while this node slept.
func (s *standbys) taken(name, by, url string) {
	s.mu.Lock()
	o := s.out[name]
	if o == nil || o.taken || (o.standby != by && !o.was.has(by)) {
		s.mu.Unlock()
		return
	}
	o.taken = true
	o.hold()
	s.mu.Unlock()
	moved := o.room.MoveTo(url, false)
	s.n.opts.Logger.Warn("cluster: room continues on its standby", "room", name, "standby", by, "clients_moved", moved)
	go func() {
		time.Sleep(5 * time.Second) // the clients open their new connections meanwhile
		o.room.Close()
		s.n.Closed(name)
	}()
}

// close stops the node's part in standbys.
func (s *standbys) close() {
	close(s.stop)
	<-s.done
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
}

// StandbyStats counts a node's part in rooms that outlive their node.
type StandbyStats struct {
	Rooms     int    // this node's rooms with a standby
	StandsBy  int    // rooms of other nodes this node stands by for
	TakenOver uint64 // rooms this node took over from a silent node
	HandedOff uint64 // rooms this node handed over by a drain

	Worlds          int    // this node's worlds with an heir
	Heirs           int    // worlds of other nodes this node is the heir of
	WorldsTakenOver uint64 // worlds this node brought back from a silent node's checkpoints
	WorldsMovedAway uint64 // worlds this node moved to their heirs by a drain
	WorldsMovedIn   uint64 // worlds moved here by another node's drain
	Checkpoints     int64  // checkpoints this node wrote
	CheckpointBytes int64  // their bytes, sealed
}

// Standbys returns the node's standby counters.
func (n *Node) Standbys() StandbyStats {
	n.mu.Lock()
	s := n.sb
	n.mu.Unlock()
	if s == nil {
		return StandbyStats{}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StandbyStats{StandsBy: len(s.in), TakenOver: s.took, HandedOff: s.handed,
		Heirs: len(s.inw), WorldsTakenOver: s.tookW, WorldsMovedAway: s.movedW, WorldsMovedIn: s.movedIn}
	for _, o := range s.out {
		if o.standby != "" && !o.taken {
			st.Rooms++
		}
	}
	for _, o := range s.outw {
		if o.heir != "" && !o.taken {
			st.Worlds++
		}
	}
	if b := s.bucket(); b != nil {
		st.Checkpoints, st.CheckpointBytes = b.writes.Load(), b.bytes.Load()
	}
	return st
}

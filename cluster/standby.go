//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

	mu      sync.Mutex
	out     map[string]*outRoom      // this node's rooms, by name
	leases  map[string]time.Time     // standby node -> its last acknowledgement
	until   map[string]*atomic.Int64 // standby node -> when its lease runs out (unix ns), read by the rooms' workers
	in      map[string]*inRoom       // the rooms this node stands by for
	heard   map[string]time.Time     // primary node -> its last stream batch
	takenBy map[string]takenRecord   // rooms this node took over: where they came from
	subs    []*nats.Subscription
	stop    chan struct{}
	done    chan struct{}
	took    uint64 // rooms taken over
	handed  uint64 // rooms handed over by a drain
}

// outRoom is one of this node's rooms, as its standby is fed.
type outRoom struct {
	room    *engine.Room
	config  json.RawMessage
	standby string // the standby node; "" while none
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

type takenRecord struct{ from string }

// Stream wire (SPEC.md §11.4): a batch from a primary to its standby.
// control messages are JSON.
type standbyControl struct {
	Op     string              `json:"op"` // "room", "drop", "prepare", "parked", "cancel", "handover", "taken", "ask", "resign"
	Room   string              `json:"room"`
	Config json.RawMessage     `json:"config,omitempty"`
	Seats  []engine.SeatRecord `json:"seats,omitempty"`
	Next   int                 `json:"next,omitempty"` // handover: the frames cut
	URL    string              `json:"url,omitempty"`
}

type standbyReply struct {
	OK     bool   `json:"ok"`
	Error  string `json:"error,omitempty"`
	Parked int    `json:"parked,omitempty"` // "parked": the connections parked at the prepared room
}

// standbyAck is a standby's acknowledgement: the rooms whose log it
// lacks the start of (a standby that restarted, a batch lost), for the
// primary to send whole again.
type standbyAck struct {
	Resend []string `json:"resend,omitempty"`
}

func (c *standbyControl) validate() error {
	if err := checkRoom(c.Room); err != nil {
		return err
	}
	if len(c.Config) > maxConfig || len(c.Seats) > lockstep.MaxPlayers || len(c.URL) > maxURLLen {
		return fmt.Errorf("%w: standby message of %d config bytes, %d seats", ErrInvalid, len(c.Config), len(c.Seats))
	}
	for _, rec := range c.Seats {
		if rec.Slot < 0 || rec.Slot >= lockstep.MaxPlayers || rec.Player == "" || len(rec.Player) > engine.MaxNameLen {
			return fmt.Errorf("%w: seat %+v", ErrInvalid, rec)
		}
	}
	return nil
}

func (r *standbyReply) validate() error {
	if len(r.Error) > 1024 {
		r.Error = r.Error[:1024]
	}
	return nil
}

func (a *standbyAck) validate() error {
	if len(a.Resend) > MaxCapacity {
		return fmt.Errorf("%w: %d rooms to resend", ErrInvalid, len(a.Resend))
	}
	return nil
}

// Stream message kinds: the first byte of a message on the stream
// subject, which keeps a room's announcement and its frames in order.
const (
	streamBatch   = 0
	streamControl = 1
)

func (o *Options) subjStream(to string) string  { return o.Prefix + ".sb." + to }
func (o *Options) subjControl(to string) string { return o.Prefix + ".sbc." + to }
func (o *Options) subjAck(to string) string     { return o.Prefix + ".sba." + to }

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
		in: map[string]*inRoom{}, heard: map[string]time.Time{}, takenBy: map[string]takenRecord{},
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
	n.mu.Unlock()
	go s.run()
	return nil
}

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
	var same, any []NodeStatus
	for _, st := range s.n.dir.Nodes() {
		if st.ID == s.n.info.ID || !st.Alive || st.Draining || st.ID == o.standby {
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
		o.standby, o.url = "", ""
		o.lease.Store(nil)
		o.room.SetStandby("")
		return
	}
	st := any[rand.IntN(len(any))]
	o.lease.Store(s.leaseOf(st.ID))
	o.standby, o.url, o.since, o.dirty, o.resend = st.ID, st.URL, time.Now(), true, true
	o.room.SetStandby(st.URL)
	s.n.opts.Logger.Info("cluster: standby named", "room", name, "standby", st.ID)
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
	// An empty batch to every standby with a room here: the heartbeat.
	for _, o := range s.out {
		if o.standby != "" && batches[o.standby] == nil {
			batches[o.standby] = codec.NewWriter(nil)
		}
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

// ack acknowledges, to every primary heard within silentAfter, the
// rooms this node stands by for: their lease.
func (s *standbys) ack(now time.Time) {
	s.mu.Lock()
	acks := map[string]*standbyAck{}
	for id, at := range s.heard {
		if now.Sub(at) < silentAfter {
			acks[id] = &standbyAck{}
		}
	}
	for name, in := range s.in {
		if a := acks[in.primary]; a != nil && in.gap {
			a.Resend = append(a.Resend, name)
			in.gap = false
		}
	}
	s.mu.Unlock()
	for id, a := range acks {
		publishJSON(s.n.c, &s.n.opts, s.n.opts.subjAck(id), a)
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
	s.mu.Unlock()
}

// onStream takes a primary's batch of frames.
func (s *standbys) onStream(m *seal.Msg) {
	if m.From.Role != seal.RoleNode || m.From.ID == s.n.info.ID {
		s.n.c.Refuse(m, "a standby stream from "+m.From.Role.String()+" "+m.From.ID)
		return
	}
	from := m.From.ID
	if len(m.Data) > 0 && m.Data[0] == streamControl {
		s.control(m, m.Data[1:])
		return
	}
	type appendTo struct {
		room *engine.Room
		f    lockstep.EncodedFrame
	}
	var appended []appendTo
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heard[from] = time.Now()
	err := readBatch(m.Data, func(name string, start int64, f lockstep.EncodedFrame) {
		in := s.in[name]
		if in == nil || in.primary != from || len(in.state.Frames) >= maxStandbyFrames {
			return
		}
		if f.Number == 0 { // the whole log again
			in.state.Frames = in.state.Frames[:0]
		}
		if f.Number != len(in.state.Frames) {
			in.gap = true // asked for again with the next acknowledgement
			return
		}
		in.state.Start = time.Unix(0, start)
		in.state.Frames = append(in.state.Frames, f)
		if in.prepared != nil {
			appended = append(appended, appendTo{in.prepared, f})
		}
	})
	for _, a := range appended { // queued in order, under s.mu: Append does not wait
		a.room.Append([]lockstep.EncodedFrame{a.f})
	}
	if err != nil {
		s.n.opts.Logger.Debug("cluster: standby stream dropped", "from", from, "err", err)
	}
}

// appendBatchRoom writes one room's new frames to a stream batch
// (SPEC.md §11.4): its name, its schedule's start, the first frame's
// number, the count, and each frame's full body as a bit count and the
// bits.
func appendBatchRoom(w *codec.Writer, name string, start time.Time, frames []lockstep.EncodedFrame) {
	w.WriteString(name, MaxRoomLen)
	w.WriteVarint(start.UnixNano())
	w.WriteUvarint(uint64(frames[0].Number))
	w.WriteUvarint(uint64(len(frames)))
	for _, f := range frames {
		w.WriteUvarint(uint64(f.FullBits))
		w.WriteBitString(f.Full, f.FullBits)
	}
}

// batchMessage returns the stream message of a batch of rooms rooms
// written by appendBatchRoom to w.
func batchMessage(rooms int, w *codec.Writer) []byte {
	head := codec.NewWriter(nil)
	head.WriteBits(streamBatch, 8)
	head.WriteUvarint(uint64(rooms))
	head.WriteBitString(w.Bytes(), w.Len())
	return head.Bytes()
}

// maxBodyBits bounds a frame body in a batch.
const maxBodyBits = 1 << 20

// readBatch reads a stream batch, handing each frame to f with its
// room's name and start; it stops at the first thing that is no batch.
func readBatch(msg []byte, f func(name string, start int64, fr lockstep.EncodedFrame)) error {
	r := codec.NewReader(msg)
	if r.ReadBits(8) != streamBatch {
		return fmt.Errorf("%w: not a stream batch", ErrInvalid)
	}
	rooms := int(min(r.ReadUvarint(), maxStandbyRooms))
	for range rooms {
		name := r.ReadString(MaxRoomLen)
		start := r.ReadVarint()
		first, n := r.ReadUvarint(), r.ReadUvarint()
		switch {
		case r.Err() != nil:
		case checkRoom(name) != nil:
			r.Fail(fmt.Errorf("room name %q", name))
		case first > maxStandbyFrames || n > maxStandbyFrames-first:
			r.Fail(fmt.Errorf("frames %d to %d of a room", first, first+n))
		}
		if r.Err() != nil {
			break
		}
		for i := range int(n) {
			bits := int(min(r.ReadUvarint(), maxBodyBits))
			if r.Err() != nil || bits > r.Remaining() {
				r.Fail(errors.New("a frame body past the batch's end"))
				break
			}
			body := make([]byte, (bits+7)/8)
			for j := 0; j < bits; j += 8 {
				body[j/8] = byte(r.ReadBits(min(8, bits-j)))
			}
			f(name, start, lockstep.EncodedFrame{Number: int(first) + i, Full: body, FullBits: bits})
		}
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: stream batch: %v", ErrInvalid, err)
	}
	return nil
}

// onControl takes a primary's word of a room (its config and seats, its
// end, its handover) or a standby's of a room taken over.
func (s *standbys) onControl(m *seal.Msg) {
	if m.From.Role != seal.RoleNode || m.From.ID == s.n.info.ID {
		s.n.c.Refuse(m, "a standby control message from "+m.From.Role.String()+" "+m.From.ID)
		return
	}
	s.control(m, m.Data)
}

// control takes one control message, from the stream or a request.
func (s *standbys) control(m *seal.Msg, data []byte) {
	c, err := decode[standbyControl](data)
	if err != nil {
		s.n.opts.Logger.Debug("cluster: standby control dropped", "from", m.From.ID, "err", err)
		return
	}
	switch c.Op {
	case "room":
		s.mu.Lock()
		in := s.in[c.Room]
		if in == nil || in.primary != m.From.ID || in.instance != m.From.Instance {
			if len(s.in) >= maxStandbyRooms {
				s.mu.Unlock()
				return
			}
			in = &inRoom{primary: m.From.ID, instance: m.From.Instance, seats: map[string]engine.SeatRecord{}}
			s.in[c.Room] = in
		}
		if len(c.Config) <= maxConfig {
			in.config = c.Config
		}
		for _, rec := range c.Seats {
			if len(in.seats) < lockstep.MaxPlayers || in.seats[rec.Player] != (engine.SeatRecord{}) {
				in.seats[rec.Player] = rec
			}
		}
		s.heard[m.From.ID] = time.Now()
		s.mu.Unlock()
	case "drop":
		s.mu.Lock()
		if in := s.in[c.Room]; in != nil && in.primary == m.From.ID {
			delete(s.in, c.Room)
		}
		s.mu.Unlock()
	case "prepare":
		err := s.prepare(c.Room, m.From.ID)
		rep := standbyReply{OK: err == nil}
		if err != nil {
			rep.Error = err.Error()
		}
		respondJSON(m, &s.n.opts, rep)
	case "parked":
		s.mu.Lock()
		in := s.in[c.Room]
		s.mu.Unlock()
		rep := standbyReply{}
		if in != nil && in.primary == m.From.ID && in.prepared != nil {
			rep.OK, rep.Parked = true, in.prepared.Parked()
		}
		respondJSON(m, &s.n.opts, rep)
	case "cancel":
		s.mu.Lock()
		in := s.in[c.Room]
		var room *engine.Room
		if in != nil && in.primary == m.From.ID && in.prepared != nil {
			room, in.prepared = in.prepared, nil
		}
		s.mu.Unlock()
		if room != nil {
			room.Close() // its parked clients stay where they are
		}
	case "handover":
		err := s.takeOver(c.Room, m.From.ID, c.Next)
		rep := standbyReply{OK: err == nil}
		if err != nil {
			rep.Error = err.Error()
		}
		respondJSON(m, &s.n.opts, rep)
	case "taken":
		s.taken(c.Room, m.From.ID, c.URL)
	case "resign": // the standby is draining: another is named
		s.mu.Lock()
		if o := s.out[c.Room]; o != nil && o.standby == m.From.ID && !o.taken {
			s.pick(c.Room, o)
		}
		s.mu.Unlock()
	case "ask":
		s.mu.Lock()
		o := s.out[c.Room]
		held := o != nil && o.standby == m.From.ID && !o.taken
		s.mu.Unlock()
		rep := standbyReply{OK: held}
		respondJSON(m, &s.n.opts, rep)
	}
}

// watch takes over the rooms of primaries silent past takeAfter that do
// not answer for them.
func (s *standbys) watch(now time.Time) {
	s.mu.Lock()
	silent := map[string][]string{}
	for id, at := range s.heard {
		if now.Sub(at) >= takeAfter {
			silent[id] = nil
		}
	}
	for name, in := range s.in {
		if rooms, ok := silent[in.primary]; ok {
			silent[in.primary] = append(rooms, name)
		}
	}
	for id, rooms := range silent {
		if len(rooms) == 0 {
			delete(s.heard, id)
			delete(silent, id)
		}
	}
	s.mu.Unlock()
	for id, rooms := range silent {
		if s.primaryHolds(id, rooms[0]) {
			continue
		}
		for _, name := range rooms {
			if err := s.takeOver(name, id, -1); err != nil {
				s.n.opts.Logger.Warn("cluster: take-over failed", "room", name, "from", id, "err", err)
			}
		}
	}
}

// primaryHolds asks a silent primary whether it still holds room with
// this node as its standby. It reports false when the primary does not
// answer (it is gone from NATS, or frozen past its lease): its rooms are
// to be taken over. A primary that answers is alive: if it no longer
// holds the room with this node, this node stands by for it no more.
func (s *standbys) primaryHolds(id, room string) bool {
	b, _ := json.Marshal(standbyControl{Op: "ask", Room: room})
	ctx, cancel := context.WithTimeout(context.Background(), leaseTTL)
	defer cancel()
	msg, err := s.n.c.Request(ctx, s.n.opts.subjControl(id), b, fromNode(id))
	if err != nil {
		return false
	}
	rep, err := decode[standbyReply](msg.Data)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heard[id] = time.Now() // alive: its stream comes again
	if err != nil || !rep.OK {
		delete(s.in, room)
	}
	return true
}

// takeOver continues room here, from what this node kept of it: at once
// for a crash (next < 0), or once the frames of a handover (next) are
// all here.
func (s *standbys) takeOver(name, from string, next int) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		s.mu.Lock()
		in := s.in[name]
		if in == nil || in.primary != from {
			s.mu.Unlock()
			return fmt.Errorf("%w: not standing by for room %q of node %s", ErrInvalid, name, from)
		}
		if next < 0 || len(in.state.Frames) >= next || time.Now().After(deadline) {
			delete(s.in, name)
			if room := in.prepared; room != nil { // held here already: let it go
				s.mu.Unlock()
				if have := room.Frames(); next >= 0 && have < next {
					room.Close()
					return fmt.Errorf("%w: room %q: %d frames of %d here", ErrInvalid, name, have, next)
				}
				if err := room.Release(); err != nil {
					return err
				}
				return s.adoptHere(name, from, in.config, room, len(in.state.Frames), len(in.seats), next < 0)
			}
			st := in.state
			for _, rec := range in.seats {
				st.Seats = append(st.Seats, rec)
			}
			config := in.config
			s.mu.Unlock()
			// The primary cut under a lease, streaming every streamEvery:
			// it cannot have cut more frames past this log than fit in
			// that time, which bounds what its clients may carry back.
			st.Carry = carryBound
			if next >= 0 && len(st.Frames) < next {
				return fmt.Errorf("%w: room %q: %d frames of %d here", ErrInvalid, name, len(st.Frames), next)
			}
			return s.restoreHere(name, from, config, st, next < 0)
		}
		s.mu.Unlock()
		time.Sleep(5 * time.Millisecond)
	}
}

// restoreHere restores a room and makes it this node's.
func (s *standbys) restoreHere(name, from string, config json.RawMessage, st engine.RoomState, crashed bool) error {
	n := s.n
	n.mu.Lock()
	if _, dup := n.rooms[name]; dup || n.left {
		n.mu.Unlock()
		return fmt.Errorf("%w: room %q is here already, or the node left", ErrInvalid, name)
	}
	n.rooms[name] = struct{}{}
	n.mu.Unlock()
	n.hostMu.Lock()
	room, err := s.restore(name, config, st)
	n.hostMu.Unlock()
	if err != nil {
		n.mu.Lock()
		delete(n.rooms, name)
		n.mu.Unlock()
		return err
	}
	return s.adopted(name, from, config, room, len(st.Frames), len(st.Seats), crashed)
}

// adoptHere makes a room restored ahead (prepare) this node's.
func (s *standbys) adoptHere(name, from string, config json.RawMessage, room *engine.Room, frames, seats int, crashed bool) error {
	n := s.n
	n.mu.Lock()
	if _, dup := n.rooms[name]; dup || n.left {
		n.mu.Unlock()
		room.Close()
		return fmt.Errorf("%w: room %q is here already, or the node left", ErrInvalid, name)
	}
	n.rooms[name] = struct{}{}
	n.mu.Unlock()
	return s.adopted(name, from, config, room, frames, seats, crashed)
}

// adopted tells the cluster that room, taken over from node from, is
// this node's now, and gives it a standby of its own.
func (s *standbys) adopted(name, from string, config json.RawMessage, room *engine.Room, frames, seats int, crashed bool) error {
	n := s.n
	n.mu.Lock()
	n.gen++
	n.publish(n.opts.subjRoom(), roomEvent{ID: n.info.ID, Instance: n.instance, Gen: n.gen, Op: "open", Room: name})
	if err := n.member(true); err != nil { // out of the create queue if the room filled the node
		n.opts.Logger.Warn("cluster: the create queue", "err", err)
	}
	n.mu.Unlock()
	s.mu.Lock()
	s.took++
	s.takenBy[name] = takenRecord{from: from}
	s.mu.Unlock()
	n.opts.Logger.Warn("cluster: room taken over", "room", name, "from", from, "frames", frames, "players", seats, "crash", crashed)
	if crashed { // the old primary, if it lives after all, moves its clients here
		publishJSON(n.c, &n.opts, n.opts.subjControl(from), standbyControl{Op: "taken", Room: name, URL: n.info.URL})
	}
	s.created(name, config) // and the room gets a standby of its own
	_ = room
	return nil
}

// prepare restores, held, a room this node stands by for, ahead of its
// hand-over: the clients connect to it and wait, and the frames the
// primary cuts meanwhile follow into it.
func (s *standbys) prepare(name, from string) error {
	s.mu.Lock()
	in := s.in[name]
	if in == nil || in.primary != from {
		s.mu.Unlock()
		return fmt.Errorf("%w: not standing by for room %q of node %s", ErrInvalid, name, from)
	}
	if in.prepared != nil {
		s.mu.Unlock()
		return nil
	}
	st := in.state
	st.Frames = slices.Clone(st.Frames)
	for _, rec := range in.seats {
		st.Seats = append(st.Seats, rec)
	}
	st.Hold, st.Carry = true, carryBound
	config := in.config
	s.mu.Unlock()
	s.n.hostMu.Lock()
	room, err := s.restore(name, config, st)
	s.n.hostMu.Unlock()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if in2 := s.in[name]; in2 != in {
		room.Close()
		return fmt.Errorf("%w: room %q: the stand-by ended meanwhile", ErrInvalid, name)
	}
	in.prepared = room
	if missing := in.state.Frames[len(st.Frames):]; len(missing) > 0 { // come while it was made
		room.Append(slices.Clone(missing))
	}
	return nil
}

// taken: the standby of one of this node's rooms took it over (this
// node was slow, or handed it over): the clients still here move there,
// and the room here closes.
func (s *standbys) taken(name, by, url string) {
	s.mu.Lock()
	o := s.out[name]
	if o == nil || o.standby != by {
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

// drain hands every room of the node that has a standby over to it and
// reports how many were handed over; the others are left to end.
func (s *standbys) drain(ctx context.Context) int {
	s.mu.Lock()
	var names []string
	for name, o := range s.out {
		if o.standby != "" && !o.taken {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	// A few rooms at a time, each held only for its own hand-over: a
	// room waits for no other's.
	var handed atomic.Int64
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(handOverAtOnce, len(names)) {
		wg.Go(func() {
			for name := range work {
				s.mu.Lock()
				o := s.out[name]
				if o == nil || o.taken {
					s.mu.Unlock()
					continue
				}
				s.mu.Unlock()
				if err := s.handOver(ctx, name); err != nil {
					s.n.opts.Logger.Warn("cluster: hand-over failed", "room", name, "err", err)
					s.mu.Lock()
					o.handing = false // it plays on here until it ends
					o.hold()
					s.mu.Unlock()
					continue
				}
				handed.Add(1)
			}
		})
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		work <- name
	}
	close(work)
	wg.Wait()
	return int(handed.Load())
}

// handOverAtOnce bounds the rooms a drain hands over at once.
const handOverAtOnce = 8

// handOver hands one room to its standby: the room has stopped cutting;
// its last frames go out, the standby restores it, and the clients are
// told to move.
func (s *standbys) handOver(ctx context.Context, name string) error {
	s.mu.Lock()
	o := s.out[name]
	s.mu.Unlock()
	if o == nil {
		return fmt.Errorf("%w: room %q", ErrInvalid, name)
	}
	s.mu.Lock()
	to, url := o.standby, o.url
	s.mu.Unlock()
	// The standby makes the room ready, held; the clients connect to it
	// and wait there, while the match goes on here.
	if _, err := s.askStandby(ctx, to, standbyControl{Op: "prepare", Room: name}); err != nil {
		return err
	}
	want := o.room.MoveTo(url, true)
	for end := time.Now().Add(parkWait); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		rep, err := s.askStandby(ctx, to, standbyControl{Op: "parked", Room: name})
		if err != nil || rep.Parked >= want {
			break
		}
	}
	// Then it cuts no more here, its last frames go out, and the standby
	// lets the room go on: each client switches at its welcome.
	s.mu.Lock()
	o.handing = true
	o.hold()
	s.mu.Unlock()
	cut := make(chan int, 1)
	o.room.Do(func(l *lockstep.Room) { cut <- l.NextFrame() }) // after the tick in progress: no more cuts
	var next int
	select {
	case next = <-cut:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.flush()
	if _, err := s.askStandby(ctx, to, standbyControl{Op: "handover", Room: name, Next: next}); err != nil {
		publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(to), standbyControl{Op: "cancel", Room: name})
		return err
	}
	s.mu.Lock()
	o.taken = true
	o.hold()
	s.handed++
	s.mu.Unlock()
	s.n.opts.Logger.Info("cluster: room handed over", "room", name, "standby", to, "frames", next, "clients", want)
	return nil
}

// parkWait bounds how long a hand-over waits for the clients to connect
// to the standby before it switches them (those not there yet follow
// with a handshake).
const parkWait = 3 * time.Second

// askStandby sends a control request to node to and returns its reply,
// an error if it refused.
func (s *standbys) askStandby(ctx context.Context, to string, c standbyControl) (*standbyReply, error) {
	b, _ := json.Marshal(c)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	msg, err := s.n.c.Request(rctx, s.n.opts.subjControl(to), b, fromNode(to))
	if err != nil {
		return nil, err
	}
	rep, err := decode[standbyReply](msg.Data)
	if err != nil {
		return nil, err
	}
	if !rep.OK {
		return rep, fmt.Errorf("%w: standby %s: %s %s", ErrRefused, to, c.Op, rep.Error)
	}
	return rep, nil
}

// resign tells every primary this node stands by for to name another
// standby: this node is draining.
func (s *standbys) resign() {
	s.mu.Lock()
	rooms := map[string][]string{}
	var held []*engine.Room
	for name, in := range s.in {
		rooms[in.primary] = append(rooms[in.primary], name)
		if in.prepared != nil {
			held = append(held, in.prepared)
		}
		delete(s.in, name)
	}
	s.mu.Unlock()
	for _, r := range held {
		r.Close()
	}
	for primary, names := range rooms {
		for _, name := range names {
			publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(primary), standbyControl{Op: "resign", Room: name})
		}
	}
}

// close stops the node's part in standbys.
func (s *standbys) close() {
	close(s.stop)
	<-s.done
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
}

// Drain stops the node taking new rooms and hands each of its rooms that
// has a standby over to it, while its players play: the standby
// continues the match from its last frame, and the clients move there
// over their open connections. It returns when every such room is handed
// over or ctx is done, with the number handed over; the rooms without a
// standby play on until they end (the caller waits for them, up to its
// deadline). The node stays in the cluster until Leave.
func (n *Node) Drain(ctx context.Context) (int, error) {
	n.mu.Lock()
	n.full, n.draining = true, true // out of the create queue for good, and named standby no more
	err := n.member(false)
	sb := n.sb
	n.heartbeatLocked()
	n.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if sb == nil {
		return 0, nil
	}
	sb.resign()
	return sb.drain(ctx), ctx.Err()
}

// StandbyStats counts a node's part in rooms that outlive their node.
type StandbyStats struct {
	Rooms     int    // this node's rooms with a standby
	StandsBy  int    // rooms of other nodes this node stands by for
	TakenOver uint64 // rooms this node took over from a silent node
	HandedOff uint64 // rooms this node handed over by a drain
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
	st := StandbyStats{StandsBy: len(s.in), TakenOver: s.took, HandedOff: s.handed}
	for _, o := range s.out {
		if o.standby != "" && !o.taken {
			st.Rooms++
		}
	}
	return st
}

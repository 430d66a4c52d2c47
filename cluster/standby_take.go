//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/internal/seal"
	"github.com/tongbu/tongbu/lockstep"
)

// The standby's side: what it keeps of the rooms it stands by for, and
// how it takes one over.

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
	if s.onHeirControl(m.From.ID, m.From.Instance, c) || s.heirMoveControl(m.From.ID, c, func(rep standbyReply) { respondJSON(m, &s.n.opts, rep) }) {
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
		s.worldTaken(c.Room, m.From.ID)
	case "resign": // the standby is draining: another is named
		s.mu.Lock()
		if o := s.out[c.Room]; o != nil && o.standby == m.From.ID && !o.taken {
			s.pick(c.Room, o)
		}
		if o := s.outw[c.Room]; o != nil && o.heir == m.From.ID && !o.taken {
			s.pickHeir(o)
		}
		s.mu.Unlock()
	case "ask":
		s.mu.Lock()
		o := s.out[c.Room]
		held := o != nil && o.standby == m.From.ID && !o.taken
		if ow := s.outw[c.Room]; ow != nil && ow.heir == m.From.ID && !ow.taken {
			held = true
		}
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
	worlds := map[string][]string{}
	for name, in := range s.in {
		if rooms, ok := silent[in.primary]; ok {
			silent[in.primary] = append(rooms, name)
		}
	}
	for name, in := range s.inw {
		if _, ok := silent[in.primary]; ok && in.prepared == nil {
			worlds[in.primary] = append(worlds[in.primary], name)
		}
	}
	for id, rooms := range silent {
		if len(rooms) == 0 && len(worlds[id]) == 0 {
			delete(s.heard, id)
			delete(silent, id)
		}
	}
	s.mu.Unlock()
	for id, rooms := range silent {
		ask := append(slices.Clone(rooms), worlds[id]...)[0]
		if s.primaryHolds(id, ask) {
			continue
		}
		for _, name := range rooms {
			if err := s.takeOver(name, id, -1); err != nil {
				s.n.opts.Logger.Warn("cluster: take-over failed", "room", name, "from", id, "err", err)
			}
		}
		for _, name := range worlds[id] {
			go func() {
				if err := s.takeOverWorld(name, id); err != nil {
					s.n.opts.Logger.Warn("cluster: world take-over failed", "world", name, "from", id, "err", err)
				}
			}()
		}
	}
}

// askWait bounds the question to a silent primary. Short: by then it
// has been silent past its lease, so a take-over is safe even if it only
// answers late (it finds its rooms taken and moves its clients).
const askWait = 100 * time.Millisecond

// primaryHolds asks a silent primary whether it still holds room with
// this node as its standby. It reports false when the primary does not
// answer (it is gone from NATS, or frozen past its lease): its rooms are
// to be taken over. A primary that answers is alive: if it no longer
// holds the room with this node, this node stands by for it no more.
func (s *standbys) primaryHolds(id, room string) bool {
	b, _ := json.Marshal(standbyControl{Op: "ask", Room: room})
	ctx, cancel := context.WithTimeout(context.Background(), askWait)
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
		delete(s.inw, room)
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
	_, err := s.restore(name, config, st)
	n.hostMu.Unlock()
	if err != nil {
		n.mu.Lock()
		delete(n.rooms, name)
		n.mu.Unlock()
		return err
	}
	return s.adopted(name, from, config, len(st.Frames), len(st.Seats), crashed)
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
	return s.adopted(name, from, config, frames, seats, crashed)
}

// adopted tells the cluster that room, taken over from node from, is
// this node's now, and gives it a standby of its own.
func (s *standbys) adopted(name, from string, config json.RawMessage, frames, seats int, crashed bool) error {
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
	s.mu.Unlock()
	n.opts.Logger.Warn("cluster: room taken over", "room", name, "from", from, "frames", frames, "players", seats, "crash", crashed)
	if crashed { // the old primary, if it lives after all, moves its clients here
		publishJSON(n.c, &n.opts, n.opts.subjControl(from), standbyControl{Op: "taken", Room: name, URL: n.info.URL})
	}
	s.created(name, config) // and the room gets a standby of its own
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
	for name, in := range s.inw {
		if in.prepared == nil {
			rooms[in.primary] = append(rooms[in.primary], name)
			delete(s.inw, name)
		}
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

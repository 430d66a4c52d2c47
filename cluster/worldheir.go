//go:build !js

package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// Worlds that outlive their node (DESIGN.md, "Worlds that outlive a
// node"; SPEC.md §11.5). Every world a node serves (CreateWorld,
// JoinWorld's lines) has an heir on another node, the node that brings
// it back if this one dies, chosen as a room's standby is and leasing the
// world as a standby leases a room: the world runs a frame only while its
// heir acknowledged within leaseTTL. The world writes a checkpoint to the
// bucket every Options.CheckpointEvery; its clients are told the heir's
// URL. When the heir hears nothing from the node past takeAfter and the
// node does not answer for the world, it takes the world's record over
// (a compare-and-set), restores the world from its checkpoint, and the
// clients, which noticed the silence too, resume there by themselves.
// A drain moves each world to its heir whole, while its players play
// (worldmove.go).

// DefaultCheckpointEvery is how often a world writes its checkpoint when
// Options.CheckpointEvery is 0: what a player loses when its world's node
// dies, plus the second the cluster takes to notice.
const DefaultCheckpointEvery = 2 * time.Second

// outWorld is one of this node's worlds, as its heir is kept.
type outWorld struct {
	w       *engine.World
	req     WorldRequest
	heir    string // "" while none
	was     priors // the heirs named before it
	heirIn  uint64 // the heir's instance, from its acknowledgements: a new one is told again
	url     string
	since   time.Time
	dirty   bool // the heir has not been told of it
	handing bool // a drain moves it: it runs no frame here
	taken   bool // it goes on elsewhere
	rev     uint64
	writing bool // a checkpoint is being written

	held  atomic.Bool                  // handing || taken, read by the world's worker
	lease atomic.Pointer[atomic.Int64] // the heir's lease; nil: none
}

func (o *outWorld) hold() { o.held.Store(o.handing || o.taken) }

// inWorld is a world this node is the heir of.
type inWorld struct {
	primary  string
	instance uint64
	req      WorldRequest
	prepared *engine.World // held here for a move (wprepare), until its hand-over or cancel
}

// maxHeirWorlds bounds the worlds one node is the heir of.
const maxHeirWorlds = 4 * MaxCapacity

// createdWorld gives a world this node serves from now on an heir and
// its checkpoints; rev is its record's revision when this node took it
// over (0: a new world).
func (s *standbys) createdWorld(req WorldRequest, w *engine.World, rev uint64) {
	// writing: the first record is being written (one write at a time:
	// two in one revision would refuse each other).
	o := &outWorld{w: w, req: req, rev: rev, writing: true}
	s.mu.Lock()
	s.outw[req.World] = o
	s.pickHeir(o)
	s.mu.Unlock()
	w.Feed(engine.WorldFeed{MayTick: func() bool { return s.mayTick(o) }})
	go s.checkpoint(o) // a record at once: a world is never without one for long
}

// claimWorld writes the first record of world w this node just created,
// unless a live node's record is there: of two nodes asked to create one
// name at once (processes of one config starting together), the second
// learns it here, before any player books a place in its copy, and is
// refused. A record of a node no longer live (the cluster started
// again) is written over. It returns the record's revision (0 without a
// bucket).
func (s *standbys) claimWorld(w *engine.World, name string) (uint64, error) {
	st := s.bucket()
	// A node that just started opens the bucket meanwhile (the worlds of
	// its config are asked for at once): its first try is waited for, not
	// the tries after a NATS without JetStream refused it.
	for end := time.Now().Add(claimWait); st == nil && !s.storeTried.Load() && time.Now().Before(end); st = s.bucket() {
		time.Sleep(10 * time.Millisecond)
	}
	if st == nil {
		return 0, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cp, err := w.Checkpoint(ctx)
	if err != nil {
		return 0, err
	}
	rec := storedWorld{owner: s.n.info.ID, cp: cp}
	rev, err := st.create(ctx, name, rec)
	if !errors.Is(err, errTakenElsewhere) {
		return rev, err
	}
	old, got, err := st.get(ctx, name)
	if errors.Is(err, errNoCheckpoint) {
		return st.create(ctx, name, rec) // deleted meanwhile
	}
	if err != nil {
		return 0, err
	}
	if old.owner != s.n.info.ID && s.n.dir.alive(old.owner) {
		return 0, fmt.Errorf("%w: world %q is node %s's", ErrRefused, name, old.owner)
	}
	rev, err = st.put(ctx, name, rec, got)
	if errors.Is(err, errTakenElsewhere) {
		return 0, fmt.Errorf("%w: world %q was taken meanwhile", ErrRefused, name)
	}
	return rev, err
}

// claimWait bounds how long a world's creation waits for the checkpoint
// bucket's first opening, to claim the world's record: within a create
// request's time (Options.RequestTimeout, 2 s by default). A NATS cluster
// of three makes the bucket's three replicas in about a second when its
// nodes start together.
const claimWait = 1500 * time.Millisecond

// pickHeir names an heir for world o: another live node that serves
// worlds and is not draining, of this node's region when one is; s.mu is
// held.
func (s *standbys) pickHeir(o *outWorld) {
	o.was.add(o.heir)
	o.since = time.Now()
	cells, _, _ := splitCell(o.req.World) // a cell's heir hosts its map
	st, ok := s.candidateOf(o.heir, o.req.Cap, cells)
	if !ok {
		o.heir, o.url, o.heirIn = "", "", 0
		o.lease.Store(nil)
		o.w.SetStandby("")
		return
	}
	o.lease.Store(s.leaseOf(st.ID))
	o.heir, o.url, o.dirty, o.heirIn = st.ID, st.URL, true, 0
	o.w.SetStandby(st.URL)
	s.n.opts.Logger.Info("cluster: heir named", "world", o.req.World, "heir", st.ID)
}

// mayTick is a world's lease, read by its worker before every frame.
func (s *standbys) mayTick(o *outWorld) bool {
	if o.held.Load() {
		return false
	}
	l := o.lease.Load()
	return l == nil || time.Now().UnixNano() < l.Load()
}

// flushWorlds tells the heirs of the worlds they newly inherit, names
// heirs where one is missing or silent, and returns the heirs, to hear
// from this node every streamEvery; s.mu is held.
func (s *standbys) flushWorlds(now time.Time) (ctls []heirCtl, heirs []string) {
	for name, o := range s.outw {
		if o.w.Closed() {
			delete(s.outw, name)
			if o.heir != "" && !o.taken {
				ctls = append(ctls, heirCtl{o.heir, standbyControl{Op: "wdrop", Room: name}})
			}
			if s.bucket() != nil && !o.taken && !o.handing {
				go s.bucket().drop(name, o.rev)
			}
			continue
		}
		if o.taken {
			continue
		}
		switch {
		case o.heir != "" && time.Since(s.leases[o.heir]) > dropAfter && now.Sub(o.since) > dropAfter:
			s.n.opts.Logger.Warn("cluster: heir does not answer; naming another", "world", name, "heir", o.heir)
			s.pickHeir(o)
		case o.heir == "" && now.Sub(o.since) > time.Second:
			s.pickHeir(o) // a node may have joined
		}
		if o.heir == "" {
			continue
		}
		if o.dirty {
			o.dirty = false
			ctls = append(ctls, heirCtl{o.heir, standbyControl{Op: "world", Room: name, Cap: o.req.Cap, Config: o.req.Config}})
		}
		heirs = append(heirs, o.heir)
	}
	return ctls, heirs
}

// heirCtl is a control message to an heir.
type heirCtl struct {
	to string
	m  standbyControl
}

// checkpoints writes, every CheckpointEvery, each world's checkpoint.
func (s *standbys) checkpoints() {
	every := s.n.opts.CheckpointEvery
	if every == 0 {
		every = DefaultCheckpointEvery
	}
	if every < 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if s.bucket() == nil {
				continue // not open yet (openStore)
			}
			s.mu.Lock()
			var due []*outWorld
			for _, o := range s.outw {
				if !o.taken && !o.handing && !o.writing {
					o.writing = true
					due = append(due, o)
				}
			}
			s.mu.Unlock()
			for _, o := range due {
				go s.checkpoint(o)
			}
		}
	}
}

// checkpoint writes world o's checkpoint, in the revision this node
// wrote last: a write that finds another node's record learns that the
// world was taken over, and stops it here.
func (s *standbys) checkpoint(o *outWorld) {
	defer func() {
		s.mu.Lock()
		o.writing = false
		s.mu.Unlock()
	}()
	if s.bucket() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cp, err := o.w.Checkpoint(ctx)
	if err != nil {
		if !errors.Is(err, engine.ErrClosed) {
			s.n.opts.Logger.Warn("cluster: checkpoint", "world", o.req.World, "err", err)
		}
		return
	}
	s.mu.Lock()
	last, skip := o.rev, o.taken || o.handing
	s.mu.Unlock()
	if skip {
		return
	}
	rev, err := s.bucket().put(ctx, o.req.World, storedWorld{owner: s.n.info.ID, cp: cp}, last)
	if errors.Is(err, errTakenElsewhere) {
		// Written since by whom? This node's own earlier record (a write
		// it did not hear back from) is no take-over: write over it.
		if rec, got, gerr := s.bucket().get(ctx, o.req.World); gerr == nil && rec.owner == s.n.info.ID {
			rev, err = s.bucket().put(ctx, o.req.World, storedWorld{owner: s.n.info.ID, cp: cp}, got)
		}
	}
	switch {
	case errors.Is(err, errTakenElsewhere):
		s.n.opts.Logger.Warn("cluster: the world's record was taken by another node; it goes on there", "world", o.req.World)
		s.worldTaken(o.req.World, "")
	case err != nil:
		s.n.opts.Logger.Warn("cluster: checkpoint write", "world", o.req.World, "err", err)
	default:
		s.mu.Lock()
		if o.rev == last {
			o.rev = rev
		}
		s.mu.Unlock()
	}
}

// worldTaken: one of this node's worlds goes on on another node (its heir
// took it over: this node was silent too long, or its record was taken).
// It runs no frame here from now on; its clients, which heard nothing
// since, resume at the heir; it closes after a while.
func (s *standbys) worldTaken(name, by string) {
	s.mu.Lock()
	o := s.outw[name]
	if o == nil || o.taken || (by != "" && o.heir != by && !o.was.has(by)) {
		s.mu.Unlock()
		return
	}
	o.taken = true
	o.hold()
	s.mu.Unlock()
	s.n.gone(name, o.w)
	s.n.opts.Logger.Warn("cluster: world continues on another node", "world", name, "by", by)
	go func() {
		time.Sleep(5 * time.Second) // its clients resume elsewhere meanwhile
		o.w.Close()
	}()
}

// onHeirControl takes a primary's word of a world this node inherits.
// It reports whether c was a world's.
func (s *standbys) onHeirControl(from string, instance uint64, c *standbyControl) bool {
	switch c.Op {
	case "world":
		req := WorldRequest{World: c.Room, Cap: c.Cap, Config: c.Config}
		if req.validate() != nil {
			return true
		}
		if m, _, cell := splitCell(req.World); cell && !s.n.hostsMap(m) {
			return true // the primary names hosts of the map only: a stale word
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		in := s.inw[c.Room]
		if in == nil || in.primary != from || in.instance != instance {
			if len(s.inw) >= maxHeirWorlds {
				return true
			}
			in = &inWorld{primary: from, instance: instance}
			s.inw[c.Room] = in
		}
		in.req = req
		s.heard[from] = time.Now()
	case "wdrop":
		s.mu.Lock()
		if in := s.inw[c.Room]; in != nil && in.primary == from && in.prepared == nil {
			delete(s.inw, c.Room)
		}
		s.mu.Unlock()
	default:
		return false
	}
	return true
}

// takeOverWorld brings back here a world of node from, silent past its
// lease: it takes the world's record over and restores the world from
// its checkpoint; the old node, if it lives after all, is told.
func (s *standbys) takeOverWorld(name, from string) error {
	s.mu.Lock()
	in := s.inw[name]
	if in == nil || in.primary != from {
		s.mu.Unlock()
		return fmt.Errorf("%w: not the heir of world %q of node %s", ErrInvalid, name, from)
	}
	delete(s.inw, name)
	s.mu.Unlock()
	if s.bucket() == nil {
		return fmt.Errorf("%w: world %q: no checkpoint bucket (JetStream)", ErrClosed, name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rec, rev, err := s.bucket().get(ctx, name)
	if err != nil {
		return err
	}
	if rec.owner != from {
		return fmt.Errorf("%w: world %q is node %s's, not %s's", ErrRefused, name, rec.owner, from)
	}
	info, err := engine.ReadCheckpointInfo(rec.cp)
	if err != nil || info.World != name {
		return fmt.Errorf("%w: world %q: its checkpoint: %v", ErrInvalid, name, err)
	}
	rev, err = s.bucket().put(ctx, name, storedWorld{owner: s.n.info.ID, cp: rec.cp}, rev)
	if err != nil {
		return err // another node took it meanwhile
	}
	w, err := s.n.restoreWorld(in.req, false, func(cfg engine.WorldConfig) (*engine.World, error) { return s.srv.RestoreWorld(cfg, rec.cp) })
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.tookW++
	s.mu.Unlock()
	s.n.opts.Logger.Warn("cluster: world taken over", "world", name, "from", from, "frame", info.Frame, "players", info.Players,
		"age", time.Since(info.Taken).Round(time.Millisecond))
	publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(from), standbyControl{Op: "taken", Room: name, URL: s.n.info.URL})
	s.createdWorld(in.req, w, rev)
	return nil
}

// restoreWorld makes, with the world maker, the world req names on this
// node's server by make (a restore, or a move's prepare), and counts it
// here; held: it is in no heartbeat until unhold.
func (n *Node) restoreWorld(req WorldRequest, held bool, make func(engine.WorldConfig) (*engine.World, error)) (*engine.World, error) {
	n.mu.Lock()
	switch _, dup := n.ws.worlds[req.World]; {
	case n.left || n.ws.srv == nil:
		n.mu.Unlock()
		return nil, ErrClosed
	case dup:
		n.mu.Unlock()
		return nil, fmt.Errorf("%w: world %q is here already", ErrInvalid, req.World)
	}
	h := &hosted{cap: req.Cap, held: held, adopted: true, config: req.Config}
	n.ws.worlds[req.World] = h
	n.ws.used += req.Cap
	maker := n.ws.make
	n.mu.Unlock()
	n.hostMu.Lock()
	var w *engine.World
	var cell *cellRunner
	var err error
	if _, _, ok := splitCell(req.World); ok {
		w, cell, err = n.makeCell(req, held, make)
	} else {
		var cfg engine.WorldConfig
		if cfg, err = maker(req); err == nil {
			cfg.MaxPlayers = req.Cap
			w, err = make(cfg)
		}
	}
	n.hostMu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		delete(n.ws.worlds, req.World)
		n.ws.used -= req.Cap
		return nil, err
	}
	h.w = w
	if cell != nil {
		h.cell = true
		n.ws.cells = append(n.ws.cells, cell)
	}
	if err := n.worldMember(true); err != nil {
		n.opts.Logger.Warn("cluster: world create queue", "err", err)
	}
	n.heartbeatLocked()
	return w, nil
}

// worldControlReply answers a world's control request.
func worldControlReply(err error, parked int) standbyReply {
	rep := standbyReply{OK: err == nil, Parked: parked}
	if err != nil {
		rep.Error = err.Error()
	}
	return rep
}

// unhold lists a world released here (a move) in the heartbeats.
func (n *Node) unhold(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.ws.worlds[name]; h != nil && h.held {
		h.held = false
		n.heartbeatLocked()
	}
}

// dropHeld forgets a world held here for a move that was called off.
func (n *Node) dropHeld(name string, w *engine.World) {
	w.Close()
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.ws.worlds[name]; h != nil && h.w == w {
		delete(n.ws.worlds, name)
		n.ws.used -= h.cap
		n.worldMember(true)
	}
}

// gone forgets a world that moved away: it is in no heartbeat, and its
// place is free, while it lets its last players go.
func (n *Node) gone(name string, w *engine.World) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.ws.worlds[name]; h != nil && h.w == w {
		delete(n.ws.worlds, name)
		n.ws.used -= h.cap
		n.heartbeatLocked()
	}
}

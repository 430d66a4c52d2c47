//go:build !js

package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// A WorldMaker makes the configuration of a world the cluster places on
// its node: the game's hooks (Join, Arrive, Leave, Tick) and its
// interest.Config, read from req.Config as the game likes. The node sets
// MaxPlayers to req.Cap. An error that matches ErrFull sends the request
// to another node; any other is the requester's answer. It is called from
// one goroutine at a time.
type WorldMaker func(req WorldRequest) (engine.WorldConfig, error)

// hosted is a world the cluster placed on this node.
type hosted struct {
	w    *engine.World // nil while being created
	cap  int
	held bool // a world moving here, not yet released: in no heartbeat
	// adopted: moved here or brought back from a checkpoint, not created
	// by a request; another node's record of it lingers a while.
	adopted bool
	config  json.RawMessage // its request's, for its heir
	cell    bool            // a cell of a map this node hosts (HostCells)
}

// worldState is a node's part in placing worlds; under Node.mu.
type worldState struct {
	srv      *engine.Server
	make     WorldMaker
	worlds   map[string]*hosted
	used     int                // the caps of worlds, summed
	create   *nats.Subscription // the world create queue; nil while full
	ops      *nats.Subscription // <prefix>.world.<id>
	arrivals map[uint64]func()  // transfers out of this node's worlds, by id
	cells    []*cellRunner      // cells.go
	// cellHosts are the maps this node may hold any cell of (HostCells).
	cellHosts map[string]cellHost
}

// ServeWorlds makes the node take worlds, up to NodeInfo.Players players
// in all: the cluster places them on srv (CreateWorld) with the
// configuration make returns, books places in them for joining and
// arriving players (JoinWorld, Destination), and its heartbeats tell the
// directory how full each is. Call it once, after Join.
func (n *Node) ServeWorlds(srv *engine.Server, make WorldMaker) error {
	return errstack.With(n.serveWorlds(srv, make))
}

func (n *Node) serveWorlds(srv *engine.Server, make WorldMaker) error {
	if srv == nil || make == nil {
		return fmt.Errorf("%w: ServeWorlds needs a server and a world maker", ErrInvalid)
	}
	if n.info.Players == 0 {
		return fmt.Errorf("%w: node %s has no room for world players (NodeInfo.Players)", ErrInvalid, n.info.ID)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.left:
		return ErrClosed
	case n.ws.srv != nil:
		return fmt.Errorf("%w: ServeWorlds called twice", ErrInvalid)
	}
	n.ws = worldState{srv: srv, make: make, worlds: map[string]*hosted{}, arrivals: map[uint64]func(){}}
	var err error
	if n.ws.ops, err = n.c.Subscribe(n.opts.subjWorld(n.info.ID), n.onWorldOp); err != nil {
		n.ws.srv = nil
		return fmt.Errorf("cluster: subscribe %s: %w", n.opts.subjWorld(n.info.ID), err)
	}
	if err = n.worldMember(true); err == nil {
		err = n.nc.Flush()
	}
	if err != nil {
		n.ws.ops.Unsubscribe()
		n.ws.srv = nil
		return fmt.Errorf("cluster: serve worlds: %w", err)
	}
	n.heartbeatLocked()
	return nil
}

// Worlds returns the worlds the cluster placed on the node, sorted.
func (n *Node) Worlds() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.ws.worlds))
	for name, h := range n.ws.worlds {
		if h.w != nil {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// worldMember joins or leaves the world create queue; n.mu is held.
func (n *Node) worldMember(in bool) error {
	in = in && !n.left && n.ws.srv != nil && n.ws.used < n.info.Players
	switch {
	case in && n.ws.create == nil:
		sub, err := n.c.QueueSubscribe(n.opts.subjWorldCreate(), worldQueue, n.onWorldCreate)
		if err != nil {
			return err
		}
		n.ws.create = sub
	case !in && n.ws.create != nil:
		err := n.ws.create.Drain()
		n.ws.create = nil
		return err
	}
	return nil
}

// worldLoads prunes the worlds the game closed and returns what the others
// hold, for a heartbeat; n.mu is held.
func (n *Node) worldLoads() []worldLoad {
	if n.ws.srv == nil {
		return nil
	}
	loads := make([]worldLoad, 0, len(n.ws.worlds))
	for name, h := range n.ws.worlds {
		if h.w == nil {
			continue
		}
		if w, ok := n.ws.srv.World(name); !ok || w != h.w {
			delete(n.ws.worlds, name) // closed: its place is free
			n.ws.used -= h.cap
			n.worldMember(true)
			n.ws.cells = slices.DeleteFunc(n.ws.cells, func(c *cellRunner) bool {
				if c.ew.Load() == h.w {
					c.sub.Unsubscribe()
					return true
				}
				return false
			})
			continue
		}
		if h.held {
			continue
		}
		players, booked := h.w.Load()
		loads = append(loads, worldLoad{Name: name, Players: players, Booked: booked, Cap: h.cap})
	}
	slices.SortFunc(loads, func(a, b worldLoad) int {
		if a.Name < b.Name {
			return -1
		}
		return 1
	})
	return loads
}

// onWorldCreate takes a world request from the world create queue: from
// a node, a lobby or a matchmaker.
func (n *Node) onWorldCreate(m *seal.Msg) {
	if !placer(m) {
		n.c.Refuse(m, "a world request from a "+m.From.Role.String())
		return
	}
	req, err := decode[WorldRequest](m.Data)
	if err != nil {
		n.respond(m, createReply{Error: err.Error()})
		return
	}
	if other, ok := n.dir.LocateWorld(req.World); ok && other.Node != n.info.ID {
		n.respond(m, createReply{Error: fmt.Sprintf("world %q exists on node %s", req.World, other.Node)})
		return
	}
	if other, ok := n.dir.Locate(req.World); ok {
		n.respond(m, createReply{Error: fmt.Sprintf("a room %q exists on node %s", req.World, other.ID)})
		return
	}
	n.mu.Lock()
	switch _, dup := n.ws.worlds[req.World]; {
	case n.left || n.ws.srv == nil:
		n.mu.Unlock()
		n.respond(m, createReply{Error: ErrClosed.Error(), Full: true})
		return
	case dup:
		n.mu.Unlock()
		n.respond(m, createReply{Error: fmt.Sprintf("world %q exists on node %s", req.World, n.info.ID)})
		return
	case n.ws.used+req.Cap > n.info.Players:
		if n.ws.used >= n.info.Players {
			n.worldMember(false)
		}
		n.mu.Unlock()
		n.respond(m, createReply{Error: fmt.Sprintf("%v: room for %d more players, asked %d", ErrFull, n.info.Players-n.ws.used, req.Cap), Full: true})
		return
	}
	h := &hosted{cap: req.Cap} // reserved while the world is made
	n.ws.worlds[req.World] = h
	n.ws.used += req.Cap
	srv, make := n.ws.srv, n.ws.make
	n.mu.Unlock()

	n.hostMu.Lock()
	cfg, err := make(*req)
	var w *engine.World
	if err == nil {
		cfg.MaxPlayers = req.Cap
		w, err = srv.CreateWorld(req.World, cfg)
	}
	n.hostMu.Unlock()
	var rev uint64
	if err == nil {
		n.mu.Lock()
		sb := n.sb
		n.mu.Unlock()
		if sb != nil {
			if rev, err = sb.claimWorld(w, req.World); err != nil {
				w.Close() // another node's, or no record: not served here
			}
		}
	}

	n.mu.Lock()
	if err == nil && n.left {
		n.mu.Unlock()
		w.Close()
		n.mu.Lock()
		err = ErrClosed
	}
	if err != nil {
		delete(n.ws.worlds, req.World)
		n.ws.used -= req.Cap
		full := errors.Is(err, ErrFull) || errors.Is(err, engine.ErrFull) || errors.Is(err, ErrClosed)
		n.mu.Unlock()
		n.opts.Logger.Info("cluster: world refused", "world", req.World, "err", err)
		n.respond(m, createReply{Error: err.Error(), Full: full})
		return
	}
	h.w, h.config = w, req.Config
	if err := n.worldMember(true); err != nil {
		n.opts.Logger.Warn("cluster: world create queue", "err", err)
	}
	n.heartbeatLocked() // the directories learn of the world now
	sb := n.sb
	n.mu.Unlock()
	if sb != nil {
		sb.createdWorld(*req, w, rev) // an heir, and checkpoints
	}
	n.opts.Logger.Info("cluster: world placed here", "world", req.World, "cap", req.Cap)
	n.respond(m, createReply{Placement: Placement{Room: req.World, Node: n.info.ID, URL: n.info.URL}})
}

// onWorldOp answers a book or settle for a world of this node, and takes
// the word that a player transferred from here has arrived. A booking
// that names the node of a transfer's source comes from that node, and
// so does the word of an arrival from the destination's; a lobby may
// book and settle.
func (n *Node) onWorldOp(m *seal.Msg) {
	if !placer(m) {
		n.c.Refuse(m, "a world operation from a "+m.From.Role.String())
		return
	}
	op, err := decode[worldOp](m.Data)
	if err != nil {
		n.respond(m, worldReply{Error: err.Error()})
		return
	}
	switch {
	case op.Op == "book" && op.From != "" && (m.From.Role != seal.RoleNode || m.From.ID != op.From):
		n.c.Refuse(m, fmt.Sprintf("a booking for a transfer from node %s, sent by %v", op.From, m.From))
		return
	case op.Op == "arrived" && m.From.Role != seal.RoleNode:
		n.c.Refuse(m, "an arrival from a "+m.From.Role.String())
		return
	}
	switch op.Op {
	case "book":
		n.respond(m, n.book(op))
	case "settle":
		n.respond(m, n.settleHere(op.World, op.ID))
	case "arrived":
		n.arrived(op.Transfer)
	}
}

// world returns the world named name that the cluster placed here.
func (n *Node) world(name string) *engine.World {
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.ws.worlds[name]; h != nil {
		return h.w
	}
	return nil
}

// book holds a place in a world of this node.
func (n *Node) book(op *worldOp) worldReply {
	w := n.world(op.World)
	if w == nil {
		return worldReply{Missing: true, Error: fmt.Sprintf("no world %q on node %s", op.World, n.info.ID)}
	}
	var arrived func()
	switch {
	case op.From == n.info.ID:
		t := op.Transfer
		arrived = func() { n.arrived(t) }
	case op.From != "":
		from, t, world := op.From, op.Transfer, op.World
		arrived = func() { n.publishTo(n.opts.subjWorld(from), worldOp{Op: "arrived", World: world, Transfer: t}) }
	}
	b, err := w.Reserve(op.Player, op.State, time.Duration(op.TTLMS)*time.Millisecond, arrived)
	switch {
	case errors.Is(err, engine.ErrFull):
		return worldReply{Full: true, Error: err.Error()}
	case err != nil:
		return worldReply{Error: err.Error()}
	}
	if op.Standby {
		if err := w.Hold(b.ID); err != nil {
			w.Settle(b.ID)
			return worldReply{Error: err.Error()}
		}
		n.heldFor(op.World, op.State, b.ID)
	}
	return worldReply{World: b.World, URL: n.info.URL, Ticket: b.Ticket, ID: b.ID, ExpiresMS: b.Expires.UnixMilli(), Standby: op.Standby}
}

// settleHere settles a booking in a world of this node: a world that is no
// longer here does not hold the player.
func (n *Node) settleHere(world string, id uint64) worldReply {
	w := n.world(world)
	if w == nil {
		return worldReply{}
	}
	return worldReply{Arrived: w.Settle(id)}
}

// arrived calls the arrival notice of transfer t, once.
func (n *Node) arrived(t uint64) {
	n.mu.Lock()
	f := n.ws.arrivals[t]
	delete(n.ws.arrivals, t)
	n.mu.Unlock()
	if f != nil {
		f()
	}
}

// publishTo sends v as JSON on subject, under the node's lock.
func (n *Node) publishTo(subject string, v any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.publish(subject, v)
}

// leaveWorlds stops taking worlds; n.mu is held.
func (n *Node) leaveWorlds() {
	if n.ws.srv == nil {
		return
	}
	n.worldMember(false)
	n.ws.ops.Unsubscribe()
	for _, c := range n.ws.cells {
		c.sub.Unsubscribe()
	}
}

// dedupeWorlds closes this node's copy of a world another live node also
// holds, when the other's id sorts first and this copy is empty: two
// requests for one name at the same instant (processes of one config
// starting together) can both succeed, and the cluster keeps one.
func (n *Node) dedupeWorlds() {
	n.mu.Lock()
	mine := make(map[string]*engine.World, len(n.ws.worlds))
	for name, h := range n.ws.worlds {
		if h.w != nil && !h.held && !h.adopted {
			mine[name] = h.w
		}
	}
	n.mu.Unlock()
	for name, w := range mine {
		n.dir.mu.Lock()
		others := n.dir.st.worlds(func(s WorldStatus) bool { return s.World == name && s.Node < n.info.ID })
		n.dir.mu.Unlock()
		if len(others) == 0 {
			continue
		}
		if players, booked := w.Load(); players+booked > 0 {
			n.opts.Logger.Warn("cluster: world also on another node, with players here too", "world", name, "other", others[0].Node)
			continue
		}
		n.opts.Logger.Warn("cluster: world also on another node; closing this empty copy", "world", name, "other", others[0].Node)
		w.Close()
	}
}

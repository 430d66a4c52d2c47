//go:build !js

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// ErrNoWorld: the world or map a join or transfer names is on no live
// node, and the request does not say how to open a line of it.
var ErrNoWorld = errors.New("cluster: no such world")

// CreateWorld asks the cluster on nc for a world: the request goes to the
// world create queue, where NATS hands it to one of the nodes with room
// for req.Cap more players (ServeWorlds); a node that turns out full sends
// it back and the next attempt goes to another (at most opts.Attempts
// tries, each bounded by opts.RequestTimeout and ctx). The Placement
// names the node and its public URL; it has no tickets (JoinWorld books
// places).
func CreateWorld(ctx context.Context, nc *nats.Conn, req WorldRequest, opts *Options) (Placement, error) {
	p, err := createWorld(ctx, nc, req, opts)
	return p, errstack.With(err)
}

func createWorld(ctx context.Context, nc *nats.Conn, req WorldRequest, opts *Options) (Placement, error) {
	o := opts.withDefaults()
	if err := req.validate(); err != nil {
		return Placement{}, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return Placement{}, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c, err := clientConn(nc, &o)
	if err != nil {
		return Placement{}, err
	}
	return createWorldOn(ctx, c, &o, req.World, req.Cap, data)
}

// createWorldOn sends a world request over c.
func createWorldOn(ctx context.Context, c *seal.Conn, o *Options, world string, cap int, data []byte) (Placement, error) {
	return place(ctx, c, o, o.subjWorldCreate(), "world", world, data, fmt.Sprintf("no node has room for %d players", cap))
}

// JoinRequest asks the cluster for a place in a world for one player:
// in a world by name, or on one of a map's lines.
type JoinRequest struct {
	// World names the world; or leave it empty and name Map.
	World string
	// Map names a map whose lines are worlds named Line(Map, n): the
	// player goes to the first line Policy picks that has room, or to a
	// new line, made from NewLine, when none has.
	Map string
	// NewLine is the cap and configuration of a map's new line (its World
	// is set to the next line's name). A zero Cap opens no line: the join
	// fails with ErrNoCapacity when the map's lines are full.
	NewLine WorldRequest
	// Policy orders the map's lines (default LeastFull).
	Policy LinePolicy
	// Player is the game's player id (JoinWorld; a transfer sets it).
	Player string
	// State is the game's state of the player, which the world's
	// engine.WorldConfig.Arrive hook receives (JoinWorld; a transfer sets
	// it). At most MaxState bytes.
	State []byte
	// TicketTTL is how long the place is held for the player (default
	// engine.BookingTTL).
	TicketTTL time.Duration

	standby bool   // a cell's standby place (engine.World.Hold)
	node    string // book on this node, whatever the directory says (a world moving there)
}

// JoinWorld books a place for req.Player in a world of the cluster, and
// returns where it is, with the ticket that takes it: the client dials
// Placement.URL with Placement.Tickets[req.Player]. The place counts
// against the world's cap until the player takes it or the ticket
// expires. dir is the caller's view of the cluster (Watch, or a node's
// Directory).
func JoinWorld(ctx context.Context, nc *nats.Conn, dir *Directory, req JoinRequest, opts *Options) (Placement, error) {
	j := &joiner{dir: dir, o: opts.withDefaults()}
	c, err := clientConn(nc, &j.o)
	if err != nil {
		return Placement{}, errstack.With(err)
	}
	j.c = c
	rep, node, err := j.place(ctx, &req, "", 0)
	if err != nil {
		return Placement{}, errstack.With(err)
	}
	return Placement{Room: rep.World, Node: node, URL: rep.URL, Tickets: map[string]string{req.Player: rep.Ticket}}, nil
}

// joiner books places in the cluster's worlds: for JoinWorld, and for the
// transfers of a node (self, whose own worlds it books without NATS).
type joiner struct {
	c    *seal.Conn
	dir  *Directory
	o    Options
	self *Node
}

// place books a place for req's player: in req.World, or on a line of
// req.Map, opening one when all are full. It returns the booking and the
// node that holds it.
func (j *joiner) place(ctx context.Context, req *JoinRequest, from string, transfer uint64) (worldReply, string, error) {
	if err := checkRoom(req.Player); err != nil {
		return worldReply{}, "", fmt.Errorf("%w: player: %v", ErrInvalid, err)
	}
	if len(req.State) > MaxState {
		return worldReply{}, "", fmt.Errorf("%w: state of %d bytes, at most %d", ErrInvalid, len(req.State), MaxState)
	}
	op := worldOp{Op: "book", Player: req.Player, State: req.State, TTLMS: req.TicketTTL.Milliseconds(), From: from, Transfer: transfer, Standby: req.standby}
	if req.World != "" && req.node != "" {
		op.World = req.World
		rep, err := j.bookOn(ctx, req.node, &op)
		return rep, req.node, err
	}
	if req.World != "" {
		w, ok := j.dir.LocateWorld(req.World)
		if !ok {
			return worldReply{}, "", fmt.Errorf("%w: world %q is on no live node", ErrNoWorld, req.World)
		}
		op.World = w.World
		rep, err := j.bookOn(ctx, w.Node, &op)
		return rep, w.Node, err
	}
	if req.Map == "" || strings.Contains(req.Map, LineSep) || checkRoom(Line(req.Map, 1<<20)) != nil {
		return worldReply{}, "", fmt.Errorf("%w: map name %q", ErrInvalid, req.Map)
	}
	policy := req.Policy
	if policy == nil {
		policy = LeastFull
	}
	var last error
	for range 2 * j.o.Attempts {
		lines := j.dir.Lines(req.Map)
		for _, w := range policy(req.Player, lines) {
			op.World = w.World
			rep, err := j.bookOn(ctx, w.Node, &op)
			if err == nil {
				return rep, w.Node, nil
			}
			if ctx.Err() != nil {
				return worldReply{}, "", err
			}
			last = err // full since the directory heard, or its node is gone: the next
		}
		if req.NewLine.Cap == 0 {
			return worldReply{}, "", fmt.Errorf("%w: every line of map %q is full: %v", ErrNoCapacity, req.Map, last)
		}
		rep, node, err := j.openLine(ctx, req, &op, lines)
		if err == nil {
			return rep, node, nil
		}
		if !errors.Is(err, ErrRefused) && !errors.Is(err, ErrFull) {
			return worldReply{}, "", err
		}
		last = err
	}
	return worldReply{}, "", fmt.Errorf("%w: map %q: %v", ErrNoCapacity, req.Map, last)
}

// openLine books op on a new line of req.Map, every one of lines being
// full: the line another join of this process opened a moment ago, which
// the directory may not list yet, else one it opens. The joins of this
// process open one line of a map at a time.
func (j *joiner) openLine(ctx context.Context, req *JoinRequest, op *worldOp, lines []WorldStatus) (worldReply, string, error) {
	lo := j.dir.openingOf(req.Map)
	lo.mu.Lock()
	defer lo.mu.Unlock()
	next := 1
	listed := false
	for _, w := range lines {
		next = max(next, w.Line+1)
		listed = listed || w.World == lo.last.Room
	}
	if lo.last.Room != "" && time.Since(lo.at) < lineFresh && !listed {
		op.World = lo.last.Room
		if rep, err := j.bookOn(ctx, lo.last.Node, op); err == nil {
			return rep, lo.last.Node, nil
		}
		next = max(next, lo.line+1)
	}
	nl := req.NewLine
	nl.World = Line(req.Map, next)
	if err := nl.validate(); err != nil {
		return worldReply{}, "", err
	}
	data, _ := json.Marshal(nl)
	p, err := createWorldOn(ctx, j.c, &j.o, nl.World, nl.Cap, data)
	if errors.Is(err, ErrRefused) { // opened by another process meanwhile: look again
		j.waitFor(ctx, nl.World)
	}
	if err != nil {
		return worldReply{}, "", err
	}
	lo.last, lo.line, lo.at = p, next, time.Now()
	op.World = p.Room
	rep, err := j.bookOn(ctx, p.Node, op)
	if err != nil {
		return worldReply{}, "", fmt.Errorf("%w: %v", ErrFull, err)
	}
	return rep, p.Node, nil
}

// lineFresh is how long a join remembers the line it opened, for the
// next joins of its process, before the directory lists it (a few
// heartbeats).
const lineFresh = 10 * time.Second

// waitFor waits, a few heartbeats at most, for the directory to list
// world.
func (j *joiner) waitFor(ctx context.Context, world string) {
	for end := time.Now().Add(j.o.RequestTimeout); time.Now().Before(end) && ctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
		if _, ok := j.dir.LocateWorld(world); ok {
			return
		}
	}
}

// bookOn asks node for a place (op.World set).
func (j *joiner) bookOn(ctx context.Context, node string, op *worldOp) (worldReply, error) {
	var rep worldReply
	if j.self != nil && node == j.self.info.ID {
		rep = j.self.book(op)
	} else {
		r, err := j.request(ctx, node, op)
		if err != nil {
			return worldReply{}, err
		}
		rep = *r
	}
	switch {
	case rep.Full:
		return worldReply{}, fmt.Errorf("%w: world %q: %s", engine.ErrFull, op.World, rep.Error)
	case rep.Missing:
		return worldReply{}, fmt.Errorf("%w: %s", ErrNoWorld, rep.Error)
	case rep.Error != "":
		return worldReply{}, fmt.Errorf("%w: world %q: %s", ErrRefused, op.World, rep.Error)
	case rep.Ticket == "":
		return worldReply{}, fmt.Errorf("%w: world %q: a booking without a ticket", ErrInvalid, op.World)
	}
	return rep, nil
}

// request sends op to node's world subject and decodes the answer.
func (j *joiner) request(ctx context.Context, node string, op *worldOp) (*worldReply, error) {
	data, err := json.Marshal(op)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	actx, cancel := context.WithTimeout(ctx, j.o.RequestTimeout)
	defer cancel()
	msg, err := j.c.Request(actx, j.o.subjWorld(node), data, fromNode(node))
	if err != nil {
		return nil, fmt.Errorf("cluster: %s on node %s: %w", op.Op, node, err)
	}
	return decode[worldReply](msg.Data)
}

// Destination returns where a transfer out of one of this node's worlds
// sends its player, for engine.World.Transfer: the world req.World, or a
// line of req.Map (a new one from req.NewLine when all are full), on any
// node of the cluster, this one included. The transfer sets req's Player
// and State.
//
//	w.Transfer(player, node.Destination(cluster.JoinRequest{Map: "cave"}), state, done)
func (n *Node) Destination(req JoinRequest) engine.Destination {
	return &worldDest{j: &joiner{c: n.c, dir: n.dir, o: n.opts, self: n}, req: req}
}

// expiryMargin allows for the clocks of two nodes.
const expiryMargin = 5 * time.Second

// worldDest is a transfer's destination in the cluster.
type worldDest struct {
	j        *joiner
	req      JoinRequest
	node     string // the node that holds the booking
	transfer uint64
}

func (d *worldDest) Book(ctx context.Context, player string, state []byte, arrived func()) (engine.Booking, error) {
	n := d.j.self
	var b [8]byte
	for d.transfer == 0 {
		rand.Read(b[:])
		d.transfer = binary.LittleEndian.Uint64(b[:])
	}
	n.mu.Lock()
	if n.ws.arrivals == nil || n.left {
		n.mu.Unlock()
		return engine.Booking{}, fmt.Errorf("%w: node %s serves no worlds", ErrClosed, n.info.ID)
	}
	n.ws.arrivals[d.transfer] = arrived
	n.mu.Unlock()
	req := d.req
	req.Player, req.State = player, state
	rep, node, err := d.j.place(ctx, &req, n.info.ID, d.transfer)
	if err != nil {
		n.mu.Lock()
		delete(n.ws.arrivals, d.transfer)
		n.mu.Unlock()
		return engine.Booking{}, err
	}
	d.node = node
	bk := engine.Booking{World: rep.World, URL: rep.URL, Ticket: rep.Ticket, ID: rep.ID, Expires: rep.expires(), Standby: rep.Standby}
	if node == n.info.ID {
		bk.URL = "" // the client stays on the server it dialed
	}
	return bk, nil
}

// Settle asks the booking's node. A node that does not answer is taken
// not to hold the player only once the directory has declared it dead, or
// once the booking has expired (by a margin for the clocks): until then
// the player may still arrive, and the transfer asks again.
func (d *worldDest) Settle(ctx context.Context, b engine.Booking) (bool, error) {
	n := d.j.self
	var rep worldReply
	if d.node == n.info.ID {
		rep = n.settleHere(b.World, b.ID)
	} else {
		r, err := d.j.request(ctx, d.node, &worldOp{Op: "settle", World: b.World, ID: b.ID})
		switch {
		case err != nil && errors.Is(err, nats.ErrNoResponders) && !d.j.dir.alive(d.node):
			rep = worldReply{} // the node is dead, and the booking with it
		case err != nil && time.Now().After(b.Expires.Add(expiryMargin)):
			rep = worldReply{} // the booking expired: the player can no longer take it
		case err != nil:
			return false, err
		default:
			rep = *r
		}
	}
	n.mu.Lock()
	delete(n.ws.arrivals, d.transfer)
	n.mu.Unlock()
	return rep.Arrived, nil
}

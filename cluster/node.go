//go:build !js

package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// A Host creates the rooms the cluster places on its node. It returns the
// tickets for req.Players, signed with the secret the cluster's processes
// share, or an error: ErrFull (wrapped or not) sends the request to another
// node, any other error is the requester's answer. It is called from one
// goroutine at a time.
type Host func(req RoomRequest) (tickets map[string]string, err error)

// Node is one process of a cluster: it announces itself with heartbeats,
// takes room requests while it has capacity, answers for its room list,
// and follows the other nodes with its Directory.
type Node struct {
	nc        *nats.Conn
	c         *seal.Conn // sealed as this node
	info      NodeInfo
	host      Host
	opts      Options
	instance  uint64
	dir       *Directory
	listSub   *nats.Subscription
	probeSub  *nats.Subscription
	directSub *nats.Subscription // P.create.<id>: requests for this node
	kickSub   *nats.Subscription // P.kick.<id>
	stop      chan struct{}
	done      chan struct{}
	hostMu    sync.Mutex // held while host runs

	mu       sync.Mutex
	rooms    map[string]struct{}
	gen      uint64
	create   *nats.Subscription // nil while full
	full     bool               // the host said ErrFull: out of the queue until a room closes
	left     bool
	draining bool       // Drain was called
	ws       worldState // worldnode.go
	sb       *standbys  // standby.go; nil until ServeStandbys
	kick     func(player, reason string) int
}

// Join makes this process the node info of the cluster on nc: from now on
// it takes room requests (calling host) until it is full or Leave is
// called. nc stays the caller's.
func Join(nc *nats.Conn, info NodeInfo, host Host, opts *Options) (*Node, error) {
	n, err := join(nc, info, host, opts)
	return n, errstack.With(err)
}

func join(nc *nats.Conn, info NodeInfo, host Host, opts *Options) (*Node, error) {
	if err := info.validate(); err != nil {
		return nil, err
	}
	if host == nil {
		return nil, fmt.Errorf("%w: nil Host", ErrInvalid)
	}
	o := opts.withDefaults()
	c, err := o.conn(nc, seal.RoleNode, info.ID)
	if err != nil {
		return nil, err
	}
	// The node's heartbeats carry its sealing instance, so that a
	// directory can tell that a heartbeat comes from the process it
	// names.
	n := &Node{nc: nc, c: c, info: info, host: host, opts: o, instance: c.Peer().Instance,
		rooms: map[string]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	dir, err := watchOn(c, &o)
	if err != nil {
		c.Close()
		return nil, err
	}
	n.dir = dir
	fail := func(err error) (*Node, error) {
		for _, sub := range []*nats.Subscription{n.listSub, n.probeSub, n.directSub, n.kickSub, n.create} {
			if sub != nil {
				sub.Unsubscribe()
			}
		}
		dir.Close()
		c.Close()
		return nil, fmt.Errorf("cluster: join: %w", err)
	}
	if n.listSub, err = c.Subscribe(o.subjList(info.ID), n.onList); err != nil {
		return fail(err)
	}
	if n.probeSub, err = c.Subscribe(o.subjProbe(), func(*seal.Msg) { n.heartbeat() }); err != nil {
		return fail(err)
	}
	if n.kickSub, err = c.Subscribe(o.subjKick(info.ID), n.onKick); err != nil {
		return fail(err)
	}
	n.mu.Lock()
	err = n.member(true)
	n.mu.Unlock()
	if err == nil {
		n.directSub, err = c.Subscribe(o.subjCreateOn(info.ID), n.onCreate)
	}
	if err == nil {
		err = nc.Flush()
	}
	if err != nil {
		return fail(err)
	}
	go n.run()
	return n, nil
}

// Info returns the node's description.
func (n *Node) Info() NodeInfo { return n.info }

// Directory returns the node's view of the cluster.
func (n *Node) Directory() *Directory { return n.dir }

// Rooms returns the rooms the node holds, sorted.
func (n *Node) Rooms() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.rooms))
	for r := range n.rooms {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// Closed tells the cluster that the host closed room: its place is free.
// When it returns, the node is back in the create queue.
func (n *Node) Closed(room string) {
	n.mu.Lock()
	if _, ok := n.rooms[room]; !ok || n.left {
		n.mu.Unlock()
		return
	}
	delete(n.rooms, room)
	n.full = false
	n.gen++
	n.publish(n.opts.subjRoom(), roomEvent{ID: n.info.ID, Instance: n.instance, Gen: n.gen, Op: "close", Room: room})
	if err := n.member(true); err != nil {
		n.opts.Logger.Warn("cluster: rejoin the create queue", "err", err)
	}
	n.mu.Unlock()
	n.nc.Flush() // the subscription is in place at the server; fails only if nc is closed
}

// run publishes the heartbeats.
func (n *Node) run() {
	defer close(n.done)
	t := time.NewTicker(n.opts.Heartbeat)
	defer t.Stop()
	for {
		n.heartbeat()
		n.dedupeWorlds()
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// heartbeat announces the node: every interval, and when a new directory
// probes.
func (n *Node) heartbeat() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.heartbeatLocked()
}

// heartbeatLocked is heartbeat with n.mu held.
func (n *Node) heartbeatLocked() {
	if n.left {
		return
	}
	n.publish(n.opts.subjHeartbeat(), heartbeat{ID: n.info.ID, Instance: n.instance, URL: n.info.URL,
		// Rooms taken over from a dead node may hold it past its
		// capacity for a while: it says full, as it is.
		Capacity: n.info.Capacity, Rooms: min(len(n.rooms), n.info.Capacity), Gen: n.gen, IntervalMS: n.opts.Heartbeat.Milliseconds(),
		Players: n.info.Players, Worlds: n.worldLoads(), Region: n.info.Region, Builds: n.info.Builds, Draining: n.draining,
		CellMaps: n.cellMapsLocked()})
}

// publish seals v as JSON and sends it on subject; n.mu is held, so that
// a node's messages leave in the order of its generations.
func (n *Node) publish(subject string, v any) { publishJSON(n.c, &n.opts, subject, v) }

// member joins (in) or leaves the create queue; n.mu is held. A node
// leaves it while full, so that NATS sends requests only to nodes with
// capacity; requests already queued are answered "full" (Drain).
func (n *Node) member(in bool) error {
	in = in && !n.left && !n.full && len(n.rooms) < n.info.Capacity
	switch {
	case in && n.create == nil:
		sub, err := n.c.QueueSubscribe(n.opts.subjCreate(), createQueue, n.onCreate)
		if err != nil {
			return err
		}
		n.create = sub
	case !in && n.create != nil:
		err := n.create.Drain()
		n.create = nil
		return err
	}
	return nil
}

// onList answers a directory's request for the room list.
func (n *Node) onList(m *seal.Msg) {
	n.mu.Lock()
	l := roomList{ID: n.info.ID, Instance: n.instance, Gen: n.gen, Rooms: make([]string, 0, len(n.rooms))}
	for r := range n.rooms {
		l.Rooms = append(l.Rooms, r)
	}
	n.mu.Unlock()
	slices.Sort(l.Rooms)
	n.respond(m, l)
}

func (n *Node) respond(m *seal.Msg, v any) { respondJSON(m, &n.opts, v) }

// onCreate takes a room request from the create queue, or one sent to
// this node: from a node, a lobby or a matchmaker.
func (n *Node) onCreate(m *seal.Msg) {
	if !placer(m) {
		n.c.Refuse(m, "a room request from a "+m.From.Role.String())
		return
	}
	req, err := decode[RoomRequest](m.Data)
	if err != nil {
		n.respond(m, createReply{Error: err.Error()})
		return
	}
	if !Serves(n.info.Builds, req.Builds) {
		// Full sends it to another node, which may serve them.
		n.respond(m, createReply{Error: fmt.Sprintf("node %s serves builds %q, not all of %q", n.info.ID, n.info.Builds, req.Builds), Full: true})
		return
	}
	if other, ok := n.dir.Locate(req.Room); ok && other.ID != n.info.ID {
		n.respond(m, createReply{Error: fmt.Sprintf("room %q exists on node %s", req.Room, other.ID)})
		return
	}
	if other, ok := n.dir.LocateWorld(req.Room); ok {
		n.respond(m, createReply{Error: fmt.Sprintf("a world %q exists on node %s", req.Room, other.Node)})
		return
	}
	n.mu.Lock()
	switch _, dup := n.rooms[req.Room]; {
	case n.left:
		n.mu.Unlock()
		n.respond(m, createReply{Error: ErrClosed.Error(), Full: true})
		return
	case n.full || len(n.rooms) >= n.info.Capacity:
		n.member(false)
		n.mu.Unlock()
		n.respond(m, createReply{Error: ErrFull.Error(), Full: true})
		return
	case dup:
		n.mu.Unlock()
		n.respond(m, createReply{Error: fmt.Sprintf("room %q exists on node %s", req.Room, n.info.ID)})
		return
	}
	n.rooms[req.Room] = struct{}{} // reserved while the host creates it
	n.mu.Unlock()

	// A drained subscription may still deliver its queued requests while
	// a new one takes others: the host is still called by one at a time.
	n.hostMu.Lock()
	tickets, err := n.host(*req)
	n.hostMu.Unlock()

	n.mu.Lock()
	if err != nil || n.left {
		delete(n.rooms, req.Room)
		if errors.Is(err, ErrFull) {
			n.full = true
			n.member(false)
		}
		n.mu.Unlock()
		if err == nil {
			err = ErrClosed
		}
		n.opts.Logger.Info("cluster: room refused", "room", req.Room, "err", err)
		n.respond(m, createReply{Error: err.Error(), Full: errors.Is(err, ErrFull) || errors.Is(err, ErrClosed)})
		return
	}
	n.gen++
	n.publish(n.opts.subjRoom(), roomEvent{ID: n.info.ID, Instance: n.instance, Gen: n.gen, Op: "open", Room: req.Room})
	if err := n.member(true); err != nil {
		n.opts.Logger.Warn("cluster: leave the create queue", "err", err)
	}
	sb := n.sb
	n.mu.Unlock()
	if sb != nil {
		sb.created(req.Room, req.Config) // a standby on another node
	}
	n.opts.Logger.Info("cluster: room placed here", "room", req.Room, "players", len(req.Players))
	n.respond(m, createReply{Placement: Placement{Room: req.Room, Node: n.info.ID, URL: n.info.URL, Tickets: tickets}})
}

// Leave stops the node on purpose: it leaves the create queue, tells the
// other nodes that its rooms are closed (not lost) and stops its
// heartbeats and directory. The host closes its rooms itself. nc stays
// open.
func (n *Node) Leave() error {
	n.mu.Lock()
	if n.left {
		n.mu.Unlock()
		return nil
	}
	n.left = true
	err := n.member(false)
	n.leaveWorlds()
	n.publish(n.opts.subjLeave(), leave{ID: n.info.ID, Instance: n.instance})
	sb := n.sb
	n.mu.Unlock()
	if sb != nil {
		sb.close()
	}
	close(n.stop)
	<-n.done
	n.listSub.Unsubscribe()
	n.probeSub.Unsubscribe()
	n.directSub.Unsubscribe()
	n.kickSub.Unsubscribe()
	n.dir.Close()
	if ferr := n.nc.Flush(); err == nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
		err = ferr
	}
	n.c.Close()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return errstack.Wrapf(err, "cluster: leave")
	}
	return nil
}

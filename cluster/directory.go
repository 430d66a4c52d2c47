//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// Options tune a node, a directory and CreateRoom. Secret is required;
// the rest has defaults. Every process of a cluster uses the same Prefix
// and Secret.
type Options struct {
	// Secret is the cluster's secret, at least 16 bytes, the same in
	// every process of the cluster (nodes, lobbies, matchmakers) and never
	// given to a player. Every message a process sends on NATS is sealed
	// with keys derived from it for its sender: authenticated, encrypted
	// (a ticket inside is never in the clear on a subject), bound to its
	// subject and fresh; a message that does not open, is older than
	// MaxSkew, is a replay, or comes from a sender that may not send it
	// (a heartbeat for another node) is dropped (Node.Dropped, and the
	// metrics). It is not the ticket secret, though tongbu serve uses
	// that when given no other.
	Secret []byte
	// AcceptSecrets are secrets whose messages are taken too, while the
	// cluster rotates its secret: give every process the new one here
	// beside the old Secret, then make the new one Secret and the old
	// one AcceptSecrets everywhere, then drop it.
	AcceptSecrets [][]byte
	// MaxSkew is how far a message's send time may be from this
	// process's clock (default 1 min): it bounds how long a message can be
	// replayed to a process that never saw it. Keep clocks in sync (NTP).
	MaxSkew time.Duration
	// Prefix starts every subject of the cluster (default "tongbu.cluster"),
	// so that several clusters can share one NATS.
	Prefix string
	// Heartbeat is how often a node announces itself (default 1 s, at
	// least 10 ms).
	Heartbeat time.Duration
	// Misses is how many of a node's heartbeat intervals may pass without
	// one before the node is declared dead and its rooms lost (default 3).
	Misses int
	// RequestTimeout bounds one try of CreateRoom and one room-list
	// request (default 2 s).
	RequestTimeout time.Duration
	// Attempts bounds the nodes CreateRoom tries (default 3).
	Attempts int
	// MaxNodes bounds the nodes a directory tracks (default 1000).
	MaxNodes int
	// MaxLost bounds the lost rooms a directory remembers (default 10,000);
	// the oldest are forgotten first.
	MaxLost int
	// CheckpointEvery is how often each world of a node that serves
	// standbys (Node.ServeStandbys) writes its checkpoint to the cluster's
	// JetStream bucket (default DefaultCheckpointEvery; negative: never,
	// and a world whose node dies is lost). A player whose world's node
	// dies loses at most this, and the second the cluster takes to notice.
	CheckpointEvery time.Duration
	// CheckpointReplicas is how many NATS servers keep each checkpoint
	// (default 1; 3 on a NATS cluster of three, so that one server's
	// death loses none).
	CheckpointReplicas int
	// OnLoss is called, from the directory's goroutine, for every node
	// declared dead with the rooms it held. It must not block.
	OnLoss func(Loss)
	// Logger receives the cluster's logs (default: discarded).
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Prefix == "" {
		c.Prefix = "tongbu.cluster"
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = time.Second
	}
	c.Heartbeat = max(c.Heartbeat, minInterval)
	c.Heartbeat = min(c.Heartbeat, maxInterval)
	if c.Misses <= 0 {
		c.Misses = 3
	}
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 2 * time.Second
	}
	if c.Attempts <= 0 {
		c.Attempts = 3
	}
	if c.MaxNodes <= 0 {
		c.MaxNodes = 1000
	}
	if c.MaxLost <= 0 {
		c.MaxLost = 10000
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// The subjects of SPEC.md §11, under the prefix.
func (o *Options) subjEvents() string        { return o.Prefix + ".ev.*" }
func (o *Options) subjHeartbeat() string     { return o.Prefix + ".ev.hb" }
func (o *Options) subjRoom() string          { return o.Prefix + ".ev.room" }
func (o *Options) subjLeave() string         { return o.Prefix + ".ev.leave" }
func (o *Options) subjProbe() string         { return o.Prefix + ".probe" }
func (o *Options) subjCreate() string        { return o.Prefix + ".create" }
func (o *Options) subjList(id string) string { return o.Prefix + ".list." + id }
func (o *Options) subjCreateOn(id string) string {
	return o.Prefix + ".create." + id
}

// createQueue is the queue group of the nodes that have capacity.
const createQueue = "create"

// Directory follows the nodes of a cluster from their heartbeats and room
// events: which are alive, which rooms each holds, and which rooms were
// lost with a node that died. Every Node has one; a process that only
// places rooms (a lobby) can Watch. Its methods are safe for concurrent
// use.
type Directory struct {
	c    *seal.Conn
	own  bool // c is the directory's (Watch), not its node's
	opts Options
	sub  *nats.Subscription

	mu     sync.Mutex
	st     *state
	closed bool
	stop   chan struct{}
	done   chan struct{}

	fetches sync.WaitGroup // room-list requests under way

	openMu  sync.Mutex
	opening map[string]*lineOpening // by map: the joins of this process opening its lines
}

// lineOpening serializes the joins of one process that open a new line
// of a map (so that two players arriving at once do not open the same
// line on two nodes), and remembers the line opened last until the
// directory lists it.
type lineOpening struct {
	mu   sync.Mutex // held while a join opens a line
	last Placement  // the line opened last
	line int        // its number
	at   time.Time
}

// openingOf returns map m's lineOpening.
func (d *Directory) openingOf(m string) *lineOpening {
	d.openMu.Lock()
	defer d.openMu.Unlock()
	if d.opening == nil {
		d.opening = map[string]*lineOpening{}
	}
	o := d.opening[m]
	if o == nil {
		if len(d.opening) >= maxOpening {
			clear(d.opening) // forget old maps' last lines: they are listed by now
		}
		o = &lineOpening{}
		d.opening[m] = o
	}
	return o
}

// maxOpening bounds the maps whose line openings a directory remembers.
const maxOpening = 1024

// Watch follows the cluster whose nodes publish on nc with opts.Prefix.
// Close stops it; nc stays open.
func Watch(nc *nats.Conn, opts *Options) (*Directory, error) {
	d, err := watch(nc, opts)
	return d, errstack.With(err)
}

func watch(nc *nats.Conn, opts *Options) (*Directory, error) {
	o := opts.withDefaults()
	c, err := o.conn(nc, seal.RoleDirectory, randomID("d"))
	if err != nil {
		return nil, err
	}
	d, err := watchOn(c, &o)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.own = true
	return d, nil
}

// watchOn follows the cluster over c (a node's own connection, or the
// directory's).
func watchOn(c *seal.Conn, o *Options) (*Directory, error) {
	d := &Directory{c: c, opts: *o, st: newState(o.Misses, o.MaxNodes, o.MaxLost),
		stop: make(chan struct{}), done: make(chan struct{})}
	sub, err := c.Subscribe(o.subjEvents(), d.onEvent)
	if err != nil {
		return nil, fmt.Errorf("cluster: subscribe %s: %w", o.subjEvents(), err)
	}
	if err := c.NC().Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("cluster: subscribe %s: %w", o.subjEvents(), err)
	}
	d.sub = sub
	// Ask every node for a heartbeat now, rather than within an interval.
	if err := c.Publish(o.subjProbe(), nil); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("cluster: probe: %w", err)
	}
	go d.run()
	return d, nil
}

// run declares lost the nodes whose heartbeats stopped.
func (d *Directory) run() {
	defer close(d.done)
	t := time.NewTicker(d.opts.Heartbeat / 2)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case now := <-t.C:
			d.mu.Lock()
			losses := d.st.expire(now)
			d.mu.Unlock()
			for _, l := range losses {
				d.report(l)
			}
		}
	}
}

func (d *Directory) report(l Loss) {
	names := strings.Join(l.Rooms, ",")
	if len(names) > 2000 {
		names = names[:2000] + "..."
	}
	d.opts.Logger.Warn("cluster: node lost", "node", l.Node, "url", l.URL, "restarted", l.Restarted,
		"lost_rooms", len(l.Rooms), "rooms", names)
	if d.opts.OnLoss != nil {
		d.opts.OnLoss(l)
	}
}

// onEvent handles a heartbeat, room event or leave. One subscription takes
// all three, so that a node's messages arrive in the order it sent them.
// Each must come from the node it names, that instance of it: a node
// speaks for itself only.
func (d *Directory) onEvent(m *seal.Msg) {
	now := time.Now()
	var err error
	self := func(id string, instance uint64) bool {
		if m.From.Role == seal.RoleNode && m.From.ID == id && m.From.Instance == instance {
			return true
		}
		d.c.Refuse(m, fmt.Sprintf("a node event naming node %s instance %x, from %v", id, instance, m.From))
		return false
	}
	switch m.Subject {
	case d.opts.subjHeartbeat():
		var h *heartbeat
		if h, err = decode[heartbeat](m.Data); err == nil && self(h.ID, h.Instance) {
			d.mu.Lock()
			fetch, loss := d.st.heartbeat(h, now)
			if fetch {
				d.startFetch(h.ID)
			}
			d.mu.Unlock()
			if loss != nil {
				d.report(*loss)
			}
		}
	case d.opts.subjRoom():
		var e *roomEvent
		if e, err = decode[roomEvent](m.Data); err == nil && self(e.ID, e.Instance) {
			d.mu.Lock()
			if d.st.event(e) {
				d.startFetch(e.ID)
			}
			d.mu.Unlock()
		}
	case d.opts.subjLeave():
		var l *leave
		if l, err = decode[leave](m.Data); err == nil && self(l.ID, l.Instance) {
			d.mu.Lock()
			left := d.st.leave(l)
			d.mu.Unlock()
			if left {
				d.opts.Logger.Info("cluster: node left", "node", l.ID)
			}
		}
	default:
		err = fmt.Errorf("%w: unknown subject %s", ErrInvalid, m.Subject)
	}
	if err != nil {
		d.opts.Logger.Debug("cluster: message dropped", "subject", m.Subject, "err", err)
	}
}

// startFetch, called with d.mu held, starts fetch(id) unless the directory
// is closed. A callback may still run after Close unsubscribed, but Close
// sets closed under d.mu before it waits, so no fetch is added to the
// wait group during or after the Wait.
func (d *Directory) startFetch(id string) {
	if d.closed {
		return
	}
	d.fetches.Add(1)
	go func() {
		defer d.fetches.Done()
		d.fetch(id)
	}()
}

// fetch asks node id for its room list.
func (d *Directory) fetch(id string) {
	var l *roomList
	ctx, cancel := context.WithTimeout(context.Background(), d.opts.RequestTimeout)
	msg, err := d.c.Request(ctx, d.opts.subjList(id), nil, fromNode(id))
	cancel()
	if err == nil {
		if l, err = decode[roomList](msg.Data); err == nil && l.Instance != msg.From.Instance {
			err = fmt.Errorf("%w: room list of instance %x from instance %x", ErrInvalid, l.Instance, msg.From.Instance)
		}
	}
	if err != nil {
		d.opts.Logger.Debug("cluster: room list", "node", id, "err", err)
		l = nil
	}
	d.mu.Lock()
	d.st.listed(id, l)
	d.mu.Unlock()
}

// Nodes returns the nodes known, alive or lost, sorted by id.
func (d *Directory) Nodes() []NodeStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]NodeStatus, 0, len(d.st.nodes))
	for _, n := range d.st.nodes {
		out = append(out, d.st.status(n))
	}
	slices.SortFunc(out, func(a, b NodeStatus) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// Rooms returns the rooms node id holds, as far as the directory knows,
// sorted.
func (d *Directory) Rooms(id string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.st.nodes[id]
	if n == nil {
		return nil
	}
	out := make([]string, 0, len(n.rooms))
	for r := range n.rooms {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// RoomCount returns how many rooms node id holds, as far as the directory
// knows: Rooms without the list.
func (d *Directory) RoomCount(id string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n := d.st.nodes[id]; n != nil {
		return len(n.rooms)
	}
	return 0
}

// Locate returns the live node that holds room.
func (d *Directory) Locate(room string) (NodeStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.locate(room)
}

// Lost returns the rooms lost with nodes that died, oldest first (at most
// Options.MaxLost).
func (d *Directory) Lost() []LostRoom {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.st.lost)
}

// Worlds returns the worlds on live nodes, sorted by name, as of their
// nodes' last heartbeats.
func (d *Directory) Worlds() []WorldStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.st.worlds(func(WorldStatus) bool { return true })
}

// Lines returns the lines of map m on live nodes (the worlds named
// Line(m, n)), sorted by number.
func (d *Directory) Lines(m string) []WorldStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.st.worlds(func(w WorldStatus) bool { return w.Map == m })
	slices.SortFunc(out, func(a, b WorldStatus) int { return a.Line - b.Line })
	return out
}

// LocateWorld returns the world named name, on a live node.
func (d *Directory) LocateWorld(name string) (WorldStatus, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := d.st.worlds(func(w WorldStatus) bool { return w.World == name })
	if len(out) == 0 {
		return WorldStatus{}, false
	}
	return out[0], true
}

// worldOn reports whether live node id lists world name, and whether
// any does (a moving cell is listed by two for a moment).
func (d *Directory) worldOn(name, id string) (on, listed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.st.worlds(func(w WorldStatus) bool { return w.World == name }) {
		listed = true
		on = on || w.Node == id
	}
	return on, listed
}

// alive reports whether node id is alive as far as the directory knows.
func (d *Directory) alive(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.st.nodes[id]
	return n != nil && n.alive
}

// Status is the JSON a directory serves (ServeHTTP).
type Status struct {
	Nodes  []NodeStatus        `json:"nodes"`
	Rooms  map[string][]string `json:"rooms"` // by node id
	Worlds []WorldStatus       `json:"worlds"`
	Lost   []LostRoom          `json:"lost"`
}

// ServeHTTP answers with the directory's Status as JSON: the nodes, the
// rooms each holds, the worlds, and the rooms and worlds lost.
func (d *Directory) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	st := Status{Nodes: d.Nodes(), Rooms: map[string][]string{}, Worlds: d.Worlds(), Lost: d.Lost()}
	for _, n := range st.Nodes {
		st.Rooms[n.ID] = d.Rooms(n.ID)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(st)
}

// Close stops following the cluster. It leaves the NATS connection open.
func (d *Directory) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	d.sub.Unsubscribe()
	close(d.stop)
	<-d.done
	d.fetches.Wait() // at most RequestTimeout
	if d.own {
		d.c.Close()
	}
	return nil
}

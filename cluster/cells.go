//go:build !js

package cluster

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// subjCell is the subject of the border messages from cell from to cell
// to of map m.
func (o *Options) subjCell(m string, to, from int) string {
	return o.Prefix + ".cell." + m + "." + strconv.Itoa(to) + "." + strconv.Itoa(from)
}

// cellRunner is a cell this node simulates.
type cellRunner struct {
	n       *Node
	m       CellMap
	i       int
	ew      atomic.Pointer[engine.World]
	sub     *nats.Subscription
	borders map[int]*interest.Border // by neighbour; owned by the world's worker
	waiting map[interest.ID]time.Time
	standby map[interest.ID]*standby  // this cell's players near a border, with a place held next door
	held    map[interest.ID]heldPlace // standby places held here, by the entity they are for
	buf     []byte
	out     []byte // a border message with its kind
	states  []byte
	down    map[int]int               // by neighbour: the checks in a row that found it in no heartbeat
	bands   map[int][]interest.Region // by neighbour: my regions within one of its cell
	peers   map[int]*cellPeer         // by neighbour: what this cell took from it last
	frame   int
	sent    atomic.Int64 // border bytes published

	// epoch names this cell's run of frames: it stays as the cell moves
	// to another node, and is new when the cell is made afresh or comes
	// back from a crash, so that its neighbours know to drop what they
	// mirror of it.
	epoch    uint64
	restored bool // made from a crashed node's checkpoint: a new epoch on its restore
	// noStandby: the cell is moving away: its players book no places
	// next door (they are parked at its heir). Owned by the worker.
	noStandby bool

	// While holding (a cell waiting for its state, or one moving away),
	// its neighbours' messages wait in queue (at most maxQueue).
	mu      sync.Mutex
	holding bool
	queue   []borderMsg
}

// cellPeer is what a cell knows of a neighbour's messages; owned by the
// world's worker.
type cellPeer struct {
	epoch    uint64
	last     int    // the frame of the last border message taken
	from     string // the node it came from; "" until one came
	instance uint64
}

// borderMsg is a neighbour's message, decoded as far as its envelope.
type borderMsg struct {
	from     int // the neighbour
	states   bool
	framed   bool // it carries an epoch and a frame (cellBorderAt, cellStatesAt)
	epoch    uint64
	frame    int
	data     []byte
	node     string
	instance uint64
}

// maxQueue bounds the messages a holding cell keeps: a move takes a
// few frames, and each neighbour sends one or two a frame.
const maxQueue = 4096

// ServeCell makes this node simulate cell i of map m with the game's
// hooks in cfg (Join places a player joining this cell afresh; Tick runs
// the cell's NPCs: it must move only the entities it owns, those for which
// interest.World.Ghost is false). It creates the cell's world on the
// node's server (ServeWorlds must have been called), listed in the
// directory as CellName(m.Map, i), and from then on, every frame, sends
// the neighbours the entities near their borders over NATS and applies
// theirs; a player who walks into a neighbour's cell is handed to it and
// its client follows, over a connection it opened while the player was
// near the border (unless m.NoStandby). A neighbour that dies has its
// ghosts removed; its players are lost with it. Close the returned world
// to stop.
func (n *Node) ServeCell(m CellMap, i int, cfg engine.WorldConfig) (*engine.World, error) {
	w, err := n.serveCell(m, i, cfg)
	return w, errstack.With(err)
}

func (n *Node) serveCell(m CellMap, i int, cfg engine.WorldConfig) (*engine.World, error) {
	if err := m.validate(); err != nil {
		return nil, err
	}
	if i < 0 || i >= m.Cells() {
		return nil, fmt.Errorf("%w: cell %d of %d", ErrInvalid, i, m.Cells())
	}
	n.mu.Lock()
	srv := n.ws.srv
	n.mu.Unlock()
	if srv == nil {
		return nil, fmt.Errorf("%w: ServeCell before ServeWorlds", ErrInvalid)
	}
	name := CellName(m.Map, i)
	c, wc := n.newCell(m, i, cfg, false)
	c.holding = false // a new cell: its neighbours' messages apply at once
	ew, err := srv.CreateWorld(name, wc)
	if err != nil {
		return nil, err
	}
	if err := c.attach(ew); err != nil {
		ew.Close()
		return nil, err
	}
	capacity := max(cfg.MaxPlayers, 1)
	n.mu.Lock()
	_, movable := n.ws.cellHosts[m.Map]
	n.ws.worlds[name] = &hosted{w: ew, cap: capacity, cell: movable}
	n.ws.used += capacity
	n.ws.cells = append(n.ws.cells, c)
	n.heartbeatLocked()
	sb := n.sb
	n.mu.Unlock()
	if sb != nil && movable {
		sb.createdWorld(WorldRequest{World: name, Cap: capacity}, ew, 0) // an heir among the map's hosts, and checkpoints
	}
	n.opts.Logger.Info("cluster: cell served here", "map", m.Map, "cell", i, "rect", fmt.Sprint(m.Rect(i)))
	return ew, nil
}

// newCell makes cell i's runner and its world's configuration from the
// game's cfg. The runner holds its neighbours' messages until the world
// has its state (restored: it came back from a crash, under a new epoch).
func (n *Node) newCell(m CellMap, i int, cfg engine.WorldConfig, restored bool) (*cellRunner, engine.WorldConfig) {
	c := &cellRunner{n: n, m: m, i: i, borders: map[int]*interest.Border{}, waiting: map[interest.ID]time.Time{},
		standby: map[interest.ID]*standby{}, held: map[interest.ID]heldPlace{}, down: map[int]int{}, bands: map[int][]interest.Region{},
		peers: map[int]*cellPeer{}, epoch: newEpoch(), holding: true, restored: restored}
	ic := m.Interest
	ic.IDStride, ic.IDOffset = m.Cells(), i
	game := cfg
	cfg.Interest, cfg.Start = ic, m.Start.Add(m.phase(i))
	cfg.Arrive = func(w *interest.World, player string, state []byte) (interest.ID, error) {
		if id, ok := readHandover(state); ok {
			if _, owned := w.Logic(id); !owned || w.Ghost(id) {
				return 0, fmt.Errorf("cell %d does not hold the entity %d handed to it", i, id)
			}
			delete(c.waiting, id)
			return id, nil
		}
		switch {
		case game.Arrive != nil:
			return game.Arrive(w, player, state)
		case game.Join != nil:
			return game.Join(w, player)
		}
		return 0, fmt.Errorf("cell %d: a player arrived with no place to put it (WorldConfig.Join)", i)
	}
	cfg.Leave = func(w *interest.World, player string, id interest.ID) {
		if w.Ghost(id) {
			return // handed to a neighbour: the game's player lives on there
		}
		if game.Leave != nil {
			game.Leave(w, player, id)
		} else {
			w.Despawn(id)
		}
	}
	cfg.AfterTick = func(w *interest.World, now time.Time) {
		if game.AfterTick != nil {
			game.AfterTick(w, now)
		}
		c.afterTick(w, now)
	}
	// The cell's own part of its checkpoints: its epoch and the frame of
	// each neighbour's message it took last, before the game's.
	cfg.Checkpoint = func(w *interest.World) []byte {
		var st []byte
		if game.Checkpoint != nil {
			st = game.Checkpoint(w)
		}
		return c.appendState(st)
	}
	cfg.Restore = func(w *interest.World, b []byte) error {
		st, err := c.loadState(b)
		if err == nil && game.Restore != nil {
			err = game.Restore(w, st)
		}
		if err == nil {
			c.unhold(w) // what waited meanwhile, after the game has its state
		}
		return err
	}
	return c, cfg
}

// attach joins the cell's world, just made, to its neighbours: its
// borders, and the subject their messages come on.
func (c *cellRunner) attach(ew *engine.World) error {
	m, i := c.m, c.i
	done := make(chan struct{})
	ew.Do(func(w *interest.World) {
		defer close(done)
		for j := range m.Cells() {
			if b, err := w.NewBorder(m.Rect(i), m.Rect(j)); err == nil && j != i {
				c.borders[j] = b
				mine, near := m.Rect(i), m.Rect(j)
				for x := max(mine.X0, near.X0-1); x < min(mine.X1, near.X1+1); x++ {
					for y := max(mine.Y0, near.Y0-1); y < min(mine.Y1, near.Y1+1); y++ {
						c.bands[j] = append(c.bands[j], interest.Region{X: x, Y: y})
					}
				}
			}
		}
	})
	<-done
	for j := range c.borders {
		if _, up := c.n.dir.LocateWorld(CellName(m.Map, j)); !up {
			c.down[j] = downAfter // not up yet: nothing is handed to it until it is
		}
	}
	c.ew.Store(ew)
	var err error
	if c.sub, err = c.n.c.Subscribe(c.n.opts.Prefix+".cell."+m.Map+"."+strconv.Itoa(i)+".*", c.onBorder); err != nil {
		return fmt.Errorf("cluster: subscribe to cell %s: %w", CellName(m.Map, i), err)
	}
	return nil
}

// onBorder takes a neighbour's border message, to apply on the world's
// worker before its next tick. It must come from a node, and from a node
// that serves the neighbour's cell when the directory lists it (two do
// for a moment while the cell moves).
func (c *cellRunner) onBorder(msg *seal.Msg) {
	from, err := strconv.Atoi(msg.Subject[strings.LastIndexByte(msg.Subject, '.')+1:])
	ew := c.ew.Load()
	if err != nil || ew == nil || len(msg.Data) == 0 {
		return
	}
	if msg.From.Role != seal.RoleNode {
		c.n.c.Refuse(msg, "a border message from a "+msg.From.Role.String())
		return
	}
	if on, listed := c.n.dir.worldOn(CellName(c.m.Map, from), msg.From.ID); listed && !on {
		c.n.c.Refuse(msg, fmt.Sprintf("a border message of cell %d, which node %s does not serve", from, msg.From.ID))
		return
	}
	m, err := readBorderMsg(msg.Data)
	if err != nil {
		c.n.opts.Logger.Debug("cluster: border message dropped", "cell", c.i, "from", from, "err", err)
		return
	}
	m.from, m.node, m.instance = from, msg.From.ID, msg.From.Instance
	c.mu.Lock()
	if c.holding {
		if len(c.queue) < maxQueue {
			c.queue = append(c.queue, m)
		}
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	ew.Do(func(w *interest.World) { c.take(w, ew, m) })
}

// readBorderMsg reads a border message's envelope: its kind, and for the
// framed kinds the sender's epoch and frame.
func readBorderMsg(b []byte) (borderMsg, error) {
	var m borderMsg
	kind, b := b[0], b[1:]
	switch kind {
	case cellBorder, cellStates:
		m.states = kind == cellStates
	case cellBorderAt, cellStatesAt:
		m.states, m.framed = kind == cellStatesAt, true
		if len(b) < 8 {
			return m, fmt.Errorf("%w: border message: epoch", ErrInvalid)
		}
		m.epoch, b = binary.LittleEndian.Uint64(b), b[8:]
		f, n := binary.Uvarint(b)
		if n <= 0 || f > 1<<40 {
			return m, fmt.Errorf("%w: border message: frame", ErrInvalid)
		}
		m.frame, b = int(f), b[n:]
	default:
		return m, fmt.Errorf("%w: border message of kind %d", ErrInvalid, kind)
	}
	m.data = b
	return m, nil
}

// take applies a neighbour's message; on the worker. A framed message
// older than what this cell took (its checkpoint has it, or it came
// twice) is dropped. A neighbour under a new epoch (it came back from a
// crash, or was made afresh) has its ghosts dropped and mirrored anew; a
// neighbour that moved to another node is told everything again, and
// this cell's players waiting at its old node give their places up (they
// book again at the new one).
func (c *cellRunner) take(w *interest.World, ew *engine.World, m borderMsg) {
	b := c.borders[m.from]
	if b == nil {
		return
	}
	if m.framed {
		p := c.peers[m.from]
		switch {
		case p == nil:
			p = &cellPeer{epoch: m.epoch, last: -1}
			c.peers[m.from] = p
			b.Refresh()
		case p.epoch != m.epoch:
			b.Drop()
			b.Refresh()
			p.epoch, p.last = m.epoch, -1
			c.restandby(m.from)
		case p.from != "" && (p.from != m.node || p.instance != m.instance):
			b.Refresh()
			c.restandby(m.from)
		}
		p.from, p.instance = m.node, m.instance
		if m.states {
			if m.frame != p.last {
				return // its border message was not taken here
			}
		} else {
			if m.frame <= p.last {
				return
			}
			p.last = m.frame
		}
	}
	if m.states {
		c.takeStates(w, m.from, m.data)
		return
	}
	adopted, err := b.Apply(m.data)
	if err != nil {
		c.n.opts.Logger.Debug("cluster: border message dropped", "cell", c.i, "from", m.from, "err", err)
		return
	}
	deadline := time.Now().Add(orphanAfter)
	for _, id := range adopted {
		if k, _ := w.Kind(id); k != interest.Player {
			continue
		}
		c.waiting[id] = deadline // its client is on its way
		if h, ok := c.held[id]; ok {
			delete(c.held, id)
			ew.Admit(h.booking) // its client is here already: welcome it
		}
	}
}

// restandby gives up the places this cell's players hold at neighbour j,
// which moved: they book again there next frame.
func (c *cellRunner) restandby(j int) {
	for _, st := range c.standby {
		if st.to == j && !st.stopped && st.handedAt.IsZero() {
			st.stop(nil)
		}
	}
}

// The first byte of a message on a border subject: a border message, or
// the game's states of the entities it handed over, sent after it (in
// order: NATS keeps one publisher's messages on a subject in order).
// The framed kinds carry the sender's epoch (8 bytes, little-endian)
// and frame (a uvarint) before their message; nodes send those, and take
// the unframed kinds of older nodes.
const (
	cellBorder   = 0
	cellStates   = 1
	cellBorderAt = 2
	cellStatesAt = 3
)

// envelope appends a framed message's kind, the cell's epoch and frame.
func (c *cellRunner) envelope(dst []byte, kind byte, frame int) []byte {
	dst = append(dst, kind)
	dst = binary.LittleEndian.AppendUint64(dst, c.epoch)
	return binary.AppendUvarint(dst, uint64(frame))
}

// downAfter is how many checks in a row (a second apart) must find a
// neighbour in no heartbeat before it counts as down.
const downAfter = 2

// maxStatesMsg bounds one states message: more go in the next.
const maxStatesMsg = 256 << 10

// sendStates sends the game's state of each entity handed over this
// frame (CellMap.Handover) on subj.
func (c *cellRunner) sendStates(w *interest.World, subj string, handed []interest.ID) {
	out := c.envelope(c.states[:0], cellStatesAt, w.Frame())
	head := len(out)
	flush := func() {
		if len(out) > head {
			if c.n.c.Publish(subj, out) == nil { // it copies out
				c.sent.Add(int64(len(out)))
			}
			out = out[:head]
		}
	}
	for _, id := range handed {
		st := c.m.Handover(w, id)
		if len(st) > MaxState {
			c.n.opts.Logger.Warn("cluster: a crossing entity's state is over MaxState; dropped", "entity", id, "bytes", len(st))
			continue
		}
		if len(out)+len(st)+20 > maxStatesMsg {
			flush()
		}
		out = appendState(out, id, st)
	}
	flush()
	c.states = out
}

// appendState appends one entity's state: its ID and the length of the
// state as uvarints, then the state.
func appendState(dst []byte, id interest.ID, st []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(id))
	dst = binary.AppendUvarint(dst, uint64(len(st)))
	return append(dst, st...)
}

// readStates splits a states message, or fails whole if any of it is
// malformed.
func readStates(b []byte, each func(id interest.ID, st []byte)) error {
	type rec struct {
		id interest.ID
		st []byte
	}
	var recs []rec
	for len(b) > 0 {
		id, n := binary.Uvarint(b)
		if n <= 0 || id > 1<<32-1 {
			return fmt.Errorf("%w: states: entity id", ErrInvalid)
		}
		b = b[n:]
		l, n := binary.Uvarint(b)
		if n <= 0 || l > MaxState || l > uint64(len(b)-n) {
			return fmt.Errorf("%w: states: entity %d: length", ErrInvalid, id)
		}
		b = b[n:]
		recs = append(recs, rec{interest.ID(id), b[:l:l]})
		b = b[l:]
	}
	for _, r := range recs {
		each(r.id, r.st)
	}
	return nil
}

// takeStates hands the game the states of the entities neighbour from
// handed to this cell; on the worker, after the border message that
// handed them.
func (c *cellRunner) takeStates(w *interest.World, from int, data []byte) {
	if c.m.Adopt == nil {
		return
	}
	err := readStates(data, func(id interest.ID, st []byte) {
		if _, ok := w.Logic(id); ok && !w.Ghost(id) {
			c.m.Adopt(w, id, st)
		}
	})
	if err != nil {
		c.n.opts.Logger.Debug("cluster: states message dropped", "cell", c.i, "from", from, "err", err)
	}
}

// afterTick sends the border messages of the frame, hands the clients of
// the players who crossed to their new cell, drops the ghosts of a
// neighbour that died, and the players whose clients never came.
func (c *cellRunner) afterTick(w *interest.World, now time.Time) {
	ew := c.ew.Load()
	if ew == nil {
		return
	}
	c.frame++
	checkNeighbours := c.frame%w.Config().Hz == 1 // from the first frame on, once a second
	if checkNeighbours {
		// A neighbour in no heartbeat twice in a row is down (once may be
		// the instant of its move to another node).
		for j, b := range c.borders {
			_, up := c.n.dir.LocateWorld(CellName(c.m.Map, j))
			switch {
			case !up && c.down[j] == downAfter-1:
				b.Drop() // its process is gone, and its entities with it
			case up && c.down[j] >= downAfter:
				b.Reclaim() // back: it takes what walked into its cell meanwhile
			}
			if up {
				c.down[j] = 0
			} else {
				c.down[j] = min(c.down[j]+1, downAfter)
			}
		}
	}
	if !c.m.NoStandby && !c.noStandby {
		c.standbys(w, ew, now)
	}
	for j, b := range c.borders {
		if c.down[j] >= downAfter {
			// No one to mirror to or hand over to: the entities that walk
			// into its rectangle stay here until it is back.
			continue
		}
		msg, handed := b.Write(c.buf[:0])
		c.buf = msg[:0]
		c.out = c.envelope(c.out[:0], cellBorderAt, w.Frame())
		c.out = append(c.out, msg...)
		subj := c.n.opts.subjCell(c.m.Map, j, c.i)
		if err := c.n.c.Publish(subj, c.out); err == nil {
			c.sent.Add(int64(len(msg)))
		}
		if c.m.Handover != nil && len(handed) > 0 {
			c.sendStates(w, subj, handed)
		}
		for _, id := range handed {
			player, ok := ew.Player(id)
			if !ok {
				continue // an NPC: the neighbour owns it now
			}
			st := c.standby[id]
			switch {
			case st == nil:
				c.transfer(ew, player, id, j)
			case st.to == j && !st.stopped:
				st.handedAt = now // the neighbour admits its waiting client
			default: // waiting at another neighbour: go to this one instead
				st.stop(func() { c.transfer(ew, player, id, j) })
			}
		}
	}
	if checkNeighbours {
		for id, h := range c.held {
			if now.After(h.expires) {
				delete(c.held, id)
			}
		}
	}
	for id, deadline := range c.waiting {
		if now.After(deadline) {
			delete(c.waiting, id)
			if !w.Ghost(id) {
				w.Despawn(id)
			}
		}
	}
}

// BorderBytes returns the bytes of border messages this node's cells have
// sent.
func (n *Node) BorderBytes() int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	var s int64
	for _, c := range n.ws.cells {
		s += c.sent.Load()
	}
	return s
}

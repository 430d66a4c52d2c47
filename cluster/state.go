//go:build !js

package cluster

import (
	"slices"
	"strings"
	"time"
)

// NodeStatus is what the directory knows of a node.
type NodeStatus struct {
	ID       string   `json:"id"`
	URL      string   `json:"url"`
	Capacity int      `json:"capacity"`
	Rooms    int      `json:"rooms"`             // as its last heartbeat said
	Players  int      `json:"players,omitempty"` // its room for world players
	Region   string   `json:"region,omitempty"`
	Builds   []string `json:"builds,omitempty"` // empty: any
	Alive    bool     `json:"alive"`            // heartbeats arrive; false once declared lost
	// Draining: the node is being drained (Node.Drain): it takes no new
	// rooms and stands by for none.
	Draining bool      `json:"draining,omitempty"`
	LastSeen time.Time `json:"last_seen"`
	// CellMaps are the maps the node may hold any cell of
	// (Node.HostCells): a cell of one moves there.
	CellMaps []string `json:"cell_maps,omitempty"`
}

// Loss reports a node declared dead and the rooms it held: they are gone,
// and their players must be given new rooms.
type Loss struct {
	Node  string   `json:"node"`
	URL   string   `json:"url"`
	Rooms []string `json:"rooms"` // sorted
	// Worlds are the worlds it held (as of its last heartbeat), sorted:
	// their players are disconnected.
	Worlds []string  `json:"worlds,omitempty"`
	At     time.Time `json:"at"`
	// Restarted: the node came back as a new process (a new instance)
	// before it was declared dead; its old rooms are lost all the same.
	Restarted bool `json:"restarted,omitempty"`
}

// LostRoom is one room or world of a Loss.
type LostRoom struct {
	Room  string `json:"room"`
	World bool   `json:"world,omitempty"` // Room names a world

	Node string    `json:"node"`
	URL  string    `json:"url"`
	At   time.Time `json:"at"`
}

// nodeState is the directory's record of one node.
type nodeState struct {
	hb       heartbeat
	rooms    map[string]struct{}
	gen      uint64 // the generation rooms stands for
	synced   bool   // rooms is the node's list at gen
	fetching bool   // a list request is on its way
	last     time.Time
	alive    bool
}

// state is the directory's logic, driven by explicit calls with the time,
// so that tests need no network and no clock.
type state struct {
	misses   int // heartbeat intervals without one before a node is lost
	maxNodes int
	maxLost  int
	nodes    map[string]*nodeState
	lost     []LostRoom // oldest first, at most maxLost
}

func newState(misses, maxNodes, maxLost int) *state {
	return &state{misses: misses, maxNodes: maxNodes, maxLost: maxLost, nodes: map[string]*nodeState{}}
}

// heartbeat records h at now. It returns whether the node's room list
// should be fetched, and a loss when h shows the node restarted with
// rooms the directory knew of.
func (s *state) heartbeat(h *heartbeat, now time.Time) (fetch bool, loss *Loss) {
	n := s.nodes[h.ID]
	if n == nil {
		if len(s.nodes) >= s.maxNodes && !s.evictDead() {
			return false, nil // bounded: a flood of made-up node ids is dropped
		}
		n = &nodeState{hb: *h, rooms: map[string]struct{}{}, synced: h.Gen == 0}
		s.nodes[h.ID] = n
	} else if n.hb.Instance != h.Instance {
		if n.alive && (len(n.rooms) > 0 || len(n.hb.Worlds) > 0) {
			loss = s.lose(n, now)
			loss.Restarted = true
		}
		n.rooms, n.gen, n.synced, n.fetching = map[string]struct{}{}, 0, h.Gen == 0, false
	}
	// A node back from the dead (a partition healed) is asked again: lose
	// cleared synced.
	n.hb, n.last, n.alive = *h, now, true
	return s.wantList(n), loss
}

// wantList reports whether n's list should be fetched now, and marks the
// fetch as started.
func (s *state) wantList(n *nodeState) bool {
	if n.fetching || n.synced && n.gen >= n.hb.Gen {
		return false
	}
	n.fetching = true
	return true
}

// event applies a room opened or closed. It returns whether the node's
// list should be fetched (the event does not follow what is known).
func (s *state) event(e *roomEvent) (fetch bool) {
	n := s.nodes[e.ID]
	if n == nil || !n.alive || n.hb.Instance != e.Instance {
		return false // the next heartbeat brings the node in
	}
	switch {
	case e.Gen <= n.gen && n.synced: // old news
		return false
	case n.synced && e.Gen == n.gen+1:
		if e.Op == "open" {
			if len(n.rooms) >= n.hb.Capacity {
				n.synced = false // more rooms than it may hold: ask
				return s.wantList(n)
			}
			n.rooms[e.Room] = struct{}{}
		} else {
			delete(n.rooms, e.Room)
		}
		n.gen = e.Gen
		if n.gen > n.hb.Gen {
			n.hb.Gen, n.hb.Rooms = n.gen, len(n.rooms)
		}
		return false
	}
	n.synced = false // a gap: fetch the whole list
	if e.Gen > n.hb.Gen {
		n.hb.Gen = e.Gen
	}
	return s.wantList(n)
}

// listed applies a node's room list (l nil: the request failed).
func (s *state) listed(id string, l *roomList) {
	n := s.nodes[id]
	if n == nil {
		return
	}
	n.fetching = false
	if l == nil || !n.alive || l.Instance != n.hb.Instance || l.ID != id || len(l.Rooms) > n.hb.Capacity {
		return
	}
	if n.synced && l.Gen < n.gen {
		return // older than what the events built
	}
	n.rooms = make(map[string]struct{}, len(l.Rooms))
	for _, r := range l.Rooms {
		n.rooms[r] = struct{}{}
	}
	n.gen, n.synced = l.Gen, true
}

// leave forgets a node that stopped on purpose: its rooms are closed, not
// lost.
func (s *state) leave(l *leave) bool {
	n := s.nodes[l.ID]
	if n == nil || n.hb.Instance != l.Instance {
		return false
	}
	delete(s.nodes, l.ID)
	return true
}

// expire declares lost every live node whose heartbeats stopped for
// misses of its intervals, and returns the losses.
func (s *state) expire(now time.Time) []Loss {
	var due []*nodeState
	for _, n := range s.nodes {
		limit := time.Duration(s.misses) * time.Duration(n.hb.IntervalMS) * time.Millisecond
		if n.alive && now.Sub(n.last) > limit {
			due = append(due, n)
		}
	}
	slices.SortFunc(due, func(a, b *nodeState) int { return strings.Compare(a.hb.ID, b.hb.ID) })
	var out []Loss
	for _, n := range due {
		out = append(out, *s.lose(n, now))
	}
	return out
}

// lose declares n's rooms lost at now.
func (s *state) lose(n *nodeState, now time.Time) *Loss {
	l := &Loss{Node: n.hb.ID, URL: n.hb.URL, At: now, Rooms: make([]string, 0, len(n.rooms))}
	for r := range n.rooms {
		l.Rooms = append(l.Rooms, r)
	}
	slices.Sort(l.Rooms)
	for _, r := range l.Rooms {
		s.lost = append(s.lost, LostRoom{Room: r, Node: l.Node, URL: l.URL, At: now})
	}
	for _, w := range n.hb.Worlds {
		l.Worlds = append(l.Worlds, w.Name)
	}
	slices.Sort(l.Worlds)
	for _, w := range l.Worlds {
		s.lost = append(s.lost, LostRoom{Room: w, World: true, Node: l.Node, URL: l.URL, At: now})
	}
	if over := len(s.lost) - s.maxLost; over > 0 {
		s.lost = append(s.lost[:0], s.lost[over:]...)
	}
	n.alive, n.synced, n.fetching = false, false, false
	n.rooms, n.gen = map[string]struct{}{}, 0
	n.hb.Worlds = nil
	return l
}

// evictDead forgets the dead node seen longest ago, to make room.
func (s *state) evictDead() bool {
	var oldest *nodeState
	for _, n := range s.nodes {
		if !n.alive && (oldest == nil || n.last.Before(oldest.last)) {
			oldest = n
		}
	}
	if oldest == nil {
		return false
	}
	delete(s.nodes, oldest.hb.ID)
	return true
}

func (s *state) status(n *nodeState) NodeStatus {
	return NodeStatus{ID: n.hb.ID, URL: n.hb.URL, Capacity: n.hb.Capacity, Rooms: n.hb.Rooms, Players: n.hb.Players,
		Region: n.hb.Region, Builds: n.hb.Builds, Alive: n.alive, Draining: n.hb.Draining, LastSeen: n.last,
		CellMaps: n.hb.CellMaps}
}

// locate returns the live node that holds room.
func (s *state) locate(room string) (NodeStatus, bool) {
	for _, n := range s.nodes {
		if _, ok := n.rooms[room]; ok && n.alive {
			return s.status(n), true
		}
	}
	return NodeStatus{}, false
}

// worlds returns the worlds of live nodes that keep holds, sorted by name.
func (s *state) worlds(keep func(WorldStatus) bool) []WorldStatus {
	var out []WorldStatus
	for _, n := range s.nodes {
		if !n.alive {
			continue
		}
		for _, l := range n.hb.Worlds {
			w := WorldStatus{World: l.Name, Node: n.hb.ID, URL: n.hb.URL, Players: l.Players, Booked: l.Booked, Cap: l.Cap}
			w.Map, w.Line, _ = SplitLine(l.Name)
			if keep(w) {
				out = append(out, w)
			}
		}
	}
	slices.SortFunc(out, func(a, b WorldStatus) int { return strings.Compare(a.World, b.World) })
	return out
}

//go:build !js

package cluster

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/errstack"
)

// A CellMaker makes the game's configuration of cell i of a map, as the
// game gives it to ServeCell: the cell's NPCs, joins and hooks.
type CellMaker func(i int) (engine.WorldConfig, error)

// maxCellMaps bounds the maps one node hosts cells of.
const maxCellMaps = 16

// HostCells makes this node a host of map m's cells: a cell of m served
// on another host moves here when its node drains, and comes back here
// from its checkpoints when its node dies, made with make (the same
// configuration the game gives ServeCell for that cell). Call it on
// every node that may hold cells of m, before ServeCell, after
// ServeWorlds and ServeStandbys; the cells of m this node serves get an
// heir among the other hosts, and checkpoints. A cell's move keeps its
// entities, their IDs and the game's state (WorldConfig.Checkpoint and
// Restore), and its players' connections, as a world's move does; its
// neighbours re-point their borders to its new node by themselves.
func (n *Node) HostCells(m CellMap, make CellMaker) error {
	if err := m.validate(); err != nil {
		return errstack.With(err)
	}
	if make == nil {
		return errstack.Wrapf(ErrInvalid, "HostCells of map %s: no cell maker", m.Map)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.left:
		return errstack.With(ErrClosed)
	case n.ws.srv == nil:
		return errstack.Wrapf(ErrInvalid, "HostCells before ServeWorlds")
	case len(n.ws.cellHosts) >= maxCellMaps:
		return errstack.Wrapf(ErrInvalid, "HostCells: at most %d maps", maxCellMaps)
	}
	if n.ws.cellHosts == nil {
		n.ws.cellHosts = map[string]cellHost{}
	}
	n.ws.cellHosts[m.Map] = cellHost{m: m, make: make}
	n.heartbeatLocked()
	return nil
}

// cellHost is a map whose cells this node may hold.
type cellHost struct {
	m    CellMap
	make CellMaker
}

// hostsMap reports whether this node hosts cells of map m.
func (n *Node) hostsMap(m string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, ok := n.ws.cellHosts[m]
	return ok
}

// cellMapsLocked returns the maps this node hosts cells of, for its
// heartbeat; n.mu is held.
func (n *Node) cellMapsLocked() []string {
	var out []string
	for m := range n.ws.cellHosts {
		out = append(out, m)
	}
	return out
}

// splitCell reads a cell's world name (CellName).
func splitCell(name string) (m string, i int, ok bool) {
	m, rest, ok := strings.Cut(name, "#")
	if !ok {
		return "", 0, false
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 || strconv.Itoa(i) != rest {
		return "", 0, false
	}
	return m, i, true
}

// hostsCells reports whether node st hosts cells of map m.
func hostsCells(st NodeStatus, m string) bool {
	for _, x := range st.CellMaps {
		if x == m {
			return true
		}
	}
	return false
}

// makeCell makes, for a move or a restore, cell req.World of a map this
// node hosts, with make (PrepareWorld or RestoreWorld) given the cell's
// configuration; n.hostMu is held.
func (n *Node) makeCell(req WorldRequest, held bool, make func(engine.WorldConfig) (*engine.World, error)) (*engine.World, *cellRunner, error) {
	mapName, i, _ := splitCell(req.World)
	n.mu.Lock()
	h, ok := n.ws.cellHosts[mapName]
	n.mu.Unlock()
	if !ok || i >= h.m.Cells() {
		return nil, nil, fmt.Errorf("%w: cell %q: this node hosts no cells of its map", ErrInvalid, req.World)
	}
	game, err := h.make(i)
	if err != nil {
		return nil, nil, err
	}
	game.MaxPlayers = req.Cap
	c, cfg := n.newCell(h.m, i, game, !held)
	w, err := make(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := c.attach(w); err != nil {
		w.Close()
		return nil, nil, err
	}
	return w, c, nil
}

// newEpoch draws a cell's epoch.
func newEpoch() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.LittleEndian.Uint64(b[:]) | 1 // never 0
}

// cellStateVersion is the first byte of a cell's part of its checkpoint.
const cellStateVersion = 1

// appendState prefixes the game's state st with the cell's: its epoch
// and, for each neighbour it took a framed message from, that
// neighbour's epoch and the frame of its last border message taken. On
// the worker.
func (c *cellRunner) appendState(st []byte) []byte {
	b := []byte{cellStateVersion}
	b = binary.LittleEndian.AppendUint64(b, c.epoch)
	b = binary.AppendUvarint(b, uint64(len(c.peers)))
	for j, p := range c.peers {
		b = binary.AppendUvarint(b, uint64(j))
		b = binary.LittleEndian.AppendUint64(b, p.epoch)
		b = binary.AppendUvarint(b, uint64(p.last+1))
	}
	return append(b, st...)
}

// loadState takes the cell's part of a checkpoint (appendState) and
// returns the game's; on the worker, as the world loads it. A cell that
// moved here goes on under its epoch and takes its neighbours' messages
// after those its old node took; one brought back from a crash starts a
// new epoch, so that its neighbours mirror it afresh.
func (c *cellRunner) loadState(b []byte) ([]byte, error) {
	if len(b) < 9 || b[0] != cellStateVersion {
		return nil, fmt.Errorf("%w: cell %d: its checkpoint state", ErrInvalid, c.i)
	}
	epoch, b := binary.LittleEndian.Uint64(b[1:]), b[9:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(c.m.Cells()) {
		return nil, fmt.Errorf("%w: cell %d: its checkpoint's neighbours", ErrInvalid, c.i)
	}
	b = b[k:]
	peers := map[int]*cellPeer{}
	for range n {
		j, k := binary.Uvarint(b)
		if k <= 0 || j >= uint64(c.m.Cells()) || len(b) < k+8 {
			return nil, fmt.Errorf("%w: cell %d: its checkpoint's neighbour", ErrInvalid, c.i)
		}
		pe := binary.LittleEndian.Uint64(b[k:])
		b = b[k+8:]
		last, k := binary.Uvarint(b)
		if k <= 0 || last > 1<<40 {
			return nil, fmt.Errorf("%w: cell %d: its checkpoint's neighbour frame", ErrInvalid, c.i)
		}
		b = b[k:]
		peers[int(j)] = &cellPeer{epoch: pe, last: int(last) - 1}
	}
	if !c.restored {
		c.epoch, c.peers = epoch, peers
	}
	return b, nil
}

// hold keeps the neighbours' messages from the cell's world from now on
// (it moves away: its checkpoint has what it took); thaw takes them
// after all (the move was called off).
func (c *cellRunner) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

func (c *cellRunner) thaw() {
	ew := c.ew.Load()
	if ew == nil {
		return
	}
	ew.Do(func(w *interest.World) {
		c.noStandby = false
		c.unhold(w)
	})
}

// unhold takes the messages that waited, in order, and the next ones as
// they come; on the worker.
func (c *cellRunner) unhold(w *interest.World) {
	c.mu.Lock()
	q := c.queue
	c.queue, c.holding = nil, false
	c.mu.Unlock()
	if ew := c.ew.Load(); ew != nil {
		for _, m := range q {
			c.take(w, ew, m)
		}
	}
}

// cellOf returns the runner of cell world name on this node, or nil.
func (n *Node) cellOf(name string) *cellRunner {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, c := range n.ws.cells {
		if CellName(c.m.Map, c.i) == name {
			return c
		}
	}
	return nil
}

// dropStandbys gives up the places the cell's players hold next door
// and waits until the worker has: a move parks every player at the
// cell's heir instead.
func (c *cellRunner) dropStandbys() {
	ew := c.ew.Load()
	if ew == nil {
		return
	}
	done := make(chan struct{})
	ew.Do(func(*interest.World) {
		defer close(done)
		for _, st := range c.standby {
			if !st.stopped && st.handedAt.IsZero() {
				st.stop(nil)
			}
		}
		c.noStandby = true
	})
	<-done
}

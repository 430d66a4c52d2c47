//go:build !js

package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// cellsConfig is a map of the config file cut into cells (cluster only):
// every node that may hold part of it has the same entry, but for Serve,
// the cells it simulates from the start (none: it only takes cells that
// move here when their node drains or dies). Cell i is the world "<map>#<i>"; a game books a
// player into one as into any world (cluster.JoinWorld), and the player
// walks from cell to cell with no loading screen.
type cellsConfig struct {
	Map        string `json:"map"`
	Cols       int    `json:"cols"`
	Rows       int    `json:"rows"`
	RegionSize int    `json:"region_size"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Hz         int    `json:"hz"`
	// Start is frame 0 of every cell (RFC 3339), the same on every node;
	// default defaultCellsStart.
	Start string `json:"start,omitempty"`
	// Cap bounds each cell's players (default 1000).
	Cap   int   `json:"cap,omitempty"`
	Serve []int `json:"serve"` // the cells this node simulates
}

// defaultCellsStart is the cells' frame 0 when the config gives none: a
// fixed instant, so that nodes agree without saying so.
const defaultCellsStart = "2026-01-01T00:00:00Z"

// cellMap checks the entry and returns its map.
func (c *cellsConfig) cellMap(inCluster bool) (cluster.CellMap, error) {
	m := cluster.CellMap{Map: c.Map, Cols: c.Cols, Rows: c.Rows,
		Interest: interest.Config{RegionSize: c.RegionSize, Width: c.Width, Height: c.Height, Hz: c.Hz}}
	if !inCluster {
		return m, fmt.Errorf("cells %q: cells need a cluster (their borders go over NATS)", c.Map)
	}
	start := c.Start
	if start == "" {
		start = defaultCellsStart
	}
	t, err := time.Parse(time.RFC3339, start)
	if err != nil {
		return m, fmt.Errorf("cells %q: start: %v", c.Map, err)
	}
	m.Start = t
	if err := m.Interest.WithDefaults().Validate(); err != nil {
		return m, fmt.Errorf("cells %q: %v", c.Map, err)
	}
	if c.Cols < 1 || c.Rows < 1 || c.Cols > m.Interest.WithDefaults().Width || c.Rows > m.Interest.WithDefaults().Height {
		return m, fmt.Errorf("cells %q: %d x %d cells on a map of %d x %d regions", c.Map, c.Cols, c.Rows, m.Interest.WithDefaults().Width, m.Interest.WithDefaults().Height)
	}
	if c.Cap < 0 {
		return m, fmt.Errorf("cells %q: cap %d", c.Map, c.Cap)
	}
	seen := map[int]bool{}
	for _, i := range c.Serve {
		if i < 0 || i >= c.Cols*c.Rows || seen[i] {
			return m, fmt.Errorf("cells %q: serve %v: each a cell from 0 to %d, once", c.Map, c.Serve, c.Cols*c.Rows-1)
		}
		seen[i] = true
	}
	return m, nil
}

// serveCells makes node a host of every map the config's entries name
// (a cell of it may move here, from a node drained or dead) and returns
// what starts the cells each entry serves: called once the node has
// heard the others' heartbeats, it leaves out a cell that lives on
// another node already (it moved there, or came back there, while this
// process was away).
func serveCells(node *cluster.Node, cells []cellsConfig, log *slog.Logger) (func(), error) {
	type served struct {
		m   cluster.CellMap
		i   int
		cfg engine.WorldConfig
	}
	var todo []served
	for k := range cells {
		c := &cells[k]
		m, err := c.cellMap(true)
		if err != nil {
			return nil, err
		}
		cp := c.Cap
		if cp == 0 {
			cp = defaultLineCap
		}
		cell := func(i int) (engine.WorldConfig, error) {
			rect, size := m.Rect(i), m.Interest.WithDefaults().RegionSize
			centre := interest.Vec{X: int32((rect.X0 + rect.X1) * size / 2), Y: int32((rect.Y0 + rect.Y1) * size / 2)}
			join := func(w *interest.World, player string) (interest.ID, error) {
				return spawn(w, player, &portalState{X: centre.X, Y: centre.Y})
			}
			return engine.WorldConfig{Join: join, MaxPlayers: cp}, nil
		}
		if err := node.HostCells(m, cell); err != nil {
			return nil, fmt.Errorf("cells %q: %w", c.Map, err)
		}
		for _, i := range c.Serve {
			cfg, _ := cell(i)
			todo = append(todo, served{m, i, cfg})
		}
	}
	return func() {
		for _, s := range todo {
			name := cluster.CellName(s.m.Map, s.i)
			if w, ok := node.Directory().LocateWorld(name); ok {
				log.Info("cluster: cell lives on another node; this node hosts it", "world", name, "node", w.Node)
				continue
			}
			if _, err := node.ServeCell(s.m, s.i, s.cfg); err != nil {
				log.Error("cluster: cell", "world", name, "err", err)
				continue
			}
			log.Info("cluster: cell served", "world", name)
		}
	}, nil
}

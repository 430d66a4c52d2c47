//go:build !js

package cluster

import (
	"fmt"
	"strconv"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// CellMap is one map cut into cells: a grid of Cols x Rows rectangles of
// its regions, each simulated by its own world, on any node (ServeCell).
// Every cell's world holds the whole map's grid and owns the entities in
// its rectangle; the entities within one region of a neighbour's cell are
// mirrored there as read-only ghosts (interest.Border), so that a player
// near a border sees across it as if one world held the map; an entity
// that crosses is handed to the neighbour with its state, and a player's
// client follows it there (engine.World.Transfer).
type CellMap struct {
	// Map names the map, 1..MaxIDLen bytes of letters, digits, '-' and
	// '_' (it is a NATS subject token). Cell i is the world CellName(Map, i).
	Map string
	// Cols and Rows cut the map's regions into cells, numbered row by row
	// from the top left, as evenly as the grid allows; every cell holds at
	// least one region.
	Cols, Rows int
	// Interest is the whole map's configuration; the cells share it but
	// for the entity IDs (each gives out its own share).
	Interest interest.Config
	// Start is the instant of frame 0, shared by every cell so that their
	// frame numbers agree (the cells of one colour of a checkerboard tick
	// half a frame after it: what crosses a border is taken sooner).
	Start time.Time
	// Handover, when set, gives the game's own state of an entity this
	// cell hands to a neighbour (a player's inventory, an NPC's brain:
	// what interest.Logic and Display do not hold), at most MaxState bytes
	// the game encodes. It runs on the old cell's worker in the frame the
	// entity crosses; the bytes go over NATS with the border message, and
	// the neighbour's Adopt receives them.
	Handover func(w *interest.World, id interest.ID) []byte
	// Adopt, when set, takes the game's state of an entity a neighbour
	// handed to this cell, on its worker, just after the entity became
	// this cell's (before its client, for a player, arrives).
	Adopt func(w *interest.World, id interest.ID, state []byte)
	// NoStandby makes a player's client connect to the next cell when its
	// player crosses, rather than ahead of it: no second connection while
	// a player stands near a border, at the cost of a handshake (a few
	// round trips) at the crossing. By default a cell holds a standby
	// place next door for every player within one region of a border
	// (engine.World.Standby), and the crossing costs no handshake.
	NoStandby bool
}

// CellName returns the name of the world that is cell i of map m.
func CellName(m string, i int) string { return m + "#" + strconv.Itoa(i) }

// Cells returns the number of cells.
func (m CellMap) Cells() int { return m.Cols * m.Rows }

// Rect returns cell i's rectangle of regions.
func (m CellMap) Rect(i int) interest.Rect {
	c := m.Interest.WithDefaults()
	x, y := i%m.Cols, i/m.Cols
	return interest.Rect{X0: x * c.Width / m.Cols, Y0: y * c.Height / m.Rows, X1: (x + 1) * c.Width / m.Cols, Y1: (y + 1) * c.Height / m.Rows}
}

// phase is how long after the map's frame instants cell i ticks: half a
// frame for the cells of one colour of a checkerboard. A neighbour across
// a side then runs half a frame after a cell, or before its next frame,
// so that what one cell sends over a border (ghosts, a player handed
// over) is taken within half a frame, where cells ticking together would
// wait a whole one. Frame numbers stay the same on every cell.
func (m CellMap) phase(i int) time.Duration {
	if (i%m.Cols+i/m.Cols)%2 == 0 {
		return 0
	}
	return m.Interest.WithDefaults().Period() / 2
}

// CellAt returns the cell that holds position p.
func (m CellMap) CellAt(p interest.Vec) int {
	c := m.Interest.WithDefaults()
	g := interest.Region{X: int(p.X) / c.RegionSize, Y: int(p.Y) / c.RegionSize}
	for i := range m.Cells() {
		if m.Rect(i).Contains(g) {
			return i
		}
	}
	return -1
}

func (m CellMap) validate() error {
	if err := checkID(m.Map); err != nil {
		return fmt.Errorf("%w: cell map name: %v", ErrInvalid, err)
	}
	c := m.Interest.WithDefaults()
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%w: cell map %s: %v", ErrInvalid, m.Map, err)
	}
	if m.Cols < 1 || m.Rows < 1 || m.Cols > c.Width || m.Rows > c.Height || m.Cells() >= c.MaxEntities {
		return fmt.Errorf("%w: cell map %s: %dx%d cells of a %dx%d grid", ErrInvalid, m.Map, m.Cols, m.Rows, c.Width, c.Height)
	}
	if m.Start.IsZero() {
		return fmt.Errorf("%w: cell map %s: no start instant", ErrInvalid, m.Map)
	}
	return nil
}

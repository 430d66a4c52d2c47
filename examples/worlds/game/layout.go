package game

import (
	"hash/fnv"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// The maps.
const (
	// Field is the seamless map: 16 x 8 regions cut into a west and an
	// east cell (cluster.CellName(Field, 0) and (Field, 1)), each
	// simulated by its own process.
	Field = "field"
	// Town is the map of lines: copies of one small map, TownCap players
	// each, placed on whichever process has room (cluster.Line(Town, n)).
	Town = "town"
	// TownCap is a town line's cap, small so that a few players fill one
	// and the next line opens.
	TownCap = 4
	// TownLines is the number of town lines opened at start.
	TownLines = 2
)

// FieldCells is the field's cut: two cells side by side.
const FieldCols, FieldRows = 2, 1

// FieldInterest is the field's world configuration: 16 x 8 regions of
// 16 m, 16 frames a second.
func FieldInterest() interest.Config {
	return interest.Config{RegionSize: 1024, Width: 16, Height: 8, Hz: 16}
}

// TownInterest is a town line's world configuration: 8 x 8 regions.
func TownInterest() interest.Config {
	return interest.Config{RegionSize: 1024, Width: 8, Height: 8, Hz: 16}
}

// Portal is a rectangle of a map that sends the players who walk into it
// to another map, arriving at At.
type Portal struct {
	Rect [4]int32 // x, y, width, height
	To   string   // Field or Town
	At   interest.Vec
}

// Contains says whether p is in the portal.
func (p Portal) Contains(v interest.Vec) bool {
	return v.X >= p.Rect[0] && v.X < p.Rect[0]+p.Rect[2] && v.Y >= p.Rect[1] && v.Y < p.Rect[1]+p.Rect[3]
}

// Centre is the middle of the portal.
func (p Portal) Centre() interest.Vec {
	return interest.Vec{X: p.Rect[0] + p.Rect[2]/2, Y: p.Rect[1] + p.Rect[3]/2}
}

// FieldPortal, in the west cell, leads to a town line; TownPortal leads
// back to the field's west cell, east of its portal.
var (
	FieldPortal = Portal{Rect: [4]int32{1024, 3584, 1024, 1024}, To: Town, At: interest.Vec{X: 4096, Y: 4096}}
	TownPortal  = Portal{Rect: [4]int32{1024, 1024, 1024, 1024}, To: Field, At: interest.Vec{X: 3072, Y: 4096}}
)

// PortalOf returns the portal of map m.
func PortalOf(m string) Portal {
	if m == Town {
		return TownPortal
	}
	return FieldPortal
}

// FieldSpawn is where a new player enters the field: in the west cell,
// two regions from the border.
var FieldSpawn = interest.Vec{X: 6144, Y: 4096}

// DefaultStart is the instant of frame 0 the field's cells share when no
// one chose one: midnight UTC of today. Every process of a map must use
// the same instant (the launcher passes its own).
func DefaultStart(now time.Time) time.Time {
	return now.UTC().Truncate(24 * time.Hour)
}

// PlayerID is a player's record ID in the replica's collections.
func PlayerID(player string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(player))
	return h.Sum64()
}

// Guilds are the example's guilds, by record ID.
var Guilds = map[uint64]Guild{
	1: {Name: "Azure Cloud", Tag: "AZ"},
	2: {Name: "Crimson Blade", Tag: "CB"},
	3: {Name: "Jade Lotus", Tag: "JL"},
}

// Named is a player's display name: its guild's tag before its own.
func Named(player string, g Guild, ok bool) string {
	name := player
	if ok && g.Tag != "" {
		name = "[" + g.Tag + "] " + player
	}
	if len(name) > interest.MaxName {
		name = name[:interest.MaxName]
	}
	return name
}

//go:build !js

package cluster

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LineSep separates a map's name from its line's number in the name of
// the world that is the line: line 2 of map "field" is the world
// "field~2". A map's name cannot hold it.
const LineSep = "~"

// Line returns the name of line n (1, 2, ...) of map m.
func Line(m string, n int) string { return m + LineSep + strconv.Itoa(n) }

// SplitLine returns the map and line number of a world named as a line;
// ok is false for a world that is not one.
func SplitLine(world string) (m string, n int, ok bool) {
	i := strings.LastIndex(world, LineSep)
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(world[i+len(LineSep):])
	if err != nil || n < 1 || strconv.Itoa(n) != world[i+len(LineSep):] {
		return "", 0, false
	}
	return world[:i], n, true
}

// WorldRequest asks the cluster for a world (CreateWorld), or describes
// the lines a map opens (JoinRequest).
type WorldRequest struct {
	// World is the world's name, 1..MaxRoomLen bytes, unique in the
	// cluster among rooms and worlds.
	World string `json:"world"`
	// Cap is the most players the world holds (engine.WorldConfig
	// MaxPlayers), places booked for players on their way included;
	// 1..MaxWorldPlayers. It counts against the node's Players.
	Cap int `json:"cap"`
	// Config is the world's configuration, for the node's world maker to
	// read (tongbu serve reads a config file's world entry).
	Config json.RawMessage `json:"config,omitempty"`
}

func (r *WorldRequest) validate() error {
	if err := checkRoom(r.World); err != nil {
		return err
	}
	if r.Cap < 1 || r.Cap > MaxWorldPlayers {
		return fmt.Errorf("%w: world %q: cap %d, want 1..%d", ErrInvalid, r.World, r.Cap, MaxWorldPlayers)
	}
	if len(r.Config) > maxConfig {
		return fmt.Errorf("%w: world config of %d bytes, at most %d", ErrInvalid, len(r.Config), maxConfig)
	}
	return nil
}

// WorldStatus is what the directory knows of a world: where it is and
// how full, as of its node's last heartbeat.
type WorldStatus struct {
	World   string `json:"world"`
	Map     string `json:"map,omitempty"`  // for a line: its map
	Line    int    `json:"line,omitempty"` // for a line: its number
	Node    string `json:"node"`
	URL     string `json:"url"`
	Players int    `json:"players"`
	Booked  int    `json:"booked,omitempty"` // places held for players on their way
	Cap     int    `json:"cap"`
}

// Free is how many more players the world takes, as far as the directory
// knows.
func (w WorldStatus) Free() int { return max(0, w.Cap-w.Players-w.Booked) }

// LinePolicy orders the lines of a map for a joining player: JoinWorld
// books a place on the first that has room, and opens a new line when
// none has. It gets the map's lines on live nodes, sorted by number, and
// may drop lines it does not want used.
type LinePolicy func(player string, lines []WorldStatus) []WorldStatus

// LeastFull is the default LinePolicy: the lines with room, the least
// full first (the lowest number among equals), so that a map's players
// spread evenly over its lines.
func LeastFull(_ string, lines []WorldStatus) []WorldStatus {
	out := slices.DeleteFunc(slices.Clone(lines), func(w WorldStatus) bool { return w.Free() == 0 })
	slices.SortStableFunc(out, func(a, b WorldStatus) int { return (a.Players + a.Booked) - (b.Players + b.Booked) })
	return out
}

// FillFirst is a LinePolicy that fills the lowest-numbered line with room
// first, so that players meet each other on as few lines as possible.
func FillFirst(_ string, lines []WorldStatus) []WorldStatus {
	return slices.DeleteFunc(slices.Clone(lines), func(w WorldStatus) bool { return w.Free() == 0 })
}

// worldOp is a request on a node's world subject, <prefix>.world.<id>
// (SPEC.md §11.1): book a place, settle a booking, or (from a
// destination to the transfer's source) say that the player arrived.
type worldOp struct {
	Op       string `json:"op"` // "book", "settle" or "arrived"
	World    string `json:"world,omitempty"`
	Player   string `json:"player,omitempty"`
	State    []byte `json:"state,omitempty"`
	TTLMS    int64  `json:"ttl_ms,omitempty"`
	ID       uint64 `json:"id,omitempty,string"`       // settle: the booking
	From     string `json:"from,omitempty"`            // book: the source node, to be told of the arrival
	Transfer uint64 `json:"transfer,omitempty,string"` // book, arrived: names the transfer at its source
	Standby  bool   `json:"standby,omitempty"`         // book: a standby place (engine.World.Hold)
}

func (o *worldOp) validate() error {
	switch o.Op {
	case "arrived":
		return nil
	case "book":
		if len(o.Player) == 0 || len(o.Player) > MaxRoomLen {
			return fmt.Errorf("%w: player id must be 1 to %d bytes", ErrInvalid, MaxRoomLen)
		}
		if len(o.State) > MaxState {
			return fmt.Errorf("%w: state of %d bytes, at most %d", ErrInvalid, len(o.State), MaxState)
		}
		if o.From != "" {
			if err := checkID(o.From); err != nil {
				return err
			}
		}
		if o.TTLMS < 0 {
			return fmt.Errorf("%w: negative TTL", ErrInvalid)
		}
	case "settle":
	default:
		return fmt.Errorf("%w: world op %q", ErrInvalid, o.Op)
	}
	return checkRoom(o.World)
}

// worldReply answers a book or settle.
type worldReply struct {
	World     string `json:"world,omitempty"`
	URL       string `json:"url,omitempty"`
	Ticket    string `json:"ticket,omitempty"`
	ID        uint64 `json:"id,omitempty,string"`
	ExpiresMS int64  `json:"expires_ms,omitempty"` // Unix milliseconds
	Arrived   bool   `json:"arrived,omitempty"`
	Standby   bool   `json:"standby,omitempty"` // book: the place is held as a standby
	Error     string `json:"error,omitempty"`
	Full      bool   `json:"full,omitempty"`
	Missing   bool   `json:"missing,omitempty"` // no such world on the node
}

func (r *worldReply) validate() error {
	if len(r.Error) > 1024 {
		r.Error = r.Error[:1024]
	}
	if r.Error != "" || r.Full || r.Missing || r.Ticket == "" {
		return nil
	}
	if err := checkRoom(r.World); err != nil {
		return err
	}
	if len(r.Ticket) > 1024 {
		return fmt.Errorf("%w: ticket of %d bytes", ErrInvalid, len(r.Ticket))
	}
	return checkURL(r.URL)
}

func (r *worldReply) expires() time.Time { return time.UnixMilli(r.ExpiresMS) }

// The world subjects of SPEC.md §11.1, under the prefix.
func (o *Options) subjWorldCreate() string    { return o.Prefix + ".worlds.create" }
func (o *Options) subjWorld(id string) string { return o.Prefix + ".world." + id }

// worldQueue is the queue group of the nodes with room for worlds.
const worldQueue = "worlds"

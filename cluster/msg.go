//go:build !js

package cluster

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/tongbu/tongbu/engine"
)

// Bounds on what the cluster's messages may carry (SPEC.md §11).
const (
	// MaxIDLen bounds a node id: 1..64 bytes of [A-Za-z0-9_-], so that it
	// is one NATS subject token.
	MaxIDLen = 64
	// MaxRoomLen bounds a room name in bytes; the same as engine.MaxNameLen.
	MaxRoomLen = 64
	// MaxCapacity bounds a node's capacity, so that its room list fits in
	// one NATS message.
	MaxCapacity = 10000
	// MaxPlayers bounds the players a create request asks tickets for.
	MaxPlayers = 256
	// MaxWorldPlayers bounds a node's room for world players, and a
	// world's cap.
	MaxWorldPlayers = 1 << 20
	// MaxState bounds the game's state of a player carried by a transfer
	// or a join.
	MaxState = 64 << 10
	// MaxBuilds bounds the builds a node serves or a room request names.
	MaxBuilds = 16
	// MaxBuildLen bounds a build's name (and a region's) in bytes.
	MaxBuildLen = 64
	// maxURLLen bounds a node's public URL.
	maxURLLen = 512
	// maxConfig bounds a create request's room configuration.
	maxConfig = 4096
	// maxMsg bounds any message the cluster decodes.
	maxMsg = 1 << 20
	// Heartbeat intervals a node may announce.
	minInterval, maxInterval = 10 * time.Millisecond, time.Minute
)

// heartbeat is what a node publishes on <prefix>.hb every interval.
type heartbeat struct {
	ID         string `json:"id"`
	Instance   uint64 `json:"instance"` // random per process start
	URL        string `json:"url"`
	Capacity   int    `json:"capacity"`
	Rooms      int    `json:"rooms"`
	Gen        uint64 `json:"gen"` // bumped on every room opened or closed
	IntervalMS int64  `json:"interval_ms"`
	// Players is the node's room for world players (NodeInfo.Players),
	// and Worlds what its worlds hold, as of this heartbeat.
	Players int         `json:"players,omitempty"`
	Worlds  []worldLoad `json:"worlds,omitempty"`
	// Region and Builds are NodeInfo's.
	Region string   `json:"region,omitempty"`
	Builds []string `json:"builds,omitempty"`
	// Draining: the node is being drained (Node.Drain).
	Draining bool `json:"draining,omitempty"`
	// CellMaps are the maps the node may hold any cell of (HostCells).
	CellMaps []string `json:"cell_maps,omitempty"`
}

// worldLoad is one world of a heartbeat.
type worldLoad struct {
	Name    string `json:"name"`
	Players int    `json:"players"`
	Booked  int    `json:"booked,omitempty"`
	Cap     int    `json:"cap"`
}

// roomEvent is what a node publishes on <prefix>.room when it opens or
// closes a room.
type roomEvent struct {
	ID       string `json:"id"`
	Instance uint64 `json:"instance"`
	Gen      uint64 `json:"gen"` // the node's generation after the change
	Op       string `json:"op"`  // "open" or "close"
	Room     string `json:"room"`
}

// roomList is a node's answer on <prefix>.list.<id>: every room it holds.
type roomList struct {
	ID       string   `json:"id"`
	Instance uint64   `json:"instance"`
	Gen      uint64   `json:"gen"`
	Rooms    []string `json:"rooms"`
}

// leave is what a node publishes on <prefix>.leave when it stops on
// purpose: its rooms are closed, not lost.
type leave struct {
	ID       string `json:"id"`
	Instance uint64 `json:"instance"`
}

// RoomRequest asks the cluster for a room (CreateRoom).
type RoomRequest struct {
	// Room is the room's name, 1..MaxRoomLen bytes, unique in the cluster;
	// empty: CreateRoom picks a random one.
	Room string `json:"room"`
	// Players are the player ids to issue tickets for; the placement
	// carries them, signed by the node that holds the room.
	Players []string `json:"players,omitempty"`
	// Config is the room's configuration, for the node's Host to read
	// (tongbu serve reads the JSON of a config file's room entry).
	Config json.RawMessage `json:"config,omitempty"`
	// TicketTTL is how long the tickets are valid; 0: the Host's default.
	TicketTTL time.Duration `json:"ticket_ttl_ns,omitempty"`
	// Builds are the game builds the room's players run (at most
	// MaxBuilds): only a node that serves every one of them takes the
	// room. Empty: any node.
	Builds []string `json:"builds,omitempty"`
}

// Placement says where a room was created: the client dials URL with one
// of Tickets (engine.Dial(ctx, URL, ticket, ...)).
type Placement struct {
	Room    string            `json:"room"`
	Node    string            `json:"node"`
	URL     string            `json:"url"`
	Tickets map[string]string `json:"tickets,omitempty"`
}

// createReply is a node's answer to a RoomRequest: a Placement, or an
// error (Full: try another node).
type createReply struct {
	Placement
	Error string `json:"error,omitempty"`
	Full  bool   `json:"full,omitempty"`
}

// NodeInfo describes a node of the cluster: one tongbu serve process.
type NodeInfo struct {
	// ID names the node, 1..MaxIDLen bytes of letters, digits, '-' and
	// '_'; unique in the cluster.
	ID string
	// URL is the node's public base URL, the one clients dial
	// (engine.Dial), for example "https://eu-1.game.example".
	URL string
	// Capacity is the most rooms the node takes through the cluster,
	// 1..MaxCapacity.
	Capacity int
	// Players is the most players the worlds placed on the node may hold
	// together (the sum of their caps), 0..MaxWorldPlayers: 0 takes no
	// worlds. A node serves them once it calls ServeWorlds.
	Players int
	// Region names where the node runs ("eu-west", "ap-sh"), for placing
	// rooms near their players (package matchmaker); at most MaxBuildLen
	// bytes of printable ASCII, no space or comma. Empty: no region.
	Region string
	// Builds are the game builds (client versions) the node serves, at
	// most MaxBuilds: a room request naming another is not placed here.
	// Empty: any build. The node's engine.Config.Builds should say the
	// same, so that a client of another build is refused at signaling.
	Builds []string
}

// Serves reports whether a node that serves nodeBuilds (empty: any) takes
// a room whose players run builds.
func Serves(nodeBuilds, builds []string) bool {
	if len(nodeBuilds) == 0 {
		return true
	}
	for _, b := range builds {
		if !slices.Contains(nodeBuilds, b) {
			return false
		}
	}
	return true
}

// CheckBuild reports whether s may name a build or a region: 1 to
// MaxBuildLen bytes of printable ASCII, no space and no comma (as
// engine.Config.Builds).
func CheckBuild(s string) error {
	if !engine.ValidBuild(s) {
		return fmt.Errorf("%w: build or region %q: 1 to %d bytes of printable ASCII, no space or comma", ErrInvalid, s, MaxBuildLen)
	}
	return nil
}

// checkBuilds checks a list of builds.
func checkBuilds(bs []string) error {
	if len(bs) > MaxBuilds {
		return fmt.Errorf("%w: %d builds, at most %d", ErrInvalid, len(bs), MaxBuilds)
	}
	for _, b := range bs {
		if err := CheckBuild(b); err != nil {
			return err
		}
	}
	return nil
}

// checkRegion checks a region name; empty is none.
func checkRegion(r string) error {
	if r == "" {
		return nil
	}
	return CheckBuild(r)
}

func (i NodeInfo) validate() error {
	if err := checkID(i.ID); err != nil {
		return err
	}
	if err := checkURL(i.URL); err != nil {
		return err
	}
	if i.Capacity < 1 || i.Capacity > MaxCapacity {
		return fmt.Errorf("%w: capacity %d, want 1..%d", ErrInvalid, i.Capacity, MaxCapacity)
	}
	if i.Players < 0 || i.Players > MaxWorldPlayers {
		return fmt.Errorf("%w: players %d, want 0..%d", ErrInvalid, i.Players, MaxWorldPlayers)
	}
	if err := checkRegion(i.Region); err != nil {
		return err
	}
	return checkBuilds(i.Builds)
}

func checkID(id string) error {
	if len(id) == 0 || len(id) > MaxIDLen {
		return fmt.Errorf("%w: node id must be 1 to %d bytes", ErrInvalid, MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("%w: node id %q: only letters, digits, '-' and '_'", ErrInvalid, id)
		}
	}
	return nil
}

func checkURL(s string) error {
	if len(s) == 0 || len(s) > maxURLLen {
		return fmt.Errorf("%w: url must be 1 to %d bytes", ErrInvalid, maxURLLen)
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: url %q: want http(s)://host[:port]", ErrInvalid, s)
	}
	return nil
}

func checkRoom(s string) error {
	if len(s) == 0 || len(s) > MaxRoomLen || !utf8.ValidString(s) {
		return fmt.Errorf("%w: room name must be 1 to %d bytes of UTF-8", ErrInvalid, MaxRoomLen)
	}
	return nil
}

func (r *RoomRequest) validate() error {
	if err := checkRoom(r.Room); err != nil {
		return err
	}
	if len(r.Players) > MaxPlayers {
		return fmt.Errorf("%w: %d players, at most %d", ErrInvalid, len(r.Players), MaxPlayers)
	}
	for _, p := range r.Players {
		if len(p) == 0 || len(p) > MaxRoomLen || !utf8.ValidString(p) {
			return fmt.Errorf("%w: player id must be 1 to %d bytes of UTF-8", ErrInvalid, MaxRoomLen)
		}
	}
	if len(r.Config) > maxConfig {
		return fmt.Errorf("%w: room config of %d bytes, at most %d", ErrInvalid, len(r.Config), maxConfig)
	}
	if r.TicketTTL < 0 {
		return fmt.Errorf("%w: negative ticket TTL", ErrInvalid)
	}
	return checkBuilds(r.Builds)
}

func (h *heartbeat) validate() error {
	if err := checkID(h.ID); err != nil {
		return err
	}
	if err := checkURL(h.URL); err != nil {
		return err
	}
	if h.Capacity < 1 || h.Capacity > MaxCapacity || h.Rooms < 0 || h.Rooms > h.Capacity {
		return fmt.Errorf("%w: heartbeat of %s: %d rooms of capacity %d", ErrInvalid, h.ID, h.Rooms, h.Capacity)
	}
	if d := time.Duration(h.IntervalMS) * time.Millisecond; d < minInterval || d > maxInterval {
		return fmt.Errorf("%w: heartbeat of %s: interval %d ms, want %v..%v", ErrInvalid, h.ID, h.IntervalMS, minInterval, maxInterval)
	}
	if h.Players < 0 || h.Players > MaxWorldPlayers || len(h.Worlds) > MaxCapacity {
		return fmt.Errorf("%w: heartbeat of %s: %d worlds, room for %d players", ErrInvalid, h.ID, len(h.Worlds), h.Players)
	}
	if err := checkRegion(h.Region); err != nil {
		return err
	}
	if err := checkBuilds(h.Builds); err != nil {
		return err
	}
	if len(h.CellMaps) > maxCellMaps {
		return fmt.Errorf("%w: heartbeat of %s: %d cell maps, at most %d", ErrInvalid, h.ID, len(h.CellMaps), maxCellMaps)
	}
	for _, m := range h.CellMaps {
		if err := checkID(m); err != nil {
			return fmt.Errorf("%w: heartbeat of %s: cell map: %v", ErrInvalid, h.ID, err)
		}
	}
	for _, w := range h.Worlds {
		if err := checkRoom(w.Name); err != nil {
			return err
		}
		if w.Players < 0 || w.Booked < 0 || w.Cap < 1 || w.Cap > MaxWorldPlayers || w.Players > MaxWorldPlayers || w.Booked > MaxWorldPlayers {
			return fmt.Errorf("%w: heartbeat of %s: world %q holds %d and %d booked of %d", ErrInvalid, h.ID, w.Name, w.Players, w.Booked, w.Cap)
		}
	}
	return nil
}

func (e *roomEvent) validate() error {
	if err := checkID(e.ID); err != nil {
		return err
	}
	if e.Op != "open" && e.Op != "close" {
		return fmt.Errorf("%w: room event op %q", ErrInvalid, e.Op)
	}
	return checkRoom(e.Room)
}

func (l *roomList) validate() error {
	if err := checkID(l.ID); err != nil {
		return err
	}
	if len(l.Rooms) > MaxCapacity {
		return fmt.Errorf("%w: %d rooms, at most %d", ErrInvalid, len(l.Rooms), MaxCapacity)
	}
	for _, r := range l.Rooms {
		if err := checkRoom(r); err != nil {
			return err
		}
	}
	return nil
}

// decode reads a message into v (which has a validate method) and checks
// it. Unknown fields are ignored, so that a newer node can add some.
func decode[T any, P interface {
	*T
	validate() error
}](b []byte) (*T, error) {
	if len(b) > maxMsg {
		return nil, fmt.Errorf("%w: message of %d bytes", ErrInvalid, len(b))
	}
	v := new(T)
	if err := json.Unmarshal(b, v); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if err := P(v).validate(); err != nil {
		return nil, err
	}
	return v, nil
}

func (l *leave) validate() error { return checkID(l.ID) }

func (r *createReply) validate() error {
	if r.Error != "" || r.Full {
		if len(r.Error) > 1024 {
			r.Error = r.Error[:1024]
		}
		return nil
	}
	if err := checkRoom(r.Room); err != nil {
		return err
	}
	if err := checkID(r.Node); err != nil {
		return err
	}
	if len(r.Tickets) > MaxPlayers {
		return fmt.Errorf("%w: %d tickets", ErrInvalid, len(r.Tickets))
	}
	return checkURL(r.URL)
}

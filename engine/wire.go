package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
)

// The engine's own messages travel on the reliable channel beside the
// mode's. Every message of every mode starts with a 3-bit kind; lockstep
// uses 0..2 (and 3), interest 4..6, the engine 7, followed by a 3-bit
// engine message type (SPEC.md section 9).
const (
	kindEngine   = 7
	kindBits     = 3
	typeBits     = 3
	typeWelcome  = 0
	typeBye      = 1
	typeSeats    = 2
	typeMove     = 3 // server to client: go to another world (move.go)
	typeMoveFail = 4 // client to server: the move could not be made
	typeResume   = 5 // server to client: a credential to resume with (resume.go)
	// wireVersion is the newest wire version (SPEC.md §9.4): the one this
	// client reads, and the newest the server writes. The server still
	// writes every version from minWireVersion, to a client that
	// announces it reads no newer (WireHeader); one that announces none
	// is taken to read unannouncedWire.
	wireVersion    = 10 // 9 sent every move's source; 8 had no field groups; 7 had a cell's client number its commands afresh; 6 no strict lockstep; 5 no bye for a kick; 4 no interest corrections' voided commands nor actions' views; 3 no lockstep MaxDelay
	minWireVersion = 5
	// minReadWire is the oldest version this client reads: 5 differs
	// from 6 only in a bye reason a version-5 server never sends, and 6
	// from 7 in a lockstep configuration without strict rooms, 7 from 8
	// not at all (what changed is what a cell's client does), and 8 from
	// 9 in a world's welcome without field groups.
	minReadWire = 5
	// strictWire is the first version whose lockstep rooms may be strict
	// (lockstep.Config.Strict) and whose authoritative rooms' views come
	// in parts: such a room refuses an older client.
	strictWire = 7
	// inheritWire is the first version whose client, following its
	// entity into the next cell of a map, goes on in the command sequence
	// the old cell handed over (interest.Client.Inherit, and
	// World.JoinInherited at the server): its commands in flight at the
	// crossing are applied exactly once. An older client sends again only
	// its moves, numbered afresh (Client.InheritMoves, World.Join).
	inheritWire = 8
	// groupsWire is the first version whose world welcome carries the
	// world's field groups (interest.Config.Groups), and whose clients
	// read group records: a world with groups refuses an older client.
	groupsWire = 9
	// movesWire is the first version whose worlds number entities' moves
	// and send those that go on from the previous path without their
	// source (SPEC.md §8): every world refuses an older client, and this
	// client an older world.
	movesWire       = 10
	unannouncedWire = 4
	maxByeText      = 200
	maxWireUvint    = 1 << 30
)

// WireVersion is the wire version this package's client reads and
// announces in WireHeader (SPEC.md §9.4).
const WireVersion = wireVersion

// WireHeader is the signaling request's header in which a client
// announces the newest wire version it reads, as a decimal number (SPEC.md
// §9.4). Dial sends it; a client written from SPEC.md sends its own.
const WireHeader = "Tongbu-Wire"

// BuildHeader is the signaling request's header in which a client names
// the game build it runs (ClientConfig.Build, such as "1.4.2"). A server
// that serves only some builds (Config.Builds) refuses any other client
// with ErrBuild before it looks at the ticket.
const BuildHeader = "Tongbu-Build"

// maxBuildLen bounds a build's name (Config.Builds, ClientConfig.Build).
const maxBuildLen = 64

// ValidBuild reports whether b can name a build (Config.Builds,
// ClientConfig.Build): 1 to 64 bytes of printable ASCII, with no space
// and no comma.
func ValidBuild(b string) bool {
	if len(b) == 0 || len(b) > maxBuildLen {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; c <= ' ' || c > '~' || c == ',' {
			return false
		}
	}
	return true
}

// checkBuild returns nil if a server serving builds (none: any) serves a
// client that announced h (the BuildHeader's value, "" for none), or
// ErrBuild naming both sides.
func checkBuild(builds []string, h string) error {
	if len(builds) == 0 || slices.Contains(builds, h) {
		return nil
	}
	served := make([]string, len(builds))
	for i, b := range builds {
		served[i] = strconv.Quote(b)
	}
	client := "announces no build"
	if h != "" {
		client = fmt.Sprintf("runs build %q", h)
	}
	return fmt.Errorf("%w: the client %s, this server serves %s", ErrBuild, client, strings.Join(served, ", "))
}

// negotiateWire returns the wire version to write to a client that
// announced h (the WireHeader's value, "" for none), or ErrWireVersion
// naming both sides' versions.
func negotiateWire(h string) (int, error) {
	v, ok := unannouncedWire, true
	if h != "" {
		v, ok = parseWire(h)
	}
	switch {
	case h == "" && v < minWireVersion:
		return 0, fmt.Errorf("%w: the client announces no wire version (so reads version %d), the server writes %s: update the client", ErrWireVersion, v, servedWire())
	case !ok:
		return 0, fmt.Errorf("%w: %s %q is not a version number (the server writes %s)", ErrWireVersion, WireHeader, h, servedWire())
	case v < minWireVersion:
		return 0, fmt.Errorf("%w: the client reads wire versions up to %d, the server writes %s: update the client", ErrWireVersion, v, servedWire())
	}
	return min(v, wireVersion), nil
}

// parseWire reads a WireHeader value: decimal digits, nothing else (no
// sign), at least 1. A number past any version (more digits than an int
// holds) reads as the largest: the client reads every version up to one
// this server does not know of yet.
func parseWire(h string) (int, bool) {
	h = strings.TrimSpace(h)
	if h == "" || strings.Trim(h, "0123456789") != "" {
		return 0, false
	}
	if len(strings.TrimLeft(h, "0")) > 9 {
		return maxWireHeader, true
	}
	v, err := strconv.Atoi(h)
	return v, err == nil && v >= 1
}

// maxWireHeader is what parseWire reads a version of ten digits or more
// as.
const maxWireHeader = 1<<31 - 1

// servedWire says which wire versions the server writes.
func servedWire() string {
	if minWireVersion == wireVersion {
		return fmt.Sprintf("version %d", wireVersion)
	}
	return fmt.Sprintf("versions %d to %d", minWireVersion, wireVersion)
}

// Paths the Server's handler serves.
const (
	ConnectPath = "/connect" // POST an SDP offer with a ticket; get the answer
	HealthPath  = "/healthz" // 200 "ok" while serving, 503 while shutting down
	MetricsPath = "/metrics" // Prometheus text format
	PingPath    = "/ping"    // 204 at once, naming the UDP port that answers region pings (MeasureRegions)
	// NetTestPath is the network test, a page a player opens to see the
	// round trip, jitter and loss from the browser to this server, over
	// UDP on the game's port and over TCP; NetTestScript is its script,
	// which a game's own page may load from any origin and call
	// (tongbuNetTest(serverURL)). SPEC.md §9.8.
	NetTestPath   = "/nettest"
	NetTestScript = "/nettest.js"
)

// Mode is what a connection joined: a lockstep room or an interest world.
type Mode uint8

const (
	// Lockstep is a lockstep room (package lockstep).
	Lockstep Mode = iota
	// Interest is an interest-managed world (package interest).
	Interest
)

// String returns "lockstep" or "interest".
func (m Mode) String() string {
	if m == Lockstep {
		return "lockstep"
	}
	return "interest"
}

// welcome is the server's first message on a connection: what was joined
// and the configuration the mode's client half needs.
type welcome struct {
	version  int // the wire version it is written in; 0: wireVersion
	mode     Mode
	target   string
	role     Role
	slot     int         // lockstep: the player's slot, or the spectator's id
	self     interest.ID // interest: the player's entity
	lockstep lockstep.Config
	interest interest.Config
}

// isEngine reports whether msg is an engine message (bits are packed least
// significant first, so the kind is the low 3 bits of the first byte).
func isEngine(msg []byte) bool { return len(msg) > 0 && msg[0]&(1<<kindBits-1) == kindEngine }

func appendWelcome(dst []byte, m *welcome) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeWelcome, typeBits)
	v := m.version
	if v == 0 {
		v = wireVersion
	}
	// Every version the server writes (minWireVersion..wireVersion) is
	// written here; today there is one.
	w.WriteBits(uint64(v), 4)
	w.WriteBits(uint64(m.mode), 1)
	w.WriteBits(uint64(m.role), 1)
	w.WriteString(m.target, MaxNameLen)
	if m.mode == Lockstep {
		w.WriteUvarint(uint64(m.slot))
		if v >= strictWire {
			lockstep.WriteConfig(w, m.lockstep)
		} else if err := lockstep.WriteConfigVersion(w, m.lockstep, 3); err != nil {
			w.Fail(err) // never: Room.attach refuses such a client first
		}
	} else {
		w.WriteUvarint(uint64(m.self))
		interest.WriteClientConfig(w, m.interest)
		if v >= groupsWire {
			interest.WriteClientGroups(w, m.interest.Groups)
		}
	}
	return w.Bytes()
}

func readWelcome(msg []byte) (*welcome, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeWelcome {
		return nil, fmt.Errorf("%w: not a welcome", ErrMalformed)
	}
	v := int(r.ReadBits(4))
	if r.Err() == nil && (v < minReadWire || v > wireVersion) {
		// The server writes what the client announced (Dial: this
		// client's wireVersion), or an older version this client still
		// reads: a server that does neither is refused by name.
		return nil, fmt.Errorf("%w: the server wrote wire version %d, this client reads versions %d to %d", ErrWireVersion, v, minReadWire, wireVersion)
	}
	m := &welcome{version: v, mode: Mode(r.ReadBits(1)), role: Role(r.ReadBits(1))}
	if r.Err() == nil && m.mode == Interest && v < movesWire {
		return nil, fmt.Errorf("%w: the server wrote a world's welcome of wire version %d, this client reads worlds from version %d", ErrWireVersion, v, movesWire)
	}
	m.target = r.ReadString(MaxNameLen)
	var err error
	if m.mode == Lockstep {
		m.slot = int(r.ReadUvarint())
		if m.slot > maxWireUvint {
			r.Fail(fmt.Errorf("%w: slot %d", ErrMalformed, m.slot))
		}
		if v >= strictWire {
			m.lockstep, err = lockstep.ReadConfig(r)
		} else {
			m.lockstep, err = lockstep.ReadConfigVersion(r, 3)
		}
	} else {
		self := r.ReadUvarint()
		m.interest, err = interest.ReadClientConfig(r)
		if err == nil && v >= groupsWire {
			m.interest, err = interest.ReadClientGroups(r, m.interest)
		}
		m.self = interest.ID(self)
		if err == nil && (self == 0 || self >= uint64(m.interest.MaxEntities)) {
			err = fmt.Errorf("%w: entity %d out of range", ErrMalformed, self)
		}
	}
	if e := r.Err(); e != nil {
		return nil, fmt.Errorf("%w: welcome: %v", ErrMalformed, e)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: welcome: %v", ErrMalformed, err)
	}
	if m.role > RoleSpectator || (m.mode == Interest && m.role != RolePlayer) {
		return nil, fmt.Errorf("%w: welcome: role %v in %v mode", ErrMalformed, m.role, m.mode)
	}
	return m, nil
}

// Bye reasons: why the server closed a connection.
const (
	byeShutdown = iota // the server is shutting down
	byeClosed          // the room or world was closed
	byeReplaced        // the same player connected again
	byeRefused         // the join was refused (see the text)
	byeFull            // the join was refused: the room has no free slot
	byeMoved           // the player moved to another world
	byeKicked          // the game server kicked the player (wire version 6)
	numBye
)

var byeNames = [numBye]string{"server shutting down", "room closed", "replaced by a newer connection", "refused", "room full", "moved to another world", "kicked"}

// byeErrs are the errors a bye matches with errors.Is.
var byeErrs = [numBye]error{ErrServerClosed, ErrClosed, nil, nil, ErrFull, ErrMoved, ErrKicked}

// byeFor is the bye reason that refuses a join for err.
func byeFor(err error) int {
	switch {
	case errors.Is(err, ErrFull):
		return byeFull
	case errors.Is(err, ErrServerClosed):
		return byeShutdown
	case errors.Is(err, ErrClosed):
		return byeClosed
	}
	return byeRefused
}

// ClosedError is the reason the server gave for closing the connection.
// It matches ErrServerClosed, ErrClosed or ErrFull with errors.Is when
// that was the reason.
type ClosedError struct {
	Reason string // what happened
	Detail string // the server's explanation, may be empty
	err    error
}

func (e *ClosedError) Error() string {
	if e.Detail == "" {
		return "engine: closed by server: " + e.Reason
	}
	return "engine: closed by server: " + e.Reason + ": " + e.Detail
}

// Unwrap returns the engine error the reason is, if any.
func (e *ClosedError) Unwrap() error { return e.err }

func appendBye(dst []byte, reason int, text string) []byte {
	if len(text) > maxByeText {
		text = text[:maxByeText]
	}
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeBye, typeBits)
	w.WriteUint(uint64(reason), numBye-1)
	w.WriteString(text, maxByeText)
	return w.Bytes()
}

func readBye(msg []byte) (*ClosedError, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeBye {
		return nil, fmt.Errorf("%w: not a bye", ErrMalformed)
	}
	reason := r.ReadUint(numBye - 1)
	text := r.ReadString(maxByeText)
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: bye: %v", ErrMalformed, err)
	}
	return &ClosedError{Reason: byeNames[reason], Detail: text, err: byeErrs[reason]}, nil
}

// engineType returns the engine message type of msg (isEngine(msg) true).
func engineType(msg []byte) int {
	if len(msg) == 0 {
		return -1
	}
	return int(msg[0]>>kindBits) & (1<<typeBits - 1)
}

// Seat is what a lockstep room's slot holds, as the room tells its
// players and spectators (Client.Seats): for a game's scoreboard or
// lobby.
type Seat uint8

const (
	// SeatOpen: no player has taken the slot yet.
	SeatOpen Seat = iota
	// SeatPlaying: its player is connected and its inputs arrive in time.
	SeatPlaying
	// SeatLate: its player is connected, but in the last second its
	// inputs arrived after their frame was cut, or it is half a second or
	// more behind the frames: its input is being made up.
	SeatLate
	// SeatGone: its player left or was dropped (the frames mark the slot
	// Gone); the seat is kept for it to come back.
	SeatGone
)

var seatNames = [...]string{"open", "playing", "late", "gone"}

// String returns "open", "playing", "late" or "gone".
func (s Seat) String() string {
	if int(s) < len(seatNames) {
		return seatNames[s]
	}
	return fmt.Sprintf("seat(%d)", s)
}

// appendSeats writes the seats message (SPEC.md section 9.2): a count,
// then 2 bits a seat.
func appendSeats(dst []byte, seats []Seat) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeSeats, typeBits)
	w.WriteUint(uint64(len(seats)), lockstep.MaxPlayers)
	for _, s := range seats {
		w.WriteBits(uint64(s), 2)
	}
	return w.Bytes()
}

// readSeats reads a seats message into dst.
func readSeats(msg []byte, dst []Seat) ([]Seat, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeSeats {
		return dst, fmt.Errorf("%w: not a seats message", ErrMalformed)
	}
	n := int(r.ReadUint(lockstep.MaxPlayers))
	dst = dst[:0]
	for i := 0; i < n && r.Err() == nil; i++ {
		dst = append(dst, Seat(r.ReadBits(2)))
	}
	if err := r.Err(); err != nil {
		return dst[:0], fmt.Errorf("%w: seats: %v", ErrMalformed, err)
	}
	return dst, nil
}

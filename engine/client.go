package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// ClientConfig configures Dial. A nil *ClientConfig means the defaults.
type ClientConfig struct {
	// IncludeLoopback offers loopback candidates (native only), for tests
	// and local demos.
	IncludeLoopback bool
	// HTTPClient posts the offer (default http.DefaultClient).
	HTTPClient *http.Client
	// Limits bound the connection. The message sizes and timeouts must
	// match the server's: the zero value (the defaults) matches a server
	// whose Config.Limits is zero, as tongbu serve's always is; for a
	// server configured otherwise, pass what its Server.Limits returns
	// (the game server can send it with the ticket).
	Limits transport.Limits
	// Stack chooses the native WebRTC implementation (default
	// transport.StackLean); the browser uses its own.
	Stack transport.Stack
	// SharedSocket lets this process's clients of a loopback server share
	// one UDP socket, each from its own 127.x.y.z address: for load
	// generators that run thousands of players in one process (Linux;
	// see transport.ClientConfig.SharedSocket).
	SharedSocket bool
	// Network chooses the native lean client's path to a server that also
	// serves WebRTC over TCP (Config.TCPAddr): "" tries UDP, then TCP when
	// UDP has no answer within a second; "udp" or "tcp" takes that one
	// (transport.ClientConfig.Network).
	Network string
	// Logger receives the client's logs (default: discarded).
	Logger *slog.Logger
	// Connect, when set, makes the connections of Dial and of moves
	// instead of WebRTC: an in-process bot connects through a
	// memnet.Network and Server.Attach, with url naming the server its
	// own way. A Connect that signals over HTTP itself announces the wire
	// version as Dial does (WireHeader: WireVersion), or is refused, and
	// names the build (BuildHeader: Build) to a server that checks it.
	Connect func(ctx context.Context, url, ticket string) (transport.Conn, error)
	// OnMove is called from Update when the client has followed its
	// player to another world (the server's World.Transfer): from then on
	// Interest, Entity, Target and the configuration are the new world's.
	// A client made by NewClient cannot follow: it tells the server, and
	// its player stays.
	OnMove func(Move)
	// OnConnection is called from Update when the connection is lost and
	// the client resumes it by itself (Reconnecting), when it has
	// (Resumed: from then on Lockstep, Interest and the rest are the new
	// connection's, which catches up as a player who joins again does),
	// and when it gives up (Lost: Update returns the error). A Dial
	// client resumes when its path goes silent or breaks (a network
	// change, a tunnel), with the credential the server gave it, for up
	// to ResumeTimeout; a bye from the server, or Close, ends it for good.
	OnConnection func(ConnectionEvent)
	// ResumeTimeout bounds how long a lost connection is resumed for
	// (default 30 s: the server's Config.ResumeWindow); negative: never.
	ResumeTimeout time.Duration
	// Build names the game build this client runs, such as "1.4.2" (1 to
	// 64 bytes of printable ASCII, no space or comma), sent at signaling
	// in BuildHeader: a server that serves only some builds
	// (Config.Builds) refuses any other with ErrBuild, so an old client
	// learns it must update instead of joining a match it cannot play.
	// Empty: none sent, which such a server refuses too.
	Build string
}

// ConnectionEvent tells the game of its connection's life
// (ClientConfig.OnConnection).
type ConnectionEvent struct {
	State ConnectionState
	// Err is why the connection was lost (Reconnecting), or why resuming
	// it failed (Lost).
	Err error
	// Away is how long the player has been without a connection.
	Away time.Duration
	// Attempts counts the dials made to resume (Resumed, Lost).
	Attempts int
	// RestoredFrame, when not 0 (Resumed), says the player's world came
	// back from its checkpoint on another server after its own died: the
	// world went back to this frame, and what happened since is lost.
	RestoredFrame int
}

// ConnectionState is what happened to a connection.
type ConnectionState int

const (
	// Reconnecting: the connection was lost; the client is dialing again.
	Reconnecting ConnectionState = iota + 1
	// Resumed: the player is back in its room or world.
	Resumed
	// Lost: the client could not resume; it is closed.
	Lost
)

// String returns "reconnecting", "resumed" or "lost".
func (s ConnectionState) String() string {
	switch s {
	case Reconnecting:
		return "reconnecting"
	case Resumed:
		return "resumed"
	case Lost:
		return "lost"
	}
	return fmt.Sprintf("ConnectionState(%d)", int(s))
}

// Move says where a client went (ClientConfig.OnMove).
type Move struct {
	From, To string // the worlds left and joined
	URL      string // the server of the world joined
}

// Client is a player's (or spectator's) connection to a room or world:
// native Go or WASM in the browser. Behind it runs the mode's client half,
// lockstep.Client or interest.Client, which the game drives directly.
//
// A Client is driven by the game's loop: call Update once per render tick
// (it takes what has arrived, hands it to the mode's client and sends the
// uplink when due), then use Lockstep or Interest. Like the mode clients it
// is not safe for concurrent use, except Close and Done.
type Client struct {
	conn    transport.Conn
	welcome *welcome
	mode    modeClient       // the mode's half: ls or is
	ls      *lockstep.Client // for Lockstep, nil in a world
	is      *interest.Client // for Interest, nil in a room
	early   [][]byte         // mode messages that arrived before the welcome

	interval  time.Duration // the least time between two uplink packets
	lastSend  time.Time
	closed    error
	malformed uint64
	unknown   uint64 // engine messages of a type this client does not know
	seats     []Seat // the room's latest seats message

	// Following a transfer (Dial's clients only).
	url    string        // the server dialed
	cfg    *ClientConfig // what Dial was given, for the next dial
	moving chan moveDial // the dial of a move under way; nil if none
	stop   func()        // cancels it
	lost   error         // the old connection closed during the move

	standbyMove bool // the move under way is a standby

	// Resuming a lost connection (resume.go).
	credentials []string     // from the server, newest last
	resuming    chan resumed // the resume under way; nil if none
	resumeStop  func()       // cancels it
	lostAt      time.Time    // when the connection was lost

	// Following a match to its standby (failover.go).
	standby  string       // where the room said its match goes on
	fo       *failover    // the notice that came before the welcome, if any
	heardAt  time.Time    // when the last mode message arrived
	failing  chan resumed // the try of the standby under way; nil if none
	failStop func()       // cancels it
}

// moveDial is the outcome of the dial a move makes.
type moveDial struct {
	c        *Client
	url      string
	err      error
	seamless bool
	standby  bool
}

// moveTimeout bounds the dial of a move: within the booking's life
// (BookingTTL), so that a failure is told while the place is held.
const moveTimeout = 15 * time.Second

// standbyTimeout bounds how long a standby connection waits for its
// welcome: as long as the server holds a standby place (StandbyTTL).
const standbyTimeout = StandbyTTL

// maxEarly bounds the messages kept while waiting for the welcome.
const maxEarly = 64

// modeClient is what the Client needs of its mode's half.
type modeClient interface {
	// Deliver takes one message from the server.
	Deliver(now time.Time, msg []byte) error
	// Packet returns the uplink packet to send now, or nil.
	Packet(now time.Time) []byte
	// Outbox returns the messages for the reliable channel.
	Outbox() [][]byte
}

// worldClient is an interest.Client, which has nothing for the reliable
// channel.
type worldClient struct{ *interest.Client }

func (worldClient) Outbox() [][]byte { return nil }

// Dial connects to the server at url (its base URL, such as
// "http://localhost:8080", or its connect URL ending in ConnectPath) with
// ticket, and returns once the server has placed the player in its room
// or world.
func Dial(ctx context.Context, url, ticket string, cfg *ClientConfig) (*Client, error) {
	if cfg == nil {
		cfg = &ClientConfig{}
	}
	conn, err := dialConn(ctx, url, ticket, cfg)
	if err != nil {
		return nil, errstack.With(err)
	}
	c, err := NewClient(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, errstack.With(err)
	}
	c.url, c.cfg = url, cfg
	return c, nil
}

// dialConn makes Dial's connection: WebRTC, or cfg.Connect's.
func dialConn(ctx context.Context, url, ticket string, cfg *ClientConfig) (transport.Conn, error) {
	if cfg.Connect != nil {
		return cfg.Connect(ctx, url, ticket)
	}
	u, err := connectURL(url)
	if err != nil {
		return nil, err
	}
	header := http.Header{"Authorization": {"Bearer " + ticket}, WireHeader: {strconv.Itoa(wireVersion)}}
	if cfg.Build != "" {
		if !ValidBuild(cfg.Build) {
			return nil, fmt.Errorf("%w: ClientConfig.Build %q: want 1 to %d bytes of printable ASCII, no space or comma", ErrConfig, cfg.Build, maxBuildLen)
		}
		header.Set(BuildHeader, cfg.Build)
	}
	conn, err := transport.Dial(ctx, u, &transport.ClientConfig{
		Header:          header,
		HTTPClient:      cfg.HTTPClient,
		IncludeLoopback: cfg.IncludeLoopback,
		Limits:          cfg.Limits,
		Stack:           cfg.Stack,
		SharedSocket:    cfg.SharedSocket,
		Network:         cfg.Network,
		Logger:          cfg.Logger,
	})
	if err != nil {
		return nil, dialError(err)
	}
	return conn, nil
}

// dialError makes a signaling refusal match the engine error its reason
// names (engine.ErrTicketExpired, ErrNotFound, ErrFull, ...).
func dialError(err error) error {
	var se *transport.SignalingError
	if !errors.As(err, &se) {
		return err
	}
	for _, k := range refusalKinds {
		if k.reason == se.Reason {
			return &refusedError{k.err, err}
		}
	}
	switch se.Reason {
	case "busy", "busy_addr", "busy_ticket": // handshakes in progress: retry in a second
		return &refusedError{ErrFull, err}
	case "origin":
		return &refusedError{ErrConfig, err}
	}
	return err
}

// refusedError is a refusal that matches the engine error it stands for
// as well as the transport's error.
type refusedError struct{ is, err error }

func (e *refusedError) Error() string   { return e.err.Error() }
func (e *refusedError) Unwrap() []error { return []error{e.is, e.err} }

func connectURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("engine: server URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%w: server URL %q: want http or https", ErrConfig, s)
	}
	if !strings.HasSuffix(u.Path, ConnectPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + ConnectPath
	}
	return u.String(), nil
}

// NewClient runs the client side over conn, a connection already open to
// the server (Dial does this for WebRTC; an in-process bot passes one end
// of a memnet.Network pipe whose other end went to Server.Attach). It
// waits for the server's welcome.
func NewClient(ctx context.Context, conn transport.Conn) (*Client, error) {
	c := &Client{conn: conn}
	for c.welcome == nil {
		m, err := conn.Receive(ctx)
		if err != nil {
			return nil, errstack.Wrapf(err, "engine: waiting for the server's welcome")
		}
		switch {
		case !isEngine(m.Data):
			if len(c.early) < maxEarly {
				c.early = append(c.early, m.Data)
			}
		case engineType(m.Data) == typeBye:
			bye, err := readBye(m.Data)
			if err != nil {
				return nil, errstack.With(err)
			}
			return nil, errstack.With(bye)
		case engineType(m.Data) == typeFailover:
			if fo, err := readFailover(m.Data); err == nil {
				c.fo = fo
			} else {
				c.malformed++
			}
		case engineType(m.Data) != typeWelcome:
			// A type this client does not know (SPEC.md §9.4), or one that
			// means nothing before the welcome: ignored.
			c.unknown++
		default:
			w, err := readWelcome(m.Data)
			if err != nil {
				return nil, errstack.With(err)
			}
			c.welcome = w
		}
	}
	var err error
	w := c.welcome
	if w.mode == Lockstep {
		if w.role == RoleSpectator {
			c.ls, err = lockstep.NewSpectator(w.lockstep)
		} else {
			c.ls, err = lockstep.NewClient(w.lockstep, w.slot)
		}
		c.interval = w.lockstep.Period() / 2
		c.mode = c.ls
	} else {
		c.is, err = interest.NewClient(w.interest, w.self)
		c.interval = w.interest.Period() / 2
		c.mode = worldClient{c.is}
	}
	if err != nil {
		return nil, errstack.Wrapf(err, "engine")
	}
	if c.fo != nil {
		c.standby = c.fo.standby
	}
	return c, nil
}

// Mode returns what the client joined.
func (c *Client) Mode() Mode { return c.welcome.mode }

// Target returns the room's or world's name.
func (c *Client) Target() string { return c.welcome.target }

// Role returns the client's role.
func (c *Client) Role() Role { return c.welcome.role }

// Slot returns the player's slot in a lockstep room, or a spectator's
// peer id (Players or above); -1 in an interest world.
func (c *Client) Slot() int {
	if c.welcome.mode != Lockstep {
		return -1
	}
	return c.welcome.slot
}

// Entity returns the player's entity in an interest world (0, no entity,
// in a lockstep room). Interest().Self returns the entity's state as the
// client predicts it.
func (c *Client) Entity() interest.ID { return c.welcome.self }

// Lockstep returns the lockstep client half, or nil in a world.
func (c *Client) Lockstep() *lockstep.Client { return c.ls }

// LockstepConfig returns the room's configuration.
func (c *Client) LockstepConfig() lockstep.Config { return c.welcome.lockstep }

// Interest returns the interest client half, or nil in a room.
func (c *Client) Interest() *interest.Client { return c.is }

// InterestConfig returns the world's configuration.
func (c *Client) InterestConfig() interest.Config { return c.welcome.interest }

// Update takes every message that has arrived, hands it to the mode's
// client, and sends the uplink packet when one is due (at most one per
// half frame period; Flush sends at once). It returns the server's reason
// once the connection is closed.
func (c *Client) Update(now time.Time) error {
	if err := c.Receive(now); err != nil {
		return err
	}
	if now.Sub(c.lastSend) >= c.interval {
		c.Flush(now)
	}
	c.sendOutbox()
	return nil
}

// Receive is Update without the send: it takes every message that has
// arrived and hands it to the mode's client. A game that sends its input
// with Flush once per tick, as a lockstep.Rollback session does, calls
// Receive, runs the tick, then Flush: one uplink packet a tick, carrying
// the tick's input.
func (c *Client) Receive(now time.Time) error {
	if c.closed != nil {
		return c.closed
	}
	if c.moving != nil {
		select {
		case d := <-c.moving:
			c.moved(d)
			if c.closed != nil {
				return c.closed
			}
		default:
		}
	}
	if c.resuming != nil {
		select {
		case d := <-c.resuming:
			c.resumed(d)
			if c.closed != nil {
				return c.closed
			}
		default:
		}
	}
	if c.failing != nil {
		select {
		case d := <-c.failing:
			c.failedOver(d)
		default:
		}
	}
	if c.resuming != nil {
		return nil // the game goes on drawing what it has
	}
	for _, m := range c.early {
		c.deliver(now, m)
	}
	c.early = nil
	var closed error
	heard := false
	for {
		m, ok := c.conn.TryReceive()
		if !ok {
			break
		}
		if isEngine(m.Data) {
			switch engineType(m.Data) {
			case typeBye:
				if bye, err := readBye(m.Data); err == nil {
					closed = bye
				}
			case typeSeats:
				if seats, err := readSeats(m.Data, nil); err != nil {
					c.malformed++ // counted and dropped, as a mode's bad message is
				} else {
					c.seats = seats
				}
			case typeMove:
				if mv, err := readMove(m.Data); err != nil {
					c.malformed++
				} else {
					c.follow(mv)
				}
			case typeResume:
				if creds, err := readResume(m.Data); err != nil {
					c.malformed++
				} else {
					c.keepCredentials(creds)
				}
			case typeFailover:
				if fo, err := readFailover(m.Data); err != nil {
					c.malformed++
				} else {
					c.takeFailover(fo)
				}
			case typeWelcome:
				c.malformed++ // one welcome a connection
			default:
				c.unknown++ // a newer server's (SPEC.md §9.4)
			}
			continue
		}
		heard = true
		c.deliver(now, m.Data)
	}
	if heard && (c.ls != nil && c.ls.Have() > 0 || c.is != nil) {
		c.heardAt = now
		if c.failing != nil {
			c.dropFailover() // the room is alive after all
		}
	}
	if closed == nil {
		c.suspect(now)
		select {
		case <-c.conn.Done():
			closed = &ClosedError{Reason: "connection lost"}
			if c.moving == nil && pathLost(c.conn) && c.resume(now, closed) {
				return nil
			}
		default:
		}
	}
	switch {
	case closed == nil:
		return nil
	case c.moving != nil && c.standbyMove && !errors.Is(closed, ErrMoved):
		c.dropMove() // the old world is gone before the crossing: so is the player
	case c.moving != nil: // the move decides: the player may be there already
		if c.lost == nil {
			c.lost = closed
		}
		return nil
	}
	c.closed = closed
	c.conn.Close()
	return c.closed
}

// sendOutbox sends what the mode's client has for the reliable channel
// (a lockstep client's live report, playout reports, state dumps).
func (c *Client) sendOutbox() {
	for _, m := range c.mode.Outbox() {
		c.conn.SendReliable(m)
	}
}

func (c *Client) deliver(now time.Time, msg []byte) {
	if err := c.mode.Deliver(now, msg); err != nil {
		c.malformed++ // counted and dropped: one bad packet is not fatal
	}
}

// Seats returns what each slot of a lockstep room holds (open, playing,
// late or gone), as of the room's latest word, which comes when a seat
// changes and every few seconds; nil before the first, and in a world.
// Each message brings a new slice: keep it as long as you like, but do
// not change it.
func (c *Client) Seats() []Seat { return c.seats }

// Flush sends the mode's uplink packet now: call it right after an input
// or a command to save up to half a frame of latency.
func (c *Client) Flush(now time.Time) {
	if c.closed != nil {
		return
	}
	pkt := c.mode.Packet(now) // a spectator's acknowledges only
	c.lastSend = now
	if pkt != nil {
		c.conn.SendUnreliable(pkt)
	}
	c.sendOutbox()
}

// ClientStats counts a client's traffic.
type ClientStats struct {
	transport.Stats
	// Malformed counts packets the mode's client could not use.
	Malformed uint64
	// Unknown counts engine messages of a type this client does not know,
	// which a newer server may send (SPEC.md §9.4): ignored.
	Unknown uint64
}

// Stats returns the connection's counters.
func (c *Client) Stats() ClientStats {
	return ClientStats{Stats: c.conn.Stats(), Malformed: c.malformed, Unknown: c.unknown}
}

// Done is closed when the connection closes (after a move, the new
// world's connection: take it again after OnMove).
func (c *Client) Done() <-chan struct{} { return c.conn.Done() }

// Close closes the connection, and the one a move under way is opening.
func (c *Client) Close() error {
	if c.moving != nil {
		c.dropMove()
	}
	if c.resuming != nil {
		c.dropResume()
	}
	if c.failing != nil {
		c.dropFailover()
	}
	return c.conn.Close()
}

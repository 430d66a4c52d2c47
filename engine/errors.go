package engine

import (
	"errors"
	"net/http"
)

// The errors the engine returns match these with errors.Is. Each error
// that leaves the engine's exported functions also carries the stack of
// where it arose (github.com/pkg/errors): log it with %+v to see it.
var (
	// ErrConfig: a configuration the server or client cannot work with
	// (a short secret, a server URL that is not http or https).
	ErrConfig = errors.New("engine: invalid configuration")

	// ErrNotFound: no room or world has the name a ticket gives.
	ErrNotFound = errors.New("engine: no room or world named")

	// ErrExists: CreateRoom or CreateWorld with a name already taken.
	ErrExists = errors.New("engine: a room or world of that name exists")

	// ErrFull: a room has no free slot, or the server is at one of its
	// limits (connections, rooms). A ticket refused for it is not spent.
	ErrFull = errors.New("engine: full")

	// ErrRole: the ticket's role cannot join the target (a spectator
	// ticket for an interest world, which takes players only).
	ErrRole = errors.New("engine: role not taken here")

	// ErrClosed: the room or world was closed before the connection
	// joined it.
	ErrClosed = errors.New("engine: room or world closed")

	// ErrServerClosed: the server is shutting down.
	ErrServerClosed = errors.New("engine: server closed")

	// ErrTicketInvalid: a ticket that is not one (bad encoding or
	// signature, too long a life, none presented).
	ErrTicketInvalid = errors.New("engine: invalid ticket")

	// ErrTicketExpired: a ticket past its expiry.
	ErrTicketExpired = errors.New("engine: ticket expired")

	// ErrTicketReplayed: a ticket already used; each is good for one
	// connection.
	ErrTicketReplayed = errors.New("engine: ticket already used")

	// ErrMoved: the player left this world for another (World.Transfer);
	// a Client that could not follow it reports this as its close reason.
	ErrMoved = errors.New("engine: moved to another world")

	// ErrKicked: the game server kicked the player (Server.Kick, or the
	// cluster's Kick): its connections were ended, and its credentials
	// and the tickets of its session are refused. The bye's detail, and
	// the refusal's, say why.
	ErrKicked = errors.New("engine: kicked")

	// ErrTransfer: a transfer (World.Transfer) did not happen: the
	// destination refused or could not be reached, or the client could
	// not connect to it. The player is still where it was.
	ErrTransfer = errors.New("engine: transfer failed")

	// ErrMalformed: an engine message that did not decode.
	ErrMalformed = errors.New("engine: malformed message")

	// ErrWireVersion: the client and the server have no wire version in
	// common (SPEC.md §9.4): the client reads only versions older than
	// the server still writes (update the client), or the server wrote a
	// newer one than the client announced. The error names both.
	ErrWireVersion = errors.New("engine: no wire version in common")

	// ErrBuild: the server does not serve the game build the client runs
	// (Config.Builds, ClientConfig.Build): the player needs another
	// version of the game, or another server. The error names both sides'
	// builds.
	ErrBuild = errors.New("engine: build not served")
)

// A refusal's reason: its token on the wire (the signaling answer's
// transport.RefusalHeader, SPEC.md section 6.1), which Dial turns back
// into the error, its label in tongbu_refused_total, and its HTTP status.
type refusalKind struct {
	err    error
	reason string // on the wire
	label  string // in the metrics
	status int
}

var refusalKinds = []refusalKind{
	{ErrTicketExpired, "ticket_expired", "expired", http.StatusForbidden},
	{ErrTicketReplayed, "ticket_replayed", "replayed", http.StatusForbidden},
	{ErrTicketInvalid, "ticket_invalid", "invalid", http.StatusForbidden},
	{ErrNotFound, "not_found", "not_found", http.StatusNotFound},
	{ErrRole, "role", "role", http.StatusForbidden},
	{ErrFull, "full", "full", http.StatusServiceUnavailable},
	{ErrServerClosed, "closing", "closing", http.StatusServiceUnavailable},
	{ErrClosed, "closed", "closed", http.StatusNotFound},
	{ErrWireVersion, "wire_version", "wire_version", http.StatusUpgradeRequired},
	{ErrBuild, "build", "build", http.StatusConflict},
	{ErrKicked, "kicked", "kicked", http.StatusForbidden},
	{ErrMoved, "moved", "moved", http.StatusForbidden},
}

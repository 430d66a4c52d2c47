// Package engine is tongbu's one entry point: a Server that a Go game
// server embeds and a Client, native or in the browser, that dials it.
//
// A Server hosts lockstep rooms (CreateRoom) and interest worlds
// (CreateWorld) behind one HTTP handler (WebRTC signaling at ConnectPath,
// HealthPath, MetricsPath in the Prometheus text format, PingPath and
// the network test page NetTestPath, which measure the path to the
// server for MeasureRegions and for a player, and the game's assets if
// given) and one UDP port. Each client presents a ticket: the
// game server's one-use permission, signed with a secret the two share
// (HMAC-SHA256 over player id, room or world, role and expiry). The ticket
// routes the connection to its room or world; a bad, expired or replayed
// ticket is refused at signaling, before any WebRTC resource is taken.
// Rooms and worlds run on a few worker goroutines (a scheduler hands each
// due one to a free worker), not a goroutine each; connections have none
// of their own either: one goroutine reads every peer's datagrams from the
// UDP port and one sends what they queued (with Config.Stack set to pion's
// stack, each connection has pion's goroutines instead).
//
// A room's match starts when its first player arrives (lockstep.Config's
// Start: or when all its players have, or at once). A refused Dial says
// why: its error matches ErrTicketExpired (sign a new ticket),
// ErrTicketReplayed, ErrTicketInvalid (a wrong secret or server),
// ErrNotFound (no such room or world), ErrRole, ErrFull, ErrKicked or
// ErrServerClosed.
//
// A Client joins with Dial (WebRTC) or NewClient (any transport.Conn: an
// in-process bot over memnet.Network, with Server.Attach on the other
// end). The server's first message, the welcome, carries the mode's
// configuration, so the Client builds the right half: Lockstep returns a
// lockstep.Client, Interest an interest.Client, which the game drives. The
// game calls Update once per render tick to receive and send. In a room,
// Seats says what each slot holds (open, playing, late or gone), for a
// scoreboard or a lobby.
//
// A world hands a player to another world with World.Transfer: a portal,
// a map change, a line switch, to a world of this server
// (World.Destination) or of another process (package cluster). The
// destination books the player's place with the game's state of it
// (WorldConfig.Arrive receives it), the client follows by itself over a
// new connection (ClientConfig.OnMove tells the game), and the old world
// lets the player go only once the new one has it.
//
// A joined client is given resume credentials, tickets the server signs
// for its place, with which it comes back by itself when its path is
// lost. They admit only while the server vouches for them: while the
// connection lives and for Config.ResumeWindow after its path was lost,
// never past Config.MaxSession after the ticket the session began with,
// and not in a world the player has left (the resume follows it to where
// it went). Server.Kick ends a player's connections and refuses its
// credentials and the tickets issued before the kick (ErrKicked).
//
// A lockstep match can outlive its server (package cluster does this for
// every room on a cluster). Room.Feed hands another server, the standby,
// each frame the room cuts and its players' seats; Room.SetStandby tells
// the clients where it is. If the room's server dies, the standby
// continues the match with Server.RestoreRoom, on the original schedule:
// every client notices the silence within FailoverSilence, resumes there
// by itself with the first server's credentials, keeps its lockstep
// state, and carries back the frames the standby lacked, so no frame is
// lost or cut twice. A deploy hands a room over on purpose
// (RoomState.Hold, Room.MoveTo, Room.Release) with a stall of a frame or
// two; Server.Drain waits for the matches that have no standby to end.
//
// The Server is native only; the Client also builds for js/wasm, where
// package wasm starts it in a page.
//
// # Errors
//
// Every error the engine returns matches one of the sentinels in
// errors.go with errors.Is (ErrNotFound, ErrExists, ErrFull, the ticket
// errors, ...), and carries the stack of the call that returned it, from
// github.com/pkg/errors: log it with %+v to see where it arose. Update's
// *ClosedError is a reason, not a failure, and carries none.
package engine

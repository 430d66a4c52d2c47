// Package cluster spreads rooms and worlds over several tongbu server
// processes that share one NATS server (core NATS, no JetStream).
//
// Each process Joins as a Node with its public URL and a capacity. Nodes
// announce themselves with heartbeats and announce every room they open
// or close; each follows the others in a Directory (a process that only
// places rooms can Watch one). A new directory probes, and every node
// answers with a heartbeat at once.
//
// Placement: CreateRoom sends a request to the create subject, on which
// every node with capacity holds a queue subscription; NATS hands each
// request to one member of the queue group, chosen at random. A node
// that fills up leaves the group, and answers requests already queued
// "full", which sends them to another node; it rejoins when a room
// closes (Node.Closed). The node's Host creates the room and signs
// tickets with the secret all processes share; the Placement names the
// node's public URL, so the ticket leads the client to the process that
// holds its room. Room names are unique in the cluster: a node refuses a
// name it holds or that its directory places on another node (the
// directory learns of a new room within a round trip, so two requests
// for one name at the same instant may still both succeed).
//
// Regions and builds: a node may say where it runs (NodeInfo.Region) and
// which game builds it serves (NodeInfo.Builds); a room request names the
// builds of its players (RoomRequest.Builds) and only a node that serves
// them all takes it. A placer that chose the node itself, such as package
// matchmaker for the region nearest a match's players, sends the request
// to that node alone with CreateRoomOn.
//
// Loss: a node whose heartbeats stop for Options.Misses of its intervals
// is declared dead: its rooms are reported lost (Options.OnLoss, a
// warning in the log, Directory.Lost and the JSON of Directory.ServeHTTP).
// Its queue subscription is gone with its connection, so new rooms go to
// the others. A node that Leaves on purpose has its rooms closed, not
// lost.
//
// Standbys: a node that calls ServeStandbys gives every room it creates a
// standby on another node, which holds the room's frames, config and
// seats as the room cuts them, and continues the match if the node dies
// (its clients notice the silence within a second and resume there by
// themselves, with the credentials the first node gave them) or drains
// (Drain: the clients connect to the standby ahead and switch in one round
// trip). A room cuts only under a lease from its standby, which takes the
// room over only once that lease has run out, so two nodes never cut one
// match (DESIGN.md, "Rooms that outlive a node"). A lost node's rooms that
// had a standby are reported lost by the directory and come back, on the
// standby, moments later.
//
// Worlds: a node that calls ServeWorlds takes worlds up to NodeInfo.Players
// players (the sum of their caps), placed as rooms are (CreateWorld); its
// heartbeats carry each world's players, bookings and cap, so a directory
// lists them (Worlds, Lines, LocateWorld) and reports a dead node's worlds
// lost. A map's lines are worlds named Line(map, n): JoinWorld books a
// joining player's place on the line a LinePolicy picks (the least full,
// by default) and opens a new line when all are full. A world hands a
// player to a world on any node with engine.World.Transfer and the node's
// Destination: the destination books the place, the client connects to
// it by itself, and the source lets the player go only once the
// destination has it, so a node's death never loses or doubles a player
// in transit (SPEC.md §9.3).
//
// Cells: one map cut into a grid of cells (CellMap), each served by a node
// (ServeCell), plays as one seamless world. Each cell owns the entities in
// its rectangle and mirrors those near a border to the neighbour as
// read-only ghosts, so that a player near it sees across; an entity that
// crosses is handed over with the game's state of it (CellMap.Handover
// and Adopt), and a player's client follows over a connection it opened
// while the player stood near the border, so that the crossing costs no
// handshake. Nodes that host a map's cells (HostCells) give each cell of
// it an heir among them: a drained node's cell moves whole to its heir
// with its players playing on, and a dead node's comes back there from
// its checkpoint, its neighbours following it by themselves. A cell with
// no host left whose node dies is reported lost; its neighbours drop its
// ghosts, keep what walks into its rectangle, and hand it back when a node
// serves the cell again.
//
// Trust: anyone who reaches the NATS server may publish on it, so no
// message is taken for being there. Every process of the cluster holds
// its secret (Options.Secret; players never do), and every message is
// sealed with keys derived from it for its sender: authenticated,
// encrypted (a ticket inside is never in the clear on a subject), bound
// to its subject and fresh. A message that does not open, is stale or
// replayed, or comes from a sender that may not send it (a heartbeat
// for another node, a border message from a node that does not serve
// the cell) is dropped, counted (Node.Dropped) and logged at a bounded
// rate. Keep the NATS server private as well, each process with a user
// of its role (examples/serve/nats.conf; natsbus.Auth). Kick ends a
// player's connections on every node (Node.OnKick).
//
// The subjects and message formats are in SPEC.md §11.
//
// Errors match the package's sentinels (ErrNoCapacity, ErrRefused, ...)
// with errors.Is, and carry the stack of the call that returned them
// (github.com/pkg/errors; print with %+v).
package cluster

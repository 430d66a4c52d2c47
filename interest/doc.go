// Package interest is tongbu's MMO state-sync mode: a World cut into
// square regions, each client kept in sync with the 3x3 regions around
// its character, the way large MMOs keep thousands of players in one
// world.
//
// What a client is told:
//   - commands (move with source and destination, jump, skill, and
//     game-defined ones), stamped with their frame and broadcast to every
//     client whose range holds the actor; each is encoded once per frame
//     into its region's buffer and the same bits are spliced into every
//     packet that carries it;
//   - an entity that crosses into a region a client's range newly covers
//     is announced to that client;
//   - client discovery: a client that hears a command for an entity it
//     does not know asks for its logic data, answered at a bounded rate;
//   - forced sync: ForcedSync after a client's range takes in a region,
//     the logic data of the entities there that have not broadcast since,
//     sooner for regions on a moving player's path, in one
//     region-relative list;
//   - state sync of changed logic data at rates a declarative Policy sets
//     (target or not, in combat or not, city or field);
//   - display data, fetched by the client once per version;
//   - the game's own fields (Config.Groups, World.SetGroup), in groups
//     that share the entity's ID, each sent to the clients in range on
//     change, at most once a period (1 s for hit points, 10 s for gear, a minute for a title),
//     or on request (Client.RequestGroup); a client that learns an
//     entity gets its groups with its display data (Client.Group);
//   - repairs: packets are acknowledged, and what a lost one carried is
//     resent as the entities' current logic (or a removal, if they have
//     left the range); nothing stale is retransmitted. On a link that
//     lost packets lately, forced syncs, discovery answers and repairs
//     are echoed in the next frames and the client sends its discovery
//     requests twice (Stats.Echoes); a clean link sends nothing twice.
//
// Everything but commands and announcements waits in a per-client queue
// ordered by accumulated priority and drains under a byte budget per
// frame, which spreads the burst of a region crossing over frames.
//
// Removal happens on the client: the Client drops entities
// that leave its range, by its own moves or theirs, with a short grace.
// Config.LeaveMessages adds explicit leave messages for clients that do
// not run the Client half.
//
// A player's jumps, skills and custom commands are the game's to resolve:
// World.OnAction hands each one the world accepts to the game as it
// arrives (a skill's target already checked to be in the player's
// range), and the game applies it (World.Update for damage) while the
// world broadcasts it.
//
// On the client, Render says where to draw every entity for a render
// tick: others a learned delay behind the world, between the frames they
// were heard at, sliding rather than jumping to news heard late; the
// player's own entity at once, where its client predicts it. When the
// world corrects the player (a refused move, or the game moving it with
// World.Move or Place), the client adopts the world's account and replays
// the move the player made meanwhile on top of it (SetReplay), so a
// correction never undoes newer input.
//
// Lag compensation: each action carries the frame the player saw the
// others at (Action.View, bounded by Config.MaxRewind), and the world
// keeps every entity's recent paths, so the game judges a skill by where
// its target was on the player's screen (World.PositionAt, World.Reach).
//
// Movement is client-driven and validated: the world keeps
// each player's position for every frame of Config.History, and its speed
// limit (World.SetSpeedLimit), rewinds to a move's frame, compares its
// source within Config.Tolerance and its speed with the limit then, and
// accepts it or corrects the client. Every position, here and on the client, is
// advanced by the same integer rule (Step), so a client extrapolates a
// move to exactly the world's position.
//
// The package depends on codec only and is driven by explicit calls
// (World.Tick, World.Deliver, Client.Deliver, Client.Advance,
// Client.Packet), so tests run it with no network and no real clock. A
// server that collects a frame's uplinks hands them over together with
// World.DeliverAll, which loads each client's state a few packets ahead.
// The wire is in SPEC.md, section 8. The package Example shows a world
// and a client from spawning to the first packet.
package interest

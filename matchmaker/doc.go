// Package matchmaker puts players and parties in matches of close skill,
// on servers near them, with players of their own game build: the service
// in front of the relay's rooms, the room server "that puts players of
// close strength together".
//
// A Ticket asks for a match in a Mode (1v1, 5v5, a free-for-all of N; the
// shape is Teams x TeamSize) for one player or a party (a party plays on
// one team, whole), with each player's Rating (Mu, the skill, and Sigma,
// how sure the matchmaker is of it), the Build the players run, and the
// round trip each measured to every region. A Backfill ticket asks for
// players for a running room's open seats.
//
// Matching: the ticket that waited longest anchors a match and takes the
// tickets nearest in Mu, within a tolerance that widens while it waits
// (Mode.Skill, SkillWiden, MaxSkill); tickets whose Sigma differ much
// (new players and established ones) meet only after waiting
// (Mode.Uncertainty); parties are split into teams as evenly as they go,
// and a match whose teams stay too uneven waits for better tickets. The
// match is placed in the region where its worst round trip is the
// shortest, among the regions a player accepts (Mode.RTT, widening to
// MaxRTT) and the nodes with room that serve its builds. Builds never
// meet unless the operator opened a switch between them (SetSwitches;
// OpenBuilds on a Matcher), so that a preview build's players meet live
// players only once their versions agree.
//
// In one process, a Matcher does all this over the tickets it holds (the
// demo's Play button uses one). On a cluster (package cluster), Services
// run in several processes (tongbu serve's "matchmaker" config, or tongbu
// matchmaker) and Queues run where the players are (a lobby): a queue
// sends each ticket to the Service that holds its pool (a mode and the
// builds that may meet: rendezvous hashing over the live Services), which
// matches it, claims it from its queue (a queue grants each ticket to one
// match only: no player is ever matched twice), places the match with
// cluster.CreateRoomOn on a node of the chosen region, and sends every
// ticket its Assignment: the node's URL and each player's room ticket. A
// Service that dies loses no ticket: its queues send its tickets to
// another within Options.Misses heartbeats, with their place in line. A
// queue tells its player when nothing matched in time (ErrTimeout) or no
// Service is running (ErrUnavailable).
//
// After the match, RateMatch (Rate for bare ratings) updates the players'
// ratings from the result, with the Weng-Lin model OpenSkill uses, for the
// game to store. It is written here: a page of arithmetic, which handles
// teams and free-for-alls (Glicko-2 rates pairs only), where a Go port of
// OpenSkill would be a dependency the module proxy this project builds
// from does not serve.
//
// Every message between Services and queues is sealed with the cluster's
// secret (Options.Secret, the same as cluster.Options.Secret), so that
// nothing on NATS can read an Assignment's room tickets, speak as a
// Service to win a pool, or claim a ticket for a match (package cluster
// says how).
//
// The subjects and messages are in SPEC.md §12. Errors match the package's
// sentinels with errors.Is.
package matchmaker

// Package locksteptest plays a lockstep match in virtual time through
// the real Room and Clients, over an emulated network (transport/memnet's
// link model), driven by an event queue instead of clocks: twenty minutes
// of a match run in a second, and the same seed plays the same match.
// Run plays the waiting client; RunRollback the prediction mode
// (lockstep.Rollback) with a game of the caller's, or the waiting client
// for comparison, with a spectator, a player who drops out and rejoins,
// an outage, and the match's replay if asked.
//
// A game's tests can use it to see their game under loss and jitter, and
// whether its simulation stays deterministic (every player's confirmed
// state hashes are compared); tongbu's benches measure with it (bench
// loss, bench rollback).
package locksteptest

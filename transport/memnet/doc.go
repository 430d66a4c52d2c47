// Package memnet is an in-memory network for tests and simulations: its
// connections are transport.Conns with a seeded emulator of latency,
// jitter, loss (independent or in bursts), duplication, reordering and
// bandwidth on each direction, so anything built on transport.Conn (a
// room, a world, a game's client) can be played over a bad network in
// memory. Under testing/synctest a minute of network time takes
// milliseconds and runs the same way every time. A Trace records what a
// link did and replays it exactly.
//
// It is kept apart from transport, as pion keeps its virtual network
// (vnet) apart from webrtc: what a server imports to serve players is
// not what its tests import to play them.
package memnet

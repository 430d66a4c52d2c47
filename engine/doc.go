// Package engine is tongbu's one entry point: a Server that a Go game server
// embeds (HTTP signaling, signed tickets, lockstep rooms and interest
// worlds on one UDP port) and a Client, native or in the browser, that
// dials it and joins a room or a world.
//
// The package is laid out but not built yet: it lands with the engine
// issue, on top of transport, lockstep and interest. Until then the module
// offers the codec (package codec) and its generator (cmd/codecgen).
package engine

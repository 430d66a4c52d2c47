// Package transport is the benchmark of the WebRTC transport: bots in a
// second process echo messages through the server; the engine's server
// beside pion's defaults, and beside the floor (plain UDP echoed with the
// same batched socket calls, no encryption, no SCTP), in server CPU per
// message and delivery.
package transport

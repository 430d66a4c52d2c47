// Package relay is the benchmark of the lockstep relay: rooms of 10 at
// 15 Hz, in memory (the room code's CPU per player-frame) or over real
// WebRTC with bots in a second process (the whole server's), and how late
// the rooms cut their frames.
package relay

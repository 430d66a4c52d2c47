// Package game is the arena: a top-down shooter for 2 to 10 players that
// runs in lockstep. Every client runs the same Game on the same frames
// (lockstep.Frame, one input per player per turn) and arrives at the same
// state bit for bit, so the network carries only inputs.
//
// Players move in eight directions, aim anywhere, and fire shots that fly
// in a straight line until they hit a player or a wall, or fade. A shot
// takes ShotDamage health; a player at zero health is out for RespawnDelay
// frames and then respawns, shielded for a moment, at the spawn point
// farthest from its opponents. Kills, deaths and hits are the score. Bot
// fills a slot no person holds; Pilot runs one the way a bot client does.
// A player who leaves or is dropped (lockstep.Slot.Gone) is played by Bot
// inside Step, on the game's own seeded Rand, until it is back: every
// client and the room's copy take it over alike.
//
// # Determinism
//
// The simulation uses only integers and lockstep/fixed (64-bit fixed
// point with integer sqrt and trigonometry); no float64 touches it. It
// iterates players in slot order and shots in firing order, never a Go map.
// Its only randomness (where a player respawns) comes from a fixed.Rand
// seeded with the match seed and saved in snapshots. Hash returns an
// FNV-1a hash of the whole state for comparing clients, and a golden test
// pins the hash after thousands of frames of bot play on every platform
// the tests run on, including wasm.
//
// Inputs are three bytes (see Input); the game keeps a player's last input
// for frames that bring none, so a client needs to send only changes.
package game

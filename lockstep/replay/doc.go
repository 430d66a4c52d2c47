// Package replay writes and reads the replay files of lockstep matches,
// and re-runs them to check that a game's simulation still reaches the
// state the players reported.
//
// A Writer records a match as the room plays it: give it to Room.Record
// (it is a lockstep.Recorder) and it writes the frames the room cuts, the
// room's comparisons of the players' state hashes, the players leaving
// and joining, and the dumps they send after a desync, a block every ten
// seconds of frames, so that a crash loses at most the last block. A
// Reader reads a file back as the clients ran it, checking every field;
// Verify runs it through the game's simulation and compares the hashes.
//
// A program that verifies replays names the games it knows in a Games
// registry: each game's package says how to make its simulation from a
// replay's header (a GameFactory), and the program registers the games it
// chooses. Command is the `replay info|verify FILE` command that tongbu's
// programs share (`tongbu replay`, the demo's `replay`).
//
// The file format is in SPEC.md, section 7.5.
package replay

//go:build !js

package main

import (
	"io"

	"github.com/tongbu/tongbu/lockstep/replay"
)

// games are the games whose replays this binary verifies: none, as the
// server binary links no game. `tongbu replay verify` of a game's replay
// says so and points to the game's own program; the demo's (examples/demo,
// `tongbu demo replay verify FILE`) verifies the arena and the duel.
var games replay.Games

// replayCommand runs `tongbu replay info|verify FILE`.
func replayCommand(args []string, stdout, stderr io.Writer) int {
	return replay.Command(args, &games, stdout, stderr)
}

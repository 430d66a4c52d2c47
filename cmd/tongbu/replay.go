//go:build !js

package main

import (
	"io"

	"github.com/tongbu/tongbu/internal/replaycli"
	_ "github.com/tongbu/tongbu/lockstep/movers" // replay verify knows the movers test game
)

// replayCommand runs `tongbu replay info|verify FILE`. verify re-runs the
// games this binary links (lockstep.RegisterGame); a game server's own
// binary links its game and can offer the same command with replaycli.
func replayCommand(args []string, stdout, stderr io.Writer) int {
	return replaycli.Command(args, stdout, stderr)
}

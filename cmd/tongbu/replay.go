//go:build !js

package main

import (
	"io"

	"github.com/tongbu/tongbu/internal/replaycli"
	_ "github.com/tongbu/tongbu/lockstep/movers" // replay verify knows the movers test game
)

// replayCommand runs `tongbu replay info|verify FILE`. verify re-runs the
// games this binary links (lockstep.RegisterGame): the movers test game
// here; the demo binary (examples/demo) offers the same command with the
// arena linked too.
func replayCommand(args []string, stdout, stderr io.Writer) int {
	return replaycli.Command(args, stdout, stderr)
}

//go:build !js

// Command demo is tongbu's demo server: the arena (lockstep, with bots) and
// the MMO world (interest management, with bots and NPCs), their browser
// clients built to WebAssembly and served with the signaling on one port.
//
// From the repository root:
//
//	go run ./cmd/tongbu demo [flags]
//
// which builds and runs this program; `demo -h` lists the flags. The demo
// also reads replays, and verifies those of its games, the arena and the
// duel: `demo replay info|verify FILE`.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tongbu/tongbu/engine"
	arena "github.com/tongbu/tongbu/examples/arena/game"
	duel "github.com/tongbu/tongbu/examples/duel/game"
	"github.com/tongbu/tongbu/lockstep/replay"
	"github.com/tongbu/tongbu/transport"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "replay" {
		games, err := demoGames()
		if err != nil {
			fmt.Fprintln(stderr, "demo:", err)
			return 1
		}
		return replay.Command(args[1:], games, stdout, stderr)
	}
	return demoCommand(args, stdout, stderr)
}

// demoGames returns the games whose replays the demo verifies: its own,
// the arena and the duel.
func demoGames() (*replay.Games, error) {
	var g replay.Games
	for _, register := range []func(*replay.Games) error{arena.Register, duel.Register} {
		if err := register(&g); err != nil {
			return nil, err
		}
	}
	return &g, nil
}

// runServer serves srv's pages and signaling on ln until SIGINT or
// SIGTERM, then shuts down gracefully.
func runServer(srv *engine.Server, ln net.Listener, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hs := engine.HTTPServer("", srv.Handler())
	go hs.Serve(transport.LimitListener(ln, transport.DefaultConnsPerAddr))
	err := srv.Serve(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err != nil {
		fmt.Fprintln(stderr, "demo:", err)
		return 1
	}
	return 0
}

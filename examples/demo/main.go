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
// also reads replays of the games it links: `demo replay info|verify FILE`.
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
	"github.com/tongbu/tongbu/internal/replaycli"
	"github.com/tongbu/tongbu/transport"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "replay" {
		return replaycli.Command(args[1:], stdout, stderr)
	}
	return demoCommand(args, stdout, stderr)
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

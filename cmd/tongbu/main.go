//go:build !js

// Command tongbu is tongbu's server binary: it serves rooms and worlds,
// signs tickets and reads replays. From a checkout of the repository it
// also starts the demo and the benchmarks, which live in their own modules
// (examples and bench) so that neither the binary nor a game server that
// imports the engine carries their dependencies.
//
//	tongbu demo                 start the demo server (both modes, with bots)
//	tongbu serve [-config f]    run the server alone, as a relay
//	tongbu serve -nats url      ... as one node of a cluster (cluster)
//	tongbu matchmaker -nats url -config f
//	                            match players and place their matches on the cluster
//	tongbu ticket -player p -target t
//	                            print a ticket signed with $TONGBU_SECRET
//	tongbu bench [-benchtime d] [scenario [flags]]
//	                            run a benchmark scenario; none named lists them
//	tongbu bench transport -clients N -hz H -size B -seconds S
//	tongbu bench relay -transport webrtc -players N [-seconds S] [-find [-max M]]
//	tongbu replay info FILE     print a replay's header and statistics
//	tongbu replay verify FILE   re-run a replay and check its recorded hashes: this
//	                            binary links no game, a game's own program does
//	                            (tongbu demo replay verify FILE for the demo's)
//	tongbu version              print the version
package main

import (
	"fmt"
	"io"
	"os"
)

// version is the tool's version, set at release time with -ldflags.
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "demo":
		return runFromCheckout("examples", "./demo", args[1:], stdout, stderr)
	case "serve":
		return serveCommand(args[1:], stdout, stderr)
	case "matchmaker":
		return matchmakerCommand(args[1:], stdout, stderr)
	case "ticket":
		return ticketCommand(args[1:], stdout, stderr)
	case "bench":
		return runFromCheckout("bench", "./cmd/tongbu-bench", args[1:], stdout, stderr)
	case "replay":
		return replayCommand(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "tongbu", version)
		return 0
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "tongbu: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: tongbu <command> [arguments]

commands:
  demo [flags]                 start the demo server (both modes, with bots);
                               runs examples/demo from a checkout of the repository
  serve [-config f] [-http a] [-udp p] [-public-ip ips] [-rooms n]
        [-nats url -node id -public-url u -capacity n]
                               run the server alone (rooms and worlds from the config;
                               ticket secret from $TONGBU_SECRET or -secret-file); with
                               -nats, one node of a cluster that places rooms over NATS
  matchmaker -nats url -config f
                               match players (skill, parties, regions, builds) and place
                               their matches on the cluster's nodes (package matchmaker)
  ticket -player p -target t   print a ticket signed with the same secret
  bench [-benchtime d] [name [flags]]
                               run a benchmark scenario; with no name, list them;
                               runs bench/cmd/tongbu-bench from a checkout
  replay info FILE             print a replay's header and statistics
  replay verify FILE           re-run a replay's simulation and check the recorded hashes
                               (of the games this binary links: none; the demo's games
                               with demo replay verify FILE)
  version                      print the version
`)
}

//go:build !js

// Command tongbu is the tongbu tool: the demo server, benchmark scenarios
// and, as later parts land, replay tools.
//
//	tongbu demo                 start the demo server (both modes, with bots)
//	tongbu serve [-config f]    run the server alone, as a relay
//	tongbu serve -nats url      ... as one node of a cluster (engine/cluster)
//	tongbu ticket -player p -target t
//	                            print a ticket signed with $TONGBU_SECRET
//	tongbu bench [-benchtime d] [scenario [flags]]
//	                            run a benchmark scenario; none named lists them
//	tongbu bench transport -clients N -hz H -size B -seconds S
//	tongbu bench relay -transport webrtc -players N [-seconds S] [-find [-max M]]
//	tongbu replay info FILE     print a replay's header and statistics
//	tongbu replay verify FILE   re-run a replay and check its recorded hashes
//	tongbu version              print the version
package main

import (
	"fmt"
	"io"
	"os"
)

// version is the tool's version, set at release time with -ldflags.
var version = "dev"

// botsEnv marks the child process of a transport scenario: the bots run in
// a second process so that the server's CPU time is its own.
const botsEnv = "TONGBU_BENCH_BOTS"

func main() {
	if os.Getenv(botsEnv) != "" { // the bots of a transport scenario
		if err := runBots(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "tongbu bots:", err)
			os.Exit(1)
		}
		return
	}
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
		return demoCommand(args[1:], stdout, stderr)
	case "serve":
		return serveCommand(args[1:], stdout, stderr)
	case "ticket":
		return ticketCommand(args[1:], stdout, stderr)
	case "bench":
		return benchCommand(args[1:], stdout, stderr)
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
  demo                         start the demo server (both modes, with bots)
  serve [-config f] [-http a] [-udp p] [-public-ip ips] [-rooms n]
        [-nats url -node id -public-url u -capacity n]
                               run the server alone (rooms and worlds from the config;
                               ticket secret from $TONGBU_SECRET or -secret-file); with
                               -nats, one node of a cluster that places rooms over NATS
  ticket -player p -target t   print a ticket signed with the same secret
  bench [-benchtime d] [name [flags]]
                               run a benchmark scenario; with no name, list them
  replay info FILE             print a replay's header and statistics
  replay verify FILE           re-run a replay's simulation and check the recorded hashes
  version                      print the version
`)
}

//go:build !js

// Command tongbu-bench runs tongbu's benchmark scenarios. Each runs the
// engine beside its baseline in one run, prints a table and ends with
//
//	RESULT scenario=<name> key=value ...
//
// Usage:
//
//	tongbu-bench [-benchtime d] [scenario [flags]]
//
// With no scenario it lists them; `tongbu-bench SCENARIO -h` lists a
// scenario's flags. From the repository root, `go run ./cmd/tongbu bench`
// runs it too.
package main

import (
	"fmt"
	"io"
	"os"
)

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
	return benchCommand(args, stdout, stderr)
}

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

	_ "github.com/tongbu/tongbu/bench/abuse"
	_ "github.com/tongbu/tongbu/bench/cells"
	_ "github.com/tongbu/tongbu/bench/churn"
	_ "github.com/tongbu/tongbu/bench/codec"
	_ "github.com/tongbu/tongbu/bench/failover"
	_ "github.com/tongbu/tongbu/bench/feel"
	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	_ "github.com/tongbu/tongbu/bench/jitter"
	_ "github.com/tongbu/tongbu/bench/loss"
	mmbench "github.com/tongbu/tongbu/bench/matchmaker"
	_ "github.com/tongbu/tongbu/bench/reconnect"
	_ "github.com/tongbu/tongbu/bench/relay"
	_ "github.com/tongbu/tongbu/bench/replay"
	_ "github.com/tongbu/tongbu/bench/replica"
	_ "github.com/tongbu/tongbu/bench/rollback"
	_ "github.com/tongbu/tongbu/bench/roomidle"
	_ "github.com/tongbu/tongbu/bench/transport"
	_ "github.com/tongbu/tongbu/bench/world"
)

func main() {
	if os.Getenv(harness.BotsEnv) != "" { // the bots of a scenario over real connections
		if err := bots.Run(os.Args[1:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "tongbu bots:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getenv(mmbench.WorkerEnv) != "" { // a matchmaker process of the matchmaker scenario
		if err := mmbench.Worker(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "tongbu matchmaker worker:", err)
			os.Exit(1)
		}
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return harness.Command(args, stdout, stderr)
}

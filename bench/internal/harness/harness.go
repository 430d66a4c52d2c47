// Package harness is what the benchmark scenarios share: the registry
// the tongbu-bench command runs them from, the closing RESULT line, CPU
// time (the process's and one thread's), CPU and heap profiles, and the
// -benchtime of the measured cases.
package harness

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"sort"
	"strings"
	"testing"
	"time"
)

// A Scenario runs the engine and its baseline side by side, prints a
// readable table and ends with one line:
//
//	RESULT scenario=<name> key=value ...
type Scenario struct {
	Summary string
	Run     func(args []string, out io.Writer) error // args: the scenario's own flags
}

var scenarios = map[string]Scenario{}

// Register adds a scenario under name, with a one-line summary for the
// list; each scenario package registers itself when imported.
func Register(name, summary string, run func(args []string, out io.Writer) error) {
	scenarios[name] = Scenario{Summary: summary, Run: run}
}

// BotsEnv marks the child process of a scenario over real connections:
// the bots run in a second process, so that the server's CPU time is its
// own. A program (or test binary) that finds it set runs bots.Run.
const BotsEnv = "TONGBU_BENCH_BOTS"

// Command runs `tongbu-bench [-benchtime d] [scenario [flags]]` and
// returns the exit status: with no scenario, it lists them.
func Command(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchtime := fs.Duration("benchtime", time.Second, "time to run each measured case")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := SetBenchtime(*benchtime); err != nil {
		fmt.Fprintln(stderr, "tongbu bench:", err)
		return 2
	}
	names := fs.Args()
	if len(names) == 0 {
		fmt.Fprintln(stdout, "scenarios:")
		keys := make([]string, 0, len(scenarios))
		for k := range scenarios {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(stdout, "  %-10s %s\n", k, scenarios[k].Summary)
		}
		return 0
	}
	name := names[0]
	sc, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(stderr, "tongbu bench: unknown scenario %q\n", name)
		return 2
	}
	if err := sc.Run(names[1:], stdout); err != nil {
		fmt.Fprintf(stderr, "tongbu bench %s: %v\n", name, err)
		return 1
	}
	return 0
}

// SetBenchtime makes testing.Benchmark run each case for d.
func SetBenchtime(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("benchtime %v: want a positive duration", d)
	}
	testing.Init()
	return flag.CommandLine.Set("test.benchtime", d.String())
}

// StartCPUProfile writes a CPU profile to path until stop is called.
func StartCPUProfile(path string) (stop func(), err error) {
	return startWriting(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// StartTrace writes an execution trace (go tool trace) to path until stop
// is called.
func StartTrace(path string) (stop func(), err error) {
	return startWriting(path, trace.Start, trace.Stop)
}

// startWriting creates path and starts a recorder writing to it; stop
// ends the recorder and closes the file.
func startWriting(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { end(); f.Close() }, nil
}

// WriteHeapProfile writes a profile of the live heap, after a collection,
// to path.
func WriteHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Result formats the closing line of a scenario.
func Result(name string, kv ...any) string {
	var b strings.Builder
	fmt.Fprintf(&b, "RESULT scenario=%s", name)
	for i := 0; i+1 < len(kv); i += 2 {
		switch v := kv[i+1].(type) {
		case float64:
			fmt.Fprintf(&b, " %s=%.2f", kv[i], v)
		default:
			fmt.Fprintf(&b, " %s=%v", kv[i], v)
		}
	}
	return b.String()
}

package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sort"
	"strings"
	"testing"
	"time"
)

// A scenario runs the engine and its baseline side by side, prints a
// readable table and ends with one line:
//
//	RESULT scenario=<name> key=value ...
type scenario struct {
	summary string
	run     func(args []string, out io.Writer) error // args: the scenario's own flags
}

var scenarios = map[string]scenario{
	"codec": {"seed-000 character update: tongbu codec vs encoding/binary and encoding/json", benchCodec},
}

func benchCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	benchtime := fs.Duration("benchtime", time.Second, "time to run each measured case")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := setBenchtime(*benchtime); err != nil {
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
			fmt.Fprintf(stdout, "  %-10s %s\n", k, scenarios[k].summary)
		}
		return 0
	}
	name := names[0]
	sc, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(stderr, "tongbu bench: unknown scenario %q\n", name)
		return 2
	}
	if err := sc.run(names[1:], stdout); err != nil {
		fmt.Fprintf(stderr, "tongbu bench %s: %v\n", name, err)
		return 1
	}
	return 0
}

// setBenchtime makes testing.Benchmark run each case for d.
func setBenchtime(d time.Duration) error {
	if d <= 0 {
		return fmt.Errorf("benchtime %v: want a positive duration", d)
	}
	testing.Init()
	return flag.CommandLine.Set("test.benchtime", d.String())
}

// startCPUProfile writes a CPU profile to path until stop is called.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// writeHeapProfile writes a profile of the live heap, after a collection,
// to path.
func writeHeapProfile(path string) error {
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

// resultLine formats the closing line of a scenario.
func resultLine(name string, kv ...any) string {
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

package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

type listed struct {
	ImportPath string
	Standard   bool
	Deps       []string
	Imports    []string
	Error      *struct{ Err string }
}

// goList lists the module's packages for one target platform.
func goList(t *testing.T, env ...string) []listed {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Every module of the workspace: the library, and the examples, the
	// benchmarks and the interop tests, which have rules of their own.
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Standard,Deps,Imports,Error", Module+"/...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// stdSet asks go list which of the dependencies are in the standard library.
func stdSet(t *testing.T, env ...string) map[string]bool {
	t.Helper()
	cmd := exec.Command("go", "list", "std")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list std: %v", err)
	}
	std := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		std[p] = true
	}
	return std
}

// TestModuleLayering holds every package of the module, built for the
// server and for the browser, to the import rules of DESIGN.md.
func TestModuleLayering(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	for _, platform := range [][]string{nil, {"GOOS=js", "GOARCH=wasm"}} {
		name := "host"
		if platform != nil {
			name = "js/wasm"
		}
		t.Run(name, func(t *testing.T) {
			std := stdSet(t, platform...)
			isStd := func(p string) bool { return std[p] || !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }
			pkgs := goList(t, platform...)
			checked := 0
			for _, p := range pkgs {
				if p.Error != nil && !strings.Contains(p.Error.Err, "build constraints exclude all Go files") {
					t.Errorf("%s: %s", p.ImportPath, p.Error.Err)
				}
				for _, v := range Check(p.ImportPath, p.Deps, isStd) {
					t.Error(v)
				}
				for _, v := range CheckImports(p.ImportPath, p.Imports) {
					t.Error(v)
				}
				checked++
			}
			if checked < 5 {
				t.Fatalf("checked only %d packages: go list found too little", checked)
			}
		})
	}
}

// TestCheckImports proves the rules on direct imports catch what they
// must.
func TestCheckImports(t *testing.T) {
	m := func(rel string) string { return Module + "/" + rel }
	for _, tt := range []struct {
		name    string
		pkg     string
		imports []string
		bad     int
	}{
		{"examples on the engine", m("examples/demo"), []string{m("engine"), "fmt"}, 0},
		{"examples on an internal package", m("examples/demo"), []string{m("internal/timeq")}, 1},
		{"benchmarks on the scheduler and the huge-page advisor", m("bench/relay"), []string{m("internal/sched"), m("internal/hugepage")}, 0},
		{"benchmarks on another internal package", m("bench/relay"), []string{m("internal/timeq")}, 1},
		{"benchmarks on their own internal packages", m("bench/relay"), []string{m("bench/internal/bots")}, 0},
		{"the library on its internal packages", m("engine"), []string{m("internal/sched")}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := CheckImports(tt.pkg, tt.imports); len(got) != tt.bad {
				t.Fatalf("CheckImports = %q, want %d violations", got, tt.bad)
			}
		})
	}
}

// TestCheck proves the rules catch what they must, so the test above
// cannot pass by checking nothing.
func TestCheck(t *testing.T) {
	isStd := func(p string) bool { return !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") }
	m := func(rel string) string { return Module + "/" + rel }
	tests := []struct {
		name string
		pkg  string
		deps []string
		bad  int
	}{
		{"codec on the standard library and snappy", m("codec"), []string{"fmt", "github.com/golang/snappy"}, 0},
		{"codec on pkg/errors", m("codec"), []string{"github.com/pkg/errors"}, 1},
		{"codec on an internal helper", m("codec"), []string{m("internal/x")}, 1},
		{"codec test helper on codec", m("codec/internal/recordtest"), []string{m("codec")}, 0},
		{"transport on codec and pion", m("transport"), []string{m("codec"), "github.com/pion/webrtc/v4", "golang.org/x/net/ipv4"}, 0},
		{"transport on a mode", m("transport"), []string{m("lockstep")}, 1},
		{"transport on engine", m("transport/internal/mux"), []string{m("engine")}, 1},
		{"lockstep on codec", m("lockstep/fixed"), []string{m("codec"), m("lockstep")}, 0},
		{"lockstep on transport", m("lockstep"), []string{m("transport")}, 1},
		{"lockstep on pion (via anything)", m("lockstep"), []string{"github.com/pion/sctp"}, 1},
		{"interest on lockstep", m("interest"), []string{m("lockstep")}, 1},
		{"engine on everything below", m("engine"), []string{m("lockstep"), m("interest"), m("transport"), m("codec")}, 0},
		{"engine on ebiten", m("engine"), []string{"github.com/hajimehoshi/ebiten/v2"}, 1},
		{"engine on a program", m("engine"), []string{m("cmd/tongbu")}, 1},
		{"engine on wasm", m("engine"), []string{m("wasm")}, 1},
		{"replica on codec and snappy", m("replica"), []string{m("codec"), "github.com/golang/snappy"}, 0},
		{"replica test records on replica", m("replica/replicatest"), []string{m("replica"), m("codec")}, 0},
		{"replica on transport", m("replica"), []string{m("transport")}, 1},
		{"replica on lockstep", m("replica"), []string{m("lockstep")}, 1},
		{"replica on interest", m("replica"), []string{m("interest")}, 1},
		{"replica on engine", m("replica"), []string{m("engine")}, 1},
		{"replica on pkg/errors", m("replica"), []string{"github.com/pkg/errors"}, 1},
		{"engine on replica", m("engine"), []string{m("replica")}, 0},
		{"wasm on engine", m("wasm"), []string{m("engine")}, 0},
		{"internal on examples", m("internal/fuzzcheck"), []string{m("examples/arena")}, 1},
		{"the server binary on the library", m("cmd/tongbu"), []string{m("engine"), m("wasm"), m("cluster"), "github.com/nats-io/nats.go"}, 0},
		{"the server binary on an example game", m("cmd/tongbu"), []string{m("examples/arena/game")}, 1},
		{"the server binary on a benchmark", m("cmd/tongbu"), []string{m("bench/world")}, 1},
		{"the server binary on ebiten", m("cmd/tongbu"), []string{"github.com/hajimehoshi/ebiten/v2"}, 1},
		{"the server binary on testing", m("cmd/tongbu"), []string{"testing"}, 1},
		{"a library package on testing", m("lockstep"), []string{"testing"}, 1},
		{"an internal helper on testing", m("internal/timeq"), []string{"testing"}, 1},
		{"an internal helper on chromedp", m("internal/timeq"), []string{"github.com/chromedp/chromedp"}, 1},
		{"examples on the library", m("examples/demo"), []string{m("engine"), "github.com/hajimehoshi/ebiten/v2", "testing"}, 0},
		{"benchmarks on their own and testing", m("bench/world"), []string{m("bench/internal/moba"), m("engine"), "testing"}, 0},
		{"interop on the NATS server and chromedp", m("interop/natstest"), []string{"github.com/nats-io/nats-server/v2/server", "github.com/chromedp/chromedp", "testing"}, 0},
		{"natsbus on nats.go", m("natsbus"), []string{"github.com/nats-io/nats.go", "github.com/nats-io/nuid"}, 0},
		{"cluster on natsbus, engine and nats.go", m("cluster"), []string{m("natsbus"), m("engine"), "github.com/nats-io/nats.go"}, 0},
		{"engine itself on nats.go", m("engine"), []string{"github.com/nats-io/nats.go"}, 1},
		{"engine itself on natsbus", m("engine"), []string{m("natsbus"), "github.com/nats-io/nats.go"}, 2},
		{"engine on cluster", m("engine"), []string{m("cluster")}, 1},
		{"natsbus on engine", m("natsbus"), []string{m("engine")}, 1},
		{"transport on nats.go", m("transport"), []string{"github.com/nats-io/nats.go"}, 1},
		{"lockstep on nats.go", m("lockstep"), []string{"github.com/nats-io/nats.go"}, 1},
		{"codec on nats.go", m("codec"), []string{"github.com/nats-io/nats.go"}, 1},
		{"wasm on nats.go", m("wasm"), []string{"github.com/nats-io/nats.go"}, 1},
		{"a program on the NATS server", m("cmd/tongbu"), []string{"github.com/nats-io/nats-server/v2/server"}, 1},
		{"an internal helper on the NATS server", m("internal/natstest"), []string{"github.com/nats-io/nats-server/v2/server"}, 1},
		{"cluster on the NATS server", m("cluster"), []string{"github.com/nats-io/nats-server/v2/server"}, 1},
		{"an internal helper on a mode", m("internal/sched"), []string{m("lockstep")}, 1},
		{"an internal helper on another", m("internal/sched"), []string{m("internal/timeq")}, 0},
		{"engine on a test kit", m("engine"), []string{m("lockstep/locksteptest")}, 1},
		{"the server binary on the movers test game", m("cmd/tongbu"), []string{m("lockstep/movers")}, 1},
		{"the server binary on replay files", m("cmd/tongbu"), []string{m("lockstep/replay"), m("lockstep"), m("codec")}, 0},
		{"the movers test game on replay files", m("lockstep/movers"), []string{m("lockstep/replay"), m("lockstep"), m("codec")}, 0},
		{"the lockstep kit on the in-memory network", m("lockstep/locksteptest"), []string{m("lockstep"), m("transport/memnet"), m("transport"), "github.com/pion/webrtc/v4"}, 0},
		{"the lockstep kit on engine", m("lockstep/locksteptest"), []string{m("engine")}, 1},

		{"benchmarks on an example", m("bench/world"), []string{m("examples/arena/game")}, 1},
		{"benchmarks on the duel's game", m("bench/rollback"), []string{m("examples/duel/game")}, 0},
		{"benchmarks on the interop tests", m("bench/replica"), []string{m("interop/natstest")}, 1},

		{"benchmarks on chromedp", m("bench/world"), []string{"github.com/chromedp/chromedp"}, 1},
		{"an unplaced directory", m("util"), nil, 1},
		{"another module", "example.com/x", []string{m("engine")}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Check(tt.pkg, tt.deps, isStd); len(got) != tt.bad {
				t.Fatalf("Check = %q, want %d violations", got, tt.bad)
			}
		})
	}
}

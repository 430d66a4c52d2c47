package layering

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLibraryGoMod: the library's go.mod, which every game server that
// imports the engine reads, requires none of the heavy dependencies of the
// examples, the benchmarks and the interop tests, and none of those modules.
func TestLibraryGoMod(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mods := requires(string(b))
	if len(mods) < 3 {
		t.Fatalf("go.mod requires only %v: the parse found too little", mods)
	}
	for _, m := range mods {
		for _, bad := range append(apartExt, Module+"/") {
			if strings.HasPrefix(m, bad) {
				t.Errorf("the library's go.mod requires %s", m)
			}
		}
	}
}

// TestServerBinaryDeps: the server binary, as built, links no example,
// benchmark or test code.
func TestServerBinaryDeps(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	out, err := exec.Command("go", "list", "-deps", Module+"/cmd/tongbu").Output()
	if err != nil {
		t.Fatal(err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list found %d dependencies: too few to be the binary's", len(deps))
	}
	for _, d := range deps {
		rel, isLocal := local(d)
		top, _, _ := strings.Cut(rel, "/")
		if d == "testing" || isLocal && slices.Contains(apart, top) {
			t.Errorf("cmd/tongbu links %s", d)
		}
		for _, bad := range apartExt {
			if strings.HasPrefix(d, bad) {
				t.Errorf("cmd/tongbu links %s", d)
			}
		}
	}
}

// requires lists the module paths a go.mod file requires.
func requires(gomod string) []string {
	var mods []string
	block := false
	for _, line := range strings.Split(gomod, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "require (":
			block = true
		case block && line == ")":
			block = false
		case block && line != "" && !strings.HasPrefix(line, "//"):
			mods = append(mods, strings.Fields(line)[0])
		case strings.HasPrefix(line, "require "):
			mods = append(mods, strings.Fields(line)[1])
		}
	}
	return mods
}

// TestBenchModuleGraph: the benchmarks' module graph holds none of the
// examples' and interop tests' heavy dependencies, nor their modules (the
// duel's game, a module of its own, aside): a bench builds without
// Ebiten or chromedp. (The cells bench runs a NATS server in its process:
// TestModuleLayering keeps it to that package.)
func TestBenchModuleGraph(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = filepath.Join("..", "..", "bench")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all in bench: %v", err)
	}
	mods := strings.Fields(string(out))
	if len(mods) < 10 {
		t.Fatalf("go list -m all found %d fields: too few", len(mods))
	}
	for _, m := range mods {
		switch {
		case m == Module+"/examples/duel/game":
		case under(m, Module+"/examples"), under(m, Module+"/interop"),
			slices.ContainsFunc(heavy, func(p string) bool { return strings.HasPrefix(m, p) }):
			t.Errorf("the bench module's graph holds %s", m)
		}
	}
}

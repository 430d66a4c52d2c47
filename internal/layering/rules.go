// Package layering states the import rules of DESIGN.md as data, so that a
// test can hold every package of the module to them.
package layering

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Module is the module path.
const Module = "github.com/tongbu/tongbu"

// rule governs the packages under one top-level directory of the module.
type rule struct {
	// allowLocal lists the module directories (relative to the module root)
	// this layer may depend on; nil means any not listed in denyLocal.
	allowLocal []string
	// denyLocal lists the module directories this layer must not reach,
	// but for those under one in exceptLocal.
	denyLocal   []string
	exceptLocal []string
	// denyImport lists the module directories this layer must not import
	// itself (it may still reach them through another package), but for
	// those under one in exceptImport.
	denyImport   []string
	exceptImport []string
	// allowExternal lists the non-standard module path prefixes this layer
	// may depend on; nil means any not listed in denyExternal.
	allowExternal []string
	denyExternal  []string
}

var (
	modes    = []string{"lockstep", "interest"}
	programs = []string{"cmd", "examples", "bench", "interop"}
	heavy    = []string{"github.com/hajimehoshi/ebiten", "github.com/chromedp"}
	// nats is for the packages that carry messages between processes
	// (natsbus, cluster) and the programs: nothing below engine, nor what
	// the browser client imports (engine, wasm).
	nats = "github.com/nats-io/"
	// natsServer is a test dependency of the interop module, and the
	// server the cells bench runs in its own process.
	natsServer = "github.com/nats-io/nats-server"
)

// The library module (this one) is what a game server imports. The
// examples, the benchmarks and the tests against outside programs are
// modules of their own (apart, below the same path), and no package of the
// library, the server binary included, may depend on them, on their heavy
// dependencies, on the testing package, or on the test kits (kits: a
// game's tests and tongbu's benches use them; nothing a server links).
var (
	apart        = []string{"examples", "bench", "interop"}
	apartExt     = append([]string{natsServer}, heavy...)
	apartStd     = []string{"testing"}
	kits         = []string{"lockstep/locksteptest", "replica/replicatest", "transport/memnet", "transport/udpimpair", "lockstep/movers"}
	libraryRules = rule{denyLocal: append(append([]string{}, apart...), kits...)}
	libraryExt   = rule{denyExternal: apartExt}
	// helpers are the internal packages that import nothing of the
	// library: foundations any layer may use.
	helpers = []string{"internal/timeq", "internal/errstack", "internal/vectorfile", "internal/hugepage", "internal/sched"}
)

// rules maps a directory to its rule; a package takes the rule of the
// longest directory it lies under. A package under a top-level directory
// with no rule is itself a violation: a new layer must be placed.
var rules = map[string]rule{
	// codec: the standard library and snappy only.
	"codec": {allowLocal: []string{"codec"}, allowExternal: []string{"github.com/golang/snappy"}},
	// transport: codec for framing, pion; nothing of the modes.
	"transport": {
		denyLocal:    append(append([]string{"engine", "wasm"}, modes...), programs...),
		denyExternal: append([]string{nats}, heavy...),
	},
	// the modes: codec and their own packages; no transport, not each other.
	"lockstep": {
		allowLocal:    []string{"lockstep", "codec"},
		allowExternal: []string{"github.com/golang/snappy", "github.com/pkg/errors"},
	},
	"interest": {
		allowLocal:    []string{"interest", "codec"},
		allowExternal: []string{"github.com/golang/snappy", "github.com/pkg/errors"},
	},
	// engine wires everything below it; nothing above, and nothing of the
	// packages that join server processes (cluster, natsbus): the server
	// binary wires those to it.
	"engine": {denyLocal: append([]string{"wasm", "cluster", "natsbus"}, programs...), denyExternal: heavy},
	// natsbus: a message bus over nats.go (and what it pulls in), nothing
	// of the library but the sealing of its messages.
	"natsbus": {allowLocal: []string{"natsbus", "internal/seal"}, denyExternal: heavy},
	// cluster: placement of rooms across server processes, over NATS; it
	// may use the engine and natsbus, not the browser glue.
	"cluster": {denyLocal: append([]string{"wasm", "replica"}, programs...), denyExternal: heavy},
	// matchmaker: matches formed from tickets, placed on the cluster over
	// NATS; no engine, modes or browser glue of its own.
	"matchmaker": {
		denyLocal:    append([]string{"wasm", "replica"}, programs...),
		denyImport:   []string{"engine", "transport", "lockstep", "interest"},
		denyExternal: heavy,
	},
	// replica sits beside the modes: codec and its own
	// packages, snappy; no transport, no modes, nothing else of engine.
	"replica": {
		allowLocal:    []string{"replica", "codec"},
		allowExternal: []string{"github.com/golang/snappy"},
	},
	// wasm is the browser glue over engine.
	"wasm": {denyLocal: programs, denyExternal: []string{"github.com/chromedp", nats}},
	// internal: helpers that import nothing else of the library (and
	// the module's own checks, which look at it from outside).
	"internal":           {allowLocal: helpers},
	"internal/fuzzcheck": {denyLocal: programs},
	"internal/layering":  {denyLocal: programs},
	// the test kits: a game's tests and the benches play matches with
	// them; they may use the library below the engine, nothing above.
	"lockstep/locksteptest": {
		allowLocal:   []string{"lockstep", "codec", "transport", "internal"},
		denyExternal: append([]string{nats}, heavy...),
	},
	"lockstep/movers": {allowLocal: []string{"lockstep", "codec"}},
	// the library's programs (the server binary, the code generator).
	"cmd": {},
	// the modules apart: their own go.mod, checked by their own builds.
	// The examples use the library as a game would: no internal package.
	// The benchmarks require neither the examples' module nor the
	// interop tests' (their heavy dependencies), but for the duel's game,
	// a module of its own; of the library's internals, only the scheduler
	// and the huge-page advisor they measure.
	"examples": {denyImport: []string{"internal"}},
	"bench": {
		denyLocal:    []string{"examples", "interop"},
		exceptLocal:  []string{"examples/duel/game"},
		denyImport:   []string{"internal"},
		exceptImport: []string{"internal/sched", "internal/hugepage", "internal/netns"},
		denyExternal: append([]string{natsServer}, heavy...),
	},
	// the cells bench places worlds on cluster nodes, the abuse bench
	// attacks a cluster, and the failover bench kills a cluster's nodes:
	// each runs a NATS server in its process, as the interop tests do;
	// the bench command links it with every scenario.
	"bench/cells":      benchWithNATS,
	"bench/failover":   benchWithNATS,
	"bench/abuse":      benchWithNATS,
	"bench/matchmaker": benchWithNATS,
	"bench/cmd":        benchWithNATS,
	"interop":          {},
}

// benchWithNATS is the bench rule but for the NATS server.
var benchWithNATS = rule{
	denyLocal:    []string{"examples", "interop"},
	exceptLocal:  []string{"examples/duel/game"},
	denyImport:   []string{"internal"},
	exceptImport: []string{"internal/sched", "internal/hugepage"},
	denyExternal: heavy,
}

// packageRules add to the rule of the top-level directory for single
// packages (relative paths), checked besides it.
var packageRules = map[string]rule{
	// engine builds for js/wasm and every client imports it: NATS stays
	// in its own packages beside it.
	"engine": {denyExternal: []string{nats}},
}

// CheckImports returns the violations of package pkg (a full import path)
// by the packages it imports itself.
func CheckImports(pkg string, imports []string) []string {
	rel, ok := local(pkg)
	if !ok {
		return nil
	}
	r, ok := ruleFor(rel)
	if !ok {
		return nil // Check says so
	}
	var bad []string
	for _, d := range imports {
		dl, ok := local(d)
		if !ok {
			continue
		}
		denied := slices.ContainsFunc(r.denyImport, func(x string) bool { return under(dl, x) }) &&
			!slices.ContainsFunc(r.exceptImport, func(x string) bool { return under(dl, x) })
		if denied {
			bad = append(bad, fmt.Sprintf("%s must not import %s", pkg, d))
		}
	}
	sort.Strings(bad)
	return bad
}

// Check returns the violations of package pkg (a full import path) with
// the given transitive dependencies. isStd tells standard-library paths.
func Check(pkg string, deps []string, isStd func(string) bool) []string {
	rel, ok := local(pkg)
	if !ok {
		return nil
	}
	top, _, _ := strings.Cut(rel, "/")
	r, ok := ruleFor(rel)
	if !ok {
		return []string{fmt.Sprintf("%s: no layering rule for top-level directory %q (add it to internal/layering)", pkg, top)}
	}
	pr, hasPR := packageRules[rel]
	inLibrary := !slices.Contains(apart, top)
	var bad []string
	for _, d := range deps {
		if isStd(d) {
			if inLibrary && slices.Contains(apartStd, d) {
				bad = append(bad, fmt.Sprintf("%s must not depend on %s (the library links no test code)", pkg, d))
			}
			continue
		}
		if dl, ok := local(d); ok {
			if !r.allowsLocal(dl) || hasPR && !pr.allowsLocal(dl) || inLibrary && !kit(rel) && !libraryRules.allowsLocal(dl) {
				bad = append(bad, fmt.Sprintf("%s must not depend on %s", pkg, d))
			}
			continue
		}
		if !r.allowsExternal(d) || hasPR && !pr.allowsExternal(d) || inLibrary && !libraryExt.allowsExternal(d) {
			bad = append(bad, fmt.Sprintf("%s must not depend on %s", pkg, d))
		}
	}
	sort.Strings(bad)
	return bad
}

// ruleFor returns the rule of the longest directory in rules that rel lies
// under.
func ruleFor(rel string) (rule, bool) {
	for dir := rel; ; {
		if r, ok := rules[dir]; ok {
			return r, true
		}
		i := strings.LastIndex(dir, "/")
		if i < 0 {
			return rule{}, false
		}
		dir = dir[:i]
	}
}

// kit reports whether rel is a test kit or inside one (a kit may use
// another).
func kit(rel string) bool {
	return slices.ContainsFunc(kits, func(k string) bool { return under(rel, k) })
}

func local(path string) (string, bool) {
	if path == Module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, Module+"/")
	return rel, ok
}

func under(path, dir string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

func (r rule) allowsLocal(dep string) bool {
	for _, d := range r.exceptLocal {
		if under(dep, d) {
			return true
		}
	}
	for _, d := range r.denyLocal {
		if under(dep, d) {
			return false
		}
	}
	if r.allowLocal == nil {
		return true
	}
	for _, d := range r.allowLocal {
		if under(dep, d) {
			return true
		}
	}
	return false
}

func (r rule) allowsExternal(dep string) bool {
	for _, p := range r.denyExternal {
		if strings.HasPrefix(dep, p) {
			return false
		}
	}
	if r.allowExternal == nil {
		return true
	}
	for _, p := range r.allowExternal {
		if under(dep, p) {
			return true
		}
	}
	return false
}

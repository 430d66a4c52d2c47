// Package fuzzcheck holds a test that every decoder of network input in
// the library is reached by a fuzz target.
package fuzzcheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"go/types"
)

// packages are the library's packages that read bytes from the network
// (or from files another process wrote), NATS included: the cluster's,
// the matchmaker's, the replica bus's, the sealing of their messages,
// and the server binary's own readers of what the cluster carries.
var packages = []string{"transport", "transport/memnet", "transport/internal/lean", "transport/internal/sctp", "transport/internal/record", "engine", "lockstep", "lockstep/replay", "interest", "replica", "cluster", "codec", "matchmaker", "natsbus", "internal/seal", "cmd/tongbu"}

// decoderName picks the functions that take bytes in: a function or
// method with a []byte parameter whose name says it reads, parses or
// takes delivery of them.
var decoderName = regexp.MustCompile(`^(?i:decode|parse|read|deliver|received|unmarshal|load|lifeKind|handle|take|accept|open|serveHTTP|authorize)`)

// allowed lists the decoders that need no fuzz target of their own, each
// with the reason.
var allowed = map[string]string{
	"cluster.Directory.ServeHTTP":             "reads nothing of the request: it writes the directory's status",
	"transport/internal/lean.hsConn.ReadFrom": "hands pion/dtls the handshake datagrams Peer.datagram queued (FuzzLeanDatagram reaches that); pion/dtls fuzzes its own parsers",
	"lockstep/replay.countReader.Read":        "counts the bytes of a file on their way to the replay Reader (FuzzReplayReader); it decodes nothing",
	"transport.probeConn.ReadFrom":            "hands each datagram to probe.Answer (FuzzAnswer, in transport/internal/probe) and the rest to pion's mux; it decodes nothing itself",
	"cmd/tongbu.portSpec.UnmarshalJSON":       "reads the operator's config file (a port or host:port), not the network",
}

// TestDecodersFuzzed fails for a decoder of network input that no fuzz
// target of its package reaches (by the calls written in the package,
// followed from the fuzz functions; a method is matched by its name).
func TestDecodersFuzzed(t *testing.T) {
	root := filepath.Join("..", "..")
	var missing []string
	for _, pkg := range packages {
		decoders, reached := scan(t, filepath.Join(root, pkg))
		for _, d := range decoders {
			key := pkg + "." + d
			if reached[funcName(d)] {
				continue
			}
			if _, ok := allowed[key]; ok {
				continue
			}
			missing = append(missing, key)
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("%s takes bytes from the network and no fuzz target reaches it: add one, or say in allowed why it needs none", m)
	}
	for key := range allowed {
		if !slices.ContainsFunc(packages, func(p string) bool { return strings.HasPrefix(key, p+".") }) {
			t.Errorf("allowed names %s, outside the packages checked", key)
		}
	}
}

// funcName is a decoder's function or method name ("Type.method" ->
// "method").
func funcName(d string) string {
	if _, m, ok := strings.Cut(d, "."); ok {
		return m
	}
	return d
}

// scan parses the package in dir (one directory, no subpackages) and
// returns its decoders ("name" or "Type.name") and the names of the
// functions its fuzz targets reach.
func scan(t *testing.T, dir string) ([]string, map[string]bool) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	calls := map[string][]string{} // function name -> names it calls
	var decoders, fuzzers []string
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		test := strings.HasSuffix(name, "_test.go")
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			fn := fd.Name.Name
			calls[fn] = append(calls[fn], called(fd.Body)...)
			switch {
			case test && strings.HasPrefix(fn, "Fuzz"):
				fuzzers = append(fuzzers, fn)
			case !test && decoderName.MatchString(fn) && takesBytes(fd.Type):
				if fd.Recv != nil && len(fd.Recv.List) == 1 {
					fn = recvName(fd.Recv.List[0].Type) + "." + fn
				}
				decoders = append(decoders, fn)
			}
		}
	}
	reached := map[string]bool{}
	for work := fuzzers; len(work) > 0; {
		fn := work[len(work)-1]
		work = work[:len(work)-1]
		for _, c := range calls[fn] {
			if !reached[c] {
				reached[c] = true
				work = append(work, c)
			}
		}
	}
	return decoders, reached
}

// called returns the names of the functions and methods a body calls or
// refers to (a function passed as a value counts: f.Fuzz(decode)).
func called(body *ast.BlockStmt) []string {
	var out []string
	ast.Inspect(body, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			switch fn := x.Fun.(type) {
			case *ast.Ident:
				out = append(out, fn.Name)
			case *ast.SelectorExpr:
				out = append(out, fn.Sel.Name)
			case *ast.IndexExpr: // a generic function
				if id, ok := fn.X.(*ast.Ident); ok {
					out = append(out, id.Name)
				}
			}
			for _, a := range x.Args {
				if id, ok := a.(*ast.Ident); ok {
					out = append(out, id.Name)
				}
			}
		case *ast.FuncLit:
			// walked as part of the body
		}
		return true
	})
	return out
}

// takesBytes reports whether a function has a parameter that carries
// bytes from the network: []byte, a codec.Reader, an HTTP request, or a
// batch of them.
func takesBytes(ft *ast.FuncType) bool {
	for _, p := range ft.Params.List {
		if inputTypes[types.ExprString(p.Type)] {
			return true
		}
	}
	return false
}

// inputTypes are the parameter types (as written) that carry input.
var inputTypes = map[string]bool{
	"[]byte": true, "[][]byte": true,
	"*codec.Reader": true, "*Reader": true,
	"*http.Request": true,
	"[]Uplink":      true,
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// TestScan runs the check's scan on a small package: it finds the
// functions that take bytes in, not the encoders, and follows calls from
// the fuzz target through other functions and to methods.
func TestScan(t *testing.T) {
	decoders, reached := scan(t, filepath.Join("testdata", "sample"))
	slices.Sort(decoders)
	if want := []string{"decodeForgotten", "decodeIndirect", "decodeReached", "msg.parse"}; !slices.Equal(decoders, want) {
		t.Fatalf("decoders %v, want %v", decoders, want)
	}
	for d, want := range map[string]bool{"decodeReached": true, "decodeIndirect": true, "parse": true, "decodeForgotten": false} {
		if reached[d] != want {
			t.Errorf("%s reached %v, want %v", d, reached[d], want)
		}
	}
}

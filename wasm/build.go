//go:build !js

package wasm

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/andybalholm/brotli"
)

// Build compiles the main package pkg (an import path or a directory) for
// GOOS=js GOARCH=wasm into dir/name, without symbol tables or local paths,
// writes brotli and gzip copies beside it (dir/name.br and dir/name.gz,
// which Files serves to browsers that accept them), and copies wasm_exec.js from the same Go
// installation into dir. It uses the go command on PATH (or GOROOT's),
// whose build cache makes a rebuild with no changes take a second or two.
func Build(ctx context.Context, dir, name, pkg string) error {
	return BuildAll(ctx, dir, Target{Name: name, Pkg: pkg})
}

// Target is a browser client for BuildAll: the file to write in the
// directory and the main package to build.
type Target struct {
	Name string // file name, such as "game.wasm"
	Pkg  string // import path or directory of the main package
}

// BuildAll builds several clients into dir as Build builds one: one go
// command compiles every package they need, each once and on every core,
// then each client is linked and compressed side by side.
func BuildAll(ctx context.Context, dir string, targets ...Target) error {
	goCmd, err := goTool()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if len(targets) > 1 {
		// Compile them together first (the results land in the build
		// cache): separate go commands would each compile what they
		// share, at the same time.
		pkgs := make([]string, len(targets))
		for i, t := range targets {
			pkgs[i] = t.Pkg
		}
		if err := goBuild(ctx, goCmd, append([]string{"build", "-trimpath"}, pkgs...)); err != nil {
			return err
		}
	}
	errs := make(chan error, len(targets))
	for _, t := range targets {
		go func() {
			out := filepath.Join(dir, t.Name)
			err := goBuild(ctx, goCmd, []string{"build", "-trimpath", "-ldflags=-s -w", "-o", out, t.Pkg})
			if err == nil {
				err = compressChanged(out)
			}
			errs <- err
		}()
	}
	for range targets {
		if e := <-errs; err == nil {
			err = e
		}
	}
	if err != nil {
		return err
	}
	return copyWasmExec(ctx, goCmd, dir)
}

// goBuild runs the go command with args for GOOS=js GOARCH=wasm.
func goBuild(ctx context.Context, goCmd string, args []string) error {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("wasm: go %s: %v\n%s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// goTool finds the go command: $GOROOT/bin/go when GOROOT is set, else
// the one on PATH.
func goTool() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("wasm: the go command is needed to build the browser clients: %w", err)
	}
	return p, nil
}

// copyWasmExec copies the wasm_exec.js of goCmd's installation into dir:
// the loader must match the compiler that built the WASM file.
func copyWasmExec(ctx context.Context, goCmd, dir string) error {
	root, err := exec.CommandContext(ctx, goCmd, "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("wasm: go env GOROOT: %w", err)
	}
	r := strings.TrimSpace(string(root))
	var src []byte
	for _, p := range []string{filepath.Join(r, "lib", "wasm", "wasm_exec.js"), filepath.Join(r, "misc", "wasm", "wasm_exec.js")} {
		if src, err = os.ReadFile(p); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("wasm: wasm_exec.js not found in %s: %w", r, err)
	}
	return os.WriteFile(filepath.Join(dir, "wasm_exec.js"), src, 0o644)
}

// brotliQuality is the brotli level Build uses: the demo's pages come to
// 4.4 MB with it against 5.4 with gzip's best (levels 10 and 11 switch to
// brotli's far slower optimal parsing).
const brotliQuality = 9

// Under the race detector (the tests' builds, never a server's) brotli at
// brotliQuality and gzip at its best took 3 m 40 s for the demo's three
// clients, most of the browser tests' time; there both use faster levels
// (56 s), whose files are larger (a demo page 5.0 MB with brotli and 5.5
// with gzip on the wire, against 4.4 and 5.4), so that a page-weight test
// passed under the race detector holds for the files a server serves too.
const (
	raceBrotliQuality = 4
	raceGzipLevel     = gzip.DefaultCompression
)

// levels returns the brotli and gzip levels Build compresses with.
func levels() (brotliLevel, gzipLevel int) {
	if raceBuild {
		return raceBrotliQuality, raceGzipLevel
	}
	return brotliQuality, gzip.BestCompression
}

// compressChanged compresses path as compressFiles does unless its
// compressed copies are already of these bytes: path.sum holds the
// SHA-256 of what they were made from, written once both are in place. A
// rebuild with no change then takes the link's second or two, not the
// compressor's several seconds a client.
func compressChanged(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(src)
	want := hex.EncodeToString(sum[:])
	if had, err := os.ReadFile(path + ".sum"); err == nil && string(had) == want && fileExists(path+".br") && fileExists(path+".gz") {
		return nil
	}
	if err := compressFiles(path, src); err != nil {
		return err
	}
	return os.WriteFile(path+".sum", []byte(want), 0o644)
}

// compressFiles writes path.gz and path.br, path compressed with gzip and
// with brotli at the levels levels gives, each through a temporary file so
// that a server never serves half of one. The two run side by side.
func compressFiles(path string, src []byte) error {
	bl, gl := levels()
	errs := make(chan error, 1)
	go func() {
		errs <- writeCompressed(path+".br", src, func(w io.Writer) io.WriteCloser {
			return brotli.NewWriterLevel(w, bl)
		})
	}()
	err := writeCompressed(path+".gz", src, func(w io.Writer) io.WriteCloser {
		zw, _ := gzip.NewWriterLevel(w, gl) // a valid level: no error
		return zw
	})
	if berr := <-errs; err == nil {
		err = berr
	}
	return err
}

// writeCompressed writes src to dst through the compressor z makes.
func writeCompressed(dst string, src []byte, z func(io.Writer) io.WriteCloser) error {
	tmp := dst + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	zw := z(f)
	_, err = zw.Write(src)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("wasm: writing %s: %w", dst, err)
	}
	return os.Rename(tmp, dst)
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

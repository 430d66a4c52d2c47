//go:build !js

package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

// modulePrefix is the import path of the repository's modules.
const modulePrefix = "github.com/tongbu/tongbu"

// runFromCheckout builds the program pkg of the module named module
// (examples, bench) of the repository checkout that holds the working
// directory, runs it with args in the working directory, and returns its
// exit status. The demo and the benchmarks are programs of their own
// modules, with dependencies (Ebiten, chromedp) that the server binary must
// not carry, so tongbu starts them rather than linking them.
func runFromCheckout(module, pkg string, args []string, stdout, stderr io.Writer) int {
	dir, err := findModule(module)
	if err != nil {
		fmt.Fprintf(stderr, "tongbu: %v\n", err)
		return 2
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		fmt.Fprintf(stderr, "tongbu: the go command builds the %s module: %v\n", module, err)
		return 2
	}
	tmp, err := os.MkdirTemp("", "tongbu-"+module+"-")
	if err != nil {
		fmt.Fprintf(stderr, "tongbu: %v\n", err)
		return 1
	}
	defer os.RemoveAll(tmp)
	exe := filepath.Join(tmp, filepath.Base(pkg))
	build := exec.Command(goCmd, "build", "-o", exe, pkg)
	build.Dir = dir
	build.Stdout = stderr
	build.Stderr = stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "tongbu: go build %s in %s: %v\n", pkg, dir, err)
		return 1
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdin = os.Stdin
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	// The program decides when to stop: Ctrl-C reaches it from the
	// terminal as it reaches tongbu, and tongbu waits for it to finish
	// (removing the build it ran from) instead of dying first and leaving
	// the build behind. A SIGTERM sent to tongbu alone is passed on.
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "tongbu: %s: %v\n", pkg, err)
		return 1
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGTERM {
				cmd.Process.Signal(sig)
			}
		}
	}()
	err = cmd.Wait()
	signal.Stop(sigs)
	close(sigs)
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() > 0 {
			return exit.ExitCode()
		}
		fmt.Fprintf(stderr, "tongbu: %s: %v\n", pkg, err)
		return 1
	}
	return 0
}

// findModule looks for the directory of module (examples/go.mod naming
// github.com/tongbu/tongbu/examples, say) in the working directory and its
// parents.
func findModule(module string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	want := modulePrefix + "/" + module
	for d := wd; ; {
		if name, err := moduleName(filepath.Join(d, module, "go.mod")); err == nil && name == want {
			return filepath.Join(d, module), nil
		}
		if name, err := moduleName(filepath.Join(d, "go.mod")); err == nil && name == want {
			return d, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", fmt.Errorf("the %s module (%s) is not in %s or above it: run this command from a checkout of the tongbu repository", module, want, wd)
		}
		d = parent
	}
}

// moduleName reads the module path from a go.mod file.
func moduleName(gomod string) (string, error) {
	f, err := os.Open(gomod)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`), nil
		}
	}
	return "", fmt.Errorf("%s names no module", gomod)
}

// Package browser runs tongbu's browser tests: it builds WASM programs,
// serves them with the Go installation's wasm_exec.js, and drives headless
// Chromium with the flags that work on a loopback-only machine.
package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/chromedp"
)

// ErrNoBrowser is returned when no Chromium is installed.
var ErrNoBrowser = errors.New("browser: no chromium found (apt-get install chromium)")

// Path returns the Chromium executable.
func Path() (string, error) {
	for _, p := range []string{os.Getenv("TONGBU_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p, nil
	}
	return "", ErrNoBrowser
}

// flags are Chromium's command line in the tests: headless, no sandbox
// (root), nothing that reaches out to Google's hosts, WebRTC on loopback
// with plain addresses (no mDNS names), WebGL in software.
var flags = []string{
	"--headless", "--hide-scrollbars", "--mute-audio", "--no-sandbox", "--disable-gpu",
	"--no-first-run", "--no-default-browser-check",
	"--disable-quic", "--disable-background-networking", "--disable-component-update", "--disable-sync",
	"--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
	"--enable-unsafe-swiftshader",
}

// New starts headless Chromium with a fresh profile in userDir, and the
// extra flags given, and returns a chromedp context for one tab. Cancel it to stop the browser. With an
// empty userDir the profile goes in a temporary directory that stopping
// removes, once Chromium's helper processes have let go of it (a test's
// TempDir can fail its cleanup while they are still writing).
func New(ctx context.Context, userDir string, extra ...chromedp.ExecAllocatorOption) (context.Context, context.CancelFunc, error) {
	exe, err := Path()
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() {}
	if userDir == "" {
		dir, err := os.MkdirTemp("", "tongbu-chromium-")
		if err != nil {
			return nil, nil, err
		}
		userDir = dir
		cleanup = func() { removeProfile(dir) }
	}
	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(exe), chromedp.UserDataDir(userDir)}
	for _, f := range flags {
		name, value, ok := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		if ok {
			opts = append(opts, chromedp.Flag(name, value))
		} else {
			opts = append(opts, chromedp.Flag(name, true))
		}
	}
	opts = append(opts, extra...)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	tctx, cancelTab := chromedp.NewContext(actx)
	if err := chromedp.Run(tctx); err != nil { // start the browser now
		cancelTab()
		cancelAlloc()
		cleanup()
		return nil, nil, fmt.Errorf("browser: starting %s: %w", exe, err)
	}
	return tctx, func() { cancelTab(); cancelAlloc(); cleanup() }, nil
}

// removeProfile removes a browser's profile directory, once its helper
// processes, which may still be writing for a moment, have let go of it.
func removeProfile(dir string) {
	for range 20 {
		if os.RemoveAll(dir) == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// BuildWasm builds the package at pkg (an import path or directory) for
// GOOS=js GOARCH=wasm into dir and returns the path of the .wasm file.
func BuildWasm(dir, pkg string) (string, error) {
	out := filepath.Join(dir, "main.wasm")
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("browser: building %s for js/wasm: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// WasmExecJS returns the path of wasm_exec.js in the local Go installation.
func WasmExecJS() (string, error) {
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return "", fmt.Errorf("browser: go env GOROOT: %w", err)
	}
	root := strings.TrimSpace(string(out))
	for _, p := range []string{filepath.Join(root, "lib", "wasm", "wasm_exec.js"), filepath.Join(root, "misc", "wasm", "wasm_exec.js")} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("browser: no wasm_exec.js under %s", root)
}

// LoaderPage is a minimal page that runs main.wasm with wasm_exec.js.
const LoaderPage = `<!doctype html>
<html><head><meta charset="utf-8"><title>tongbu test</title></head>
<body><script src="wasm_exec.js"></script><script>
const go = new Go();
WebAssembly.instantiateStreaming(fetch("main.wasm"), go.importObject)
  .then(r => go.run(r.instance))
  .catch(e => { window.tongbuResult = "error: " + e; });
</script></body></html>
`

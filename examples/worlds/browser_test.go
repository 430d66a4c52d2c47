//go:build !js

package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/interop/browser"
)

// TestWorldsInBrowser plays the example's page in Chromium: the player
// joins the field's west cell on node a, walks east by clicks, and the
// page follows it to the east cell on node b and says so.
func TestWorldsInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err) // CI installs chromium: a missing one is a broken set-up
		}
		t.Skip(err)
	}
	assets := t.TempDir()
	// Built and served uncompressed: the compressor, in a test binary
	// built with the race detector, would take a minute.
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(assets, "worlds.wasm"), "github.com/tongbu/tongbu/examples/worlds/web")
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm", "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the browser client: %v\n%s", err, out)
	}
	execJS, err := browser.WasmExecJS()
	if err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(execJS)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(assets, "wasm_exec.js"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	e := startExample(t, 0, assets) // no bots: the page alone
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bctx, stop, err := browser.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	host := func(u string) string { p, _ := url.Parse(u); return p.Host }
	var ok bool
	if err := chromedp.Run(bctx, chromedp.Navigate(e.lobby.url+"/?name=web"),
		chromedp.Poll(`window.tongbuMMO && tongbuMMO.ready && tongbuMMO.where.startsWith("field#0")`, &ok,
			chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		var errText string
		chromedp.Run(bctx, chromedp.Evaluate(`String(window.tongbuError || document.body.innerText)`, &errText))
		t.Fatalf("the page did not join the west cell: %v (page says %q)", err, errText)
	}
	var where string
	chromedp.Run(bctx, chromedp.Evaluate(`tongbuMMO.where`, &where))
	if !strings.Contains(where, host(e.a.url)) {
		t.Fatalf("the page says it is on %q, want node a's %s", where, host(e.a.url))
	}
	// Click to the right of the player (drawn in the middle) until the
	// page is on the east cell: a few clicks take it over the border.
	var w, h float64
	chromedp.Run(bctx, chromedp.Evaluate(`window.innerWidth`, &w), chromedp.Evaluate(`window.innerHeight`, &h))
	x, y := w-20, h/2
	deadline := time.Now().Add(90 * time.Second)
	for !strings.HasPrefix(where, "field#1") {
		if time.Now().After(deadline) {
			var st map[string]any
			chromedp.Run(bctx, chromedp.Evaluate(`tongbuMMO`, &st))
			t.Fatalf("the page did not follow its player east in 90 s: %v", st)
		}
		if err := chromedp.Run(bctx,
			input.DispatchMouseEvent(input.MousePressed, x, y).WithButton(input.Left).WithClickCount(1),
			chromedp.Sleep(80*time.Millisecond),
			input.DispatchMouseEvent(input.MouseReleased, x, y).WithButton(input.Left).WithClickCount(1),
			chromedp.Sleep(time.Second),
			chromedp.Evaluate(`tongbuMMO.where`, &where)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(where, host(e.b.url)) {
		t.Fatalf("the page says it is on %q, want node b's %s", where, host(e.b.url))
	}
	t.Logf("the page: %s", where)

	// A rolling restart while the page plays: each node in turn is
	// drained (its cells and town lines move to the other node, with
	// their players), stopped, and started again with its config; the
	// page follows its cell to the other node each time, with no reload.
	for _, which := range []**node{&e.b, &e.a} {
		old := *which
		other := e.a
		if old == e.a {
			other = e.b
		}
		var frame int
		chromedp.Run(bctx, chromedp.Evaluate(`tongbuMMO.frame`, &frame))
		old.drain()
		old.Close()
		cond := fmt.Sprintf(`tongbuMMO.ready && tongbuMMO.where.startsWith("field#1") && tongbuMMO.where.includes(%q) && tongbuMMO.frame > %d`,
			host(other.url), frame+32)
		if err := chromedp.Run(bctx, chromedp.Poll(cond, &ok, chromedp.WithPollingTimeout(30*time.Second))); err != nil {
			var st map[string]any
			chromedp.Run(bctx, chromedp.Evaluate(`tongbuMMO`, &st))
			t.Fatalf("the page did not follow its cell from node %s to node %s: %v (page: %v)", old.cfg.ID, other.cfg.ID, err, st)
		}
		chromedp.Run(bctx, chromedp.Evaluate(`tongbuMMO.where`, &where))
		t.Logf("node %s drained: the page is on %s", old.cfg.ID, where)
		n, err := startNode(old.cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(n.Close)
		*which = n
		waitFor(t, "node "+old.cfg.ID+" back", func() bool { return len(e.lobby.dir.Nodes()) >= 2 && nodeAlive(e.lobby.dir, old.cfg.ID) })
	}
}

// waitFor waits up to 15 s for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 15 s", what)
		}
	}
}

// nodeAlive reports whether the directory has node id alive, not draining.
func nodeAlive(d *cluster.Directory, id string) bool {
	for _, n := range d.Nodes() {
		if n.ID == id && n.Alive && !n.Draining {
			return true
		}
	}
	return false
}

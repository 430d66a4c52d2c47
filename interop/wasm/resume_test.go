//go:build linux

package wasm_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/wasm"
)

// TestResumeInBrowser: a page in Chromium whose network goes away (every
// packet dropped, both ways, for longer than the idle timeout) and comes
// back resumes its connection by itself, with the credential the server
// gave it: the JavaScript API says "reconnecting", then "connected" with
// one resume, and the page has the same entity of the world as before.
// Chromium runs in a network namespace, whose link the test cuts.
func TestResumeInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ns := netns.ForTest(t, netns.Options{})
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := wasm.Build(ctx, dir, "jsclient.wasm", "github.com/tongbu/tongbu/wasm/jsclient"); err != nil {
		t.Fatal(err)
	}
	host := ns.Host.String()
	// A 4 s idle timeout, on both sides: the page notices the cut sooner.
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), UDPAddr: host + ":0",
		AllowedOrigins: []string{"*"}, Assets: http.FileServer(http.Dir(dir)), Limits: transport.Limits{IdleTimeout: 4 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := srv.CreateWorld("field", engine.WorldConfig{Interest: interest.Config{Width: 8, Height: 8}}); err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx)
	ticket, _ := srv.Ticket("page", "field", engine.RolePlayer, time.Minute)
	page := strings.Replace(string(wasm.Page("resume", "jsclient.wasm")), "</body>", fmt.Sprintf(`<script>
window.onTongbuReady = async () => { window.mode = await tongbu.connect(location.origin, %q, {idleTimeoutMs: 4000}); };
</script></body>`, ticket), 1)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644)
	ln, err := net.Listen("tcp", host+":0")
	if err != nil {
		t.Fatal(err)
	}
	web := &http.Server{Handler: srv.Handler()}
	go web.Serve(ln)
	defer web.Close()

	bctx, stop, err := browser.NewIn(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	type status struct {
		State, Error  string
		Self, Resumes int
		AwayMs        float64
	}
	var st status
	wait := func(what, cond string, d time.Duration) {
		t.Helper()
		var ok bool
		if err := chromedp.Run(bctx, chromedp.Poll(cond, &ok, chromedp.WithPollingTimeout(d))); err != nil {
			chromedp.Run(bctx, chromedp.Evaluate(`window.tongbu && tongbu.status()`, &st))
			t.Fatalf("%s: %v; status %+v", what, err, st)
		}
		chromedp.Run(bctx, chromedp.Evaluate(`tongbu.status()`, &st))
	}
	if err := chromedp.Run(bctx, chromedp.Navigate(fmt.Sprintf("http://%s/index.html", ln.Addr()))); err != nil {
		t.Fatal(err)
	}
	wait("joining", `window.mode === "interest" && tongbu.status().frame > 16`, 90*time.Second)
	self := st.Self
	if err := ns.Cut(true); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	wait("noticing", `tongbu.status().state === "reconnecting"`, 40*time.Second)
	t.Logf("the page noticed after %v: %s", time.Since(cutAt).Round(100*time.Millisecond), st.Error)
	time.Sleep(2 * time.Second) // still down: its first dials fail
	if err := ns.Cut(false); err != nil {
		t.Fatal(err)
	}
	wait("resuming", `tongbu.status().state === "connected" && tongbu.status().resumes === 1`, 40*time.Second)
	if st.Self != self {
		t.Errorf("entity %d after resuming, was %d", st.Self, self)
	}
	t.Logf("resumed: away %.0f ms, entity %d", st.AwayMs, st.Self)
	// The server took the page back to the entity it held for it.
	resp, err := http.Get(fmt.Sprintf("http://%s/metrics", ln.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(metrics), "\ntongbu_world_resumes_total 1\n") {
		t.Errorf("the server resumed no held entity:\n%s", metrics)
	}
	wait("playing on", fmt.Sprintf(`tongbu.status().frame > %d`, 16), 10*time.Second)
}

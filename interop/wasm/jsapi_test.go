//go:build !js

package wasm_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/wasm"
)

// TestJSAPI builds the jsclient program, loads it in headless Chromium
// and drives a lockstep room through the JavaScript API: connect, input,
// status, stats, close.
func TestJSAPI(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := wasm.Build(ctx, dir, "jsclient.wasm", "github.com/tongbu/tongbu/wasm/jsclient"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "wasm_exec.js")); err != nil {
		t.Fatal("Build did not copy wasm_exec.js: ", err)
	}
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), UDPAddr: "127.0.0.1:0",
		IncludeLoopback: true, AllowedOrigins: []string{"*"}, Assets: http.FileServer(http.Dir(dir))})
	if err != nil {
		t.Fatal(err)
	}
	srv.CreateRoom("r", lockstep.Config{Players: 1})
	go srv.Serve(ctx)
	ticket, _ := srv.Ticket("page", "r", engine.RolePlayer, time.Minute)
	page := strings.Replace(string(wasm.Page("js api", "jsclient.wasm")), "</body>", fmt.Sprintf(`<script>
window.onTongbuReady = async () => {
  window.mode = await tongbu.connect(location.origin, %q);
  setInterval(() => tongbu.input(new Uint8Array([7])), 66);
};
</script></body>`, ticket), 1)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644)
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	bctx, stop, err := browser.New(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var ok bool
	if err := chromedp.Run(bctx, chromedp.Navigate(web.URL+"/index.html"),
		chromedp.Poll(`window.mode === "lockstep" && tongbu.stats().recvMessages > 30`, &ok, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		var st any
		chromedp.Run(bctx, chromedp.Evaluate(`window.tongbu && tongbu.status()`, &st))
		t.Fatalf("%v; status %v", err, st)
	}
	var st struct {
		State, Mode, Target string
		Slot, Frame         int
	}
	var stats struct{ RecvMessages, SentMessages float64 }
	chromedp.Run(bctx, chromedp.Evaluate(`tongbu.status()`, &st), chromedp.Evaluate(`tongbu.stats()`, &stats))
	if st.State != "connected" || st.Target != "r" || stats.RecvMessages < 30 || stats.SentMessages < 10 {
		t.Fatalf("status %+v, stats %+v", st, stats)
	}
	r, _ := srv.Room("r")
	if p := r.PlayerStats(0); p.Inputs == 0 {
		t.Fatalf("the page's inputs never reached the room: %+v", p)
	}
	// The page measures its node's region over UDP on the game's port
	// (STUN probes), and a node that is not there comes back with an
	// error.
	var regions []struct {
		Region, Over, Error string
		RttMs, Loss         float64
	}
	if err := chromedp.Run(bctx, chromedp.Evaluate(`tongbu.measureRegions([{region: "here", url: location.origin}, {region: "gone", url: "http://127.0.0.1:1"}], {pings: 5})`,
		&regions, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })); err != nil {
		t.Fatal(err)
	}
	if len(regions) != 2 || regions[0].Region != "here" || regions[0].Over != "udp" || regions[0].RttMs <= 0 || regions[0].RttMs > 100 || regions[0].Error != "" || regions[1].Error == "" {
		t.Fatalf("regions measured by the page: %+v", regions)
	}
	t.Logf("the page measured %+v", regions)
	chromedp.Run(bctx, chromedp.Evaluate(`tongbu.close()`, nil))
	for end := time.Now().Add(30 * time.Second); r.Connected() != 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("tongbu.close() did not release the connection on the server")
		}
	}
}

//go:build linux

package wasm_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/internal/netns"
	"github.com/tongbu/tongbu/interop/browser"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/wasm"
)

// TestFailoverInBrowser: a page in Chromium plays a lockstep match (the
// WASM client) with a Go player; the room's server stops cutting (as a
// server that lost its lease does, or died) and a standby server, which
// kept the room's frames, continues the match: the page notices the
// silence, follows the match there by itself with the credentials the
// first server gave it, keeps its state, and plays on, as does the Go
// player, whose frames are gapless.
func TestFailoverInBrowser(t *testing.T) {
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
	secret := []byte("0123456789abcdef")
	start := func() (*engine.Server, string) {
		srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: host + ":0", AllowedOrigins: []string{"*"},
			Assets: http.FileServer(http.Dir(dir))})
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(ctx)
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		web := &http.Server{Handler: srv.Handler()}
		go web.Serve(ln)
		t.Cleanup(func() { web.Close() })
		return srv, "http://" + ln.Addr().String()
	}
	a, urlA := start()
	b, urlB := start()
	cfg := lockstep.Config{Players: 2, Hz: 20}
	room, err := a.CreateRoom("duo", cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The standby's copy of the room, kept from its feed.
	var mu sync.Mutex
	var state engine.RoomState
	seats := map[string]engine.SeatRecord{}
	stopped := false
	room.Feed(engine.RoomFeed{
		Frame: func(start time.Time, f lockstep.EncodedFrame) {
			mu.Lock()
			defer mu.Unlock()
			f.Full = append([]byte(nil), f.Full...)
			state.Start, state.Frames = start, append(state.Frames, f)
		},
		Seat:   func(s engine.SeatRecord) { mu.Lock(); seats[s.Player] = s; mu.Unlock() },
		MayCut: func() bool { mu.Lock(); defer mu.Unlock(); return !stopped },
	})
	room.SetStandby(urlB)

	pageTicket, _ := a.Ticket("page", "duo", engine.RolePlayer, time.Minute)
	page := strings.Replace(string(wasm.Page("failover", "jsclient.wasm")), "</body>", fmt.Sprintf(`<script>
window.onTongbuReady = async () => {
  window.mode = await tongbu.connect(%q, %q, {});
  setInterval(() => tongbu.input(new Uint8Array([1, 2])), 50);
};
</script></body>`, urlA, pageTicket), 1)
	os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644)
	// The Go player, outside the page's namespace.
	goTicket, _ := a.Ticket("gopher", "duo", engine.RolePlayer, time.Minute)
	gc, err := engine.Dial(ctx, urlA, goTicket, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer gc.Close()
	var gmu sync.Mutex
	var frames []int
	var gerr error
	go func() {
		for ctx.Err() == nil {
			time.Sleep(5 * time.Millisecond)
			now := time.Now()
			gmu.Lock()
			if err := gc.Update(now); err != nil {
				gerr = err
				gmu.Unlock()
				return
			}
			for _, f := range gc.Lockstep().Advance(now).Frames {
				frames = append(frames, f.Number)
				gc.Lockstep().Input(now, []byte{9})
			}
			gmu.Unlock()
		}
	}()

	bctx, stop, err := browser.NewIn(ctx, ns)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	type status struct {
		State, Error string
		Frame        int
		Resumes      int
		AwayMs       float64
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
	if err := chromedp.Run(bctx, chromedp.Navigate(urlA+"/index.html")); err != nil {
		t.Fatal(err)
	}
	wait("playing on the first server", `window.mode === "lockstep" && tongbu.status().frame > 40`, 90*time.Second)

	// The first server stops; the standby continues from its copy,
	// which lacks the newest frames.
	mu.Lock()
	stopped = true
	mu.Unlock()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	st0 := state
	st0.Frames = append([]lockstep.EncodedFrame(nil), state.Frames[:len(state.Frames)-2]...)
	for _, s := range seats {
		st0.Seats = append(st0.Seats, s)
	}
	mu.Unlock()
	cut := len(state.Frames)
	if _, err := b.RestoreRoom("duo", cfg, st0); err != nil {
		t.Fatal(err)
	}
	wait("playing on the standby", fmt.Sprintf(`tongbu.status().frame > %d && tongbu.status().resumes === 1`, cut+40), 30*time.Second)
	t.Logf("the page went on on the standby after %.0f ms away", st.AwayMs)
	if st.State != "connected" {
		t.Errorf("page status %+v", st)
	}
	gmu.Lock()
	defer gmu.Unlock()
	if gerr != nil {
		t.Fatalf("the Go player: %v", gerr)
	}
	for i, n := range frames {
		if n != i {
			t.Fatalf("the Go player ran frame %d as its %dth", n, i)
		}
	}
	if len(frames) <= cut {
		t.Fatalf("the Go player ran %d frames, the first server cut %d", len(frames), cut)
	}
}

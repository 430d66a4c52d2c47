//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/tongbu/tongbu/interop/browser"
)

// demoUnderTest builds the browser clients once per test binary and
// starts a demo server on loopback.
type demoUnderTest struct {
	d   *demo
	web *httptest.Server

	mu        sync.Mutex
	botHashes map[string]map[int]uint64 // room -> frame -> hash
}

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

func startDemo(t *testing.T) *demoUnderTest {
	t.Helper()
	return startDemoAt(t, "")
}

// startDemoAt is startDemo with the pages, the signaling and ICE-TCP
// served at host (UDP on every interface); "" is loopback, with no TCP.
func startDemoAt(t *testing.T, host string) *demoUnderTest {
	t.Helper()
	if _, err := browser.Path(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err) // CI installs chromium: a missing one is a broken set-up
		}
		t.Skip(err)
	}
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "tongbu-demo-")
		if buildErr == nil {
			buildErr = buildDemoClients(context.Background(), buildDir)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	cfg := demoConfig{UDP: 0, Assets: buildDir, NoBuild: true, NPCs: 1500, MMOBots: 16,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if host != "" {
		cfg.TCP = host + ":0"
	}
	d, err := newDemo(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u := &demoUnderTest{d: d, botHashes: map[string]map[int]uint64{}}
	d.botFrame = func(room string, slot, frame int, hash uint64) {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.botHashes[room] == nil {
			u.botHashes[room] = map[int]uint64{}
		}
		if h, ok := u.botHashes[room][frame]; ok && h != hash {
			t.Errorf("room %s frame %d: the bots disagree (%016x, %016x)", room, frame, h, hash)
		}
		u.botHashes[room][frame] = hash
	}
	u.web = httptest.NewUnstartedServer(d.srv.Handler())
	if host != "" {
		ln, err := net.Listen("tcp", host+":0")
		if err != nil {
			t.Fatal(err)
		}
		u.web.Listener.Close()
		u.web.Listener = ln
	}
	u.web.Start()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.srv.Serve(ctx); close(served) }()
	t.Cleanup(func() {
		cancel()
		<-served
		d.stop()
		u.web.Close()
	})
	return u
}

func (u *demoUnderTest) metric(t *testing.T, name string) string {
	resp, err := http.Get(u.web.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// humanStrikes is the strikes of human players the MMO world resolved,
// from /demo/status (-1 while the world does not say).
func (u *demoUnderTest) humanStrikes(t *testing.T) int64 {
	resp, err := http.Get(u.web.URL + "/demo/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st struct{ MMO *struct{ HumanStrikes int64 } }
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("/demo/status: %v", err)
	}
	if st.MMO == nil {
		return -1
	}
	return st.MMO.HumanStrikes
}

// openPage starts a browser of its own (so that no page is a throttled
// background tab) on path and waits until the expression is true.
func openPage(t *testing.T, ctx context.Context, url, ready string) (context.Context, context.CancelFunc) {
	t.Helper()
	return openPageWith(t, ctx, url, ready, func(ctx context.Context) (context.Context, context.CancelFunc, error) {
		return browser.New(ctx, "")
	})
}

// openPageWith is openPage with the browser start gives.
func openPageWith(t *testing.T, ctx context.Context, url, ready string, start func(context.Context) (context.Context, context.CancelFunc, error)) (context.Context, context.CancelFunc) {
	t.Helper()
	bctx, stop, err := start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ok bool
	if err := chromedp.Run(bctx, chromedp.Navigate(url),
		chromedp.Poll(ready, &ok, chromedp.WithPollingTimeout(90*time.Second))); err != nil {
		var errText string
		chromedp.Run(bctx, chromedp.Evaluate(`String(window.tongbuError || (window.tongbuArena && tongbuArena.error) || document.body.innerText)`, &errText))
		stop()
		t.Fatalf("%s: %v (page says %q)", url, err, errText)
	}
	return bctx, stop
}

// sameHashes reads a page's state hashes by frame (a JavaScript object of
// 16-hex-digit strings) and fails t unless each frame the room's bots
// also hashed has the bots' hash. It returns the frames compared, added
// to seen when it is not nil.
func (u *demoUnderTest) sameHashes(t *testing.T, page context.Context, expr, room, who string, seen map[int]bool) map[int]bool {
	t.Helper()
	var hashes map[string]string
	if err := chromedp.Run(page, chromedp.Evaluate(expr, &hashes)); err != nil {
		t.Fatal(err)
	}
	if seen == nil {
		seen = map[int]bool{}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, h := range hashes {
		var n int
		fmt.Sscan(k, &n)
		if bh, ok := u.botHashes[room][n]; ok {
			if fmt.Sprintf("%016x", bh) != h {
				t.Fatalf("%s frame %d: hash %s, the bots' %016x", who, n, h, bh)
			}
			seen[n] = true
		}
	}
	return seen
}

// notBlank fails unless a screenshot of the page has many distinct colours.
func notBlank(t *testing.T, bctx context.Context, what string) {
	t.Helper()
	var shot []byte
	if err := chromedp.Run(bctx, chromedp.CaptureScreenshot(&shot)); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 8 {
		t.Fatalf("%s: the screenshot (%v) has %d colours: blank", what, b.Size(), len(colours))
	}
}

// TestArenaInBrowser: two browser pages join one arena room with its two
// bots; for 15 s every frame hash the pages report equals the bots'.
func TestArenaInBrowser(t *testing.T) {
	u := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, stopA := openPage(t, ctx, u.web.URL+"/arena.html", `window.tongbuArena && tongbuArena.frame > 15`)
	b, stopB := openPage(t, ctx, u.web.URL+"/arena.html", `window.tongbuArena && tongbuArena.frame > 15`)
	var slotA, slotB int
	chromedp.Run(a, chromedp.Evaluate(`tongbuArena.slot`, &slotA))
	chromedp.Run(b, chromedp.Evaluate(`tongbuArena.slot`, &slotB))
	if slotA == slotB {
		t.Fatalf("both pages in slot %d", slotA)
	}
	if got := u.metric(t, "tongbu_rooms"); got != "1" {
		t.Fatalf("%s arena rooms for two pages, want 1", got)
	}
	compared := 0
	room := "arena-1"
	for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(3 * time.Second) {
		for i, page := range []context.Context{a, b} {
			compared += len(u.sameHashes(t, page, `tongbuArena.hashes`, room, fmt.Sprint("page ", i), nil))
		}
	}
	var frame int
	chromedp.Run(a, chromedp.Evaluate(`tongbuArena.frame`, &frame))
	if frame < 15*12 || compared < 200 {
		t.Fatalf("after 15 s: frame %d, %d hashes compared", frame, compared)
	}
	t.Logf("arena: frame %d, %d page hashes equal to the bots'", frame, compared)
	// The room runs the game and verifies events: pages and bots agree
	// with it on every state hash and every kill. (Its simulation may
	// fall a second behind on a loaded machine, under the race detector
	// beside two browsers: that is a matter of time, not of agreement, and
	// it compares the hashes when it catches up.)
	for _, kind := range []string{"desync", "verdict"} {
		if v := u.metric(t, `tongbu_lockstep_events_total{kind="`+kind+`"}`); v != "" && v != "0" {
			t.Errorf("%s %s events in the arena room", v, kind)
		}
	}
	if v := u.metric(t, `tongbu_lockstep_events_total{kind="sim_behind"}`); v != "" && v != "0" {
		t.Logf("arena: the room's simulation fell behind %s times", v)
	}
	notBlank(t, a, "arena page")
	playArena(t, a)

	// A page that goes away says so and frees its seat at once, and the
	// other page's scoreboard says the game's bot plays it. Then closing
	// the pages releases their connections: the bots' two remain.
	if err := chromedp.Run(b, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	left := time.Now()
	var seat string
	for seat != "bot" {
		if err := chromedp.Run(a, chromedp.Evaluate(fmt.Sprintf(`tongbuArena.seats[%d]`, slotB), &seat)); err != nil {
			t.Fatal(err)
		}
		if time.Since(left) > 10*time.Second {
			t.Fatalf("page A shows page B's slot %d as %q 10 s after page B went away, want \"bot\"", slotB, seat)
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("arena: page A showed page B's seat as the bot's %.1f s after page B went away", time.Since(left).Seconds())
	// (A page whose browser dies is released by the idle timeout instead:
	// TestMMOInBrowser.)
	if err := chromedp.Run(a, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(10 * time.Second); u.metric(t, "tongbu_connections") != "2"; time.Sleep(250 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("tongbu_connections %s 10 s after the pages went away, want 2", u.metric(t, "tongbu_connections"))
		}
	}
	stopB()

	// The Play button: the page queues with the rating the browser keeps
	// and plays a room of its own with three bots rated near it.
	if err := chromedp.Run(a, chromedp.Navigate(u.web.URL+"/"), chromedp.Evaluate(`localStorage.setItem("tongbuRating", JSON.stringify({Mu: 38, Sigma: 3}))`, nil)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Run(a, chromedp.Navigate(u.web.URL+"/arena.html?queue")); err != nil {
		t.Fatal(err)
	}
	var match struct {
		Room   string
		RTTMs  int `json:"rtt_ms"`
		Rating struct{ Mu float64 }
		Others []struct {
			Bot    bool
			Rating struct{ Mu float64 }
		}
	}
	for end := time.Now().Add(time.Minute); ; time.Sleep(250 * time.Millisecond) {
		var ready bool
		chromedp.Run(a, chromedp.Evaluate(`!!(window.tongbuMatch && window.tongbuArena && tongbuArena.frame > 15)`, &ready))
		if ready {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the Play page did not play in a minute")
		}
	}
	if err := chromedp.Run(a, chromedp.Evaluate(`tongbuMatch`, &match)); err != nil {
		t.Fatal(err)
	}
	if match.Room == room || match.Rating.Mu != 38 || len(match.Others) != arenaPlayers-1 || match.RTTMs < 1 || match.RTTMs > 1000 {
		t.Fatalf("the Play page's match (with the round trip it measured): %+v", match)
	}
	var status string
	chromedp.Run(a, chromedp.Evaluate(`document.getElementById("tongbu-status").textContent`, &status))
	if !strings.HasPrefix(status, fmt.Sprintf("in a match with %d others", arenaPlayers-1)) {
		t.Errorf("the Play page's status line during the match: %q", status)
	}
	for _, o := range match.Others {
		if !o.Bot || o.Rating.Mu < 20 {
			t.Errorf("matched at 38 with %+v", o)
		}
	}
	t.Logf("arena: the Play page matched in room %s with bots rated %v", match.Room, match.Others)
	stopA()
}

// arenaPlayer is the local player as the arena page publishes it.
type arenaPlayer struct {
	X, Y, Fired int
	Alive       bool
}

func readArena(t *testing.T, page context.Context) arenaPlayer {
	t.Helper()
	var p arenaPlayer
	if err := chromedp.Run(page, chromedp.Evaluate(`({X: tongbuArena.x, Y: tongbuArena.y, Fired: tongbuArena.fired, Alive: tongbuArena.alive})`, &p)); err != nil {
		t.Fatal(err)
	}
	return p
}

// press holds a key as a person does, for hold.
func press(page context.Context, key, code string, vk int64, hold time.Duration) error {
	return chromedp.Run(page,
		input.DispatchKeyEvent(input.KeyDown).WithKey(key).WithCode(code).WithWindowsVirtualKeyCode(vk),
		chromedp.Sleep(hold),
		input.DispatchKeyEvent(input.KeyUp).WithKey(key).WithCode(code).WithWindowsVirtualKeyCode(vk))
}

// playArena drives the arena page as a player: keys move the player, and
// a tap of space and a plain click each fire a shot. The bots shoot back,
// so each try waits for the player to be alive, and a try the player did
// not live through is made again.
func playArena(t *testing.T, page context.Context) {
	t.Helper()
	alive := func() arenaPlayer {
		for end := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if p := readArena(t, page); p.Alive || time.Now().After(end) {
				return p
			}
		}
	}
	try := func(what string, act func() error, done func(before, after arenaPlayer) bool) {
		t.Helper()
		var before, after arenaPlayer
		for range 5 {
			before = alive()
			if err := act(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // the input's round trip and the jitter buffer
			after = readArena(t, page)
			if done(before, after) {
				t.Logf("arena, %s: %+v then %+v", what, before, after)
				return
			}
		}
		t.Errorf("arena, %s: nothing happened, %+v then %+v", what, before, after)
	}
	// A wall may stand on one side: either direction will do.
	try("D held, or A", func() error {
		if err := press(page, "d", "KeyD", 68, 600*time.Millisecond); err != nil {
			return err
		}
		return press(page, "a", "KeyA", 65, 600*time.Millisecond)
	}, func(b, a arenaPlayer) bool { return b.Alive && a.Alive && a.X != b.X })
	try("a tap of space", func() error { return press(page, " ", "Space", 32, 80*time.Millisecond) },
		func(b, a arenaPlayer) bool { return a.Fired > b.Fired })
	var w, h float64
	chromedp.Run(page, chromedp.Evaluate(`window.innerWidth`, &w), chromedp.Evaluate(`window.innerHeight`, &h))
	try("a click", func() error {
		return chromedp.Run(page,
			input.DispatchMouseEvent(input.MousePressed, w/3, h/2).WithButton(input.Left).WithClickCount(1),
			chromedp.Sleep(80*time.Millisecond),
			input.DispatchMouseEvent(input.MouseReleased, w/3, h/2).WithButton(input.Left).WithClickCount(1))
	}, func(b, a arenaPlayer) bool { return a.Fired > b.Fired })
}

// TestMMOInBrowser: the MMO page joins the world, advances, sees entities
// move, and draws.
func TestMMOInBrowser(t *testing.T) {
	u := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, stop := openPage(t, ctx, u.web.URL+"/mmo.html", `window.tongbuMMO && tongbuMMO.ready && tongbuMMO.frame > 32 && tongbuMMO.known > 5`)
	type snap struct {
		Frame, Known, Moving int
	}
	var s1, s2 snap
	chromedp.Run(p, chromedp.Evaluate(`({Frame: tongbuMMO.frame, Known: tongbuMMO.known, Moving: tongbuMMO.moving})`, &s1))
	time.Sleep(3 * time.Second)
	chromedp.Run(p, chromedp.Evaluate(`({Frame: tongbuMMO.frame, Known: tongbuMMO.known, Moving: tongbuMMO.moving})`, &s2))
	if s2.Frame < s1.Frame+16 || s2.Moving == 0 {
		t.Fatalf("the MMO page does not advance: %+v then %+v", s1, s2)
	}
	t.Logf("mmo: %+v then %+v", s1, s2)
	// A plain click (pressed for 80 ms, as a person clicks) walks there.
	type pos struct{ X, Y int }
	var before, after pos
	chromedp.Run(p, chromedp.Evaluate(`({X: tongbuMMO.x, Y: tongbuMMO.y})`, &before))
	var w, h float64
	chromedp.Run(p, chromedp.Evaluate(`window.innerWidth`, &w), chromedp.Evaluate(`window.innerHeight`, &h))
	x, y := w/2+w/5, h/2 // right of the player, who is drawn in the middle
	if err := chromedp.Run(p,
		input.DispatchMouseEvent(input.MousePressed, x, y).WithButton(input.Left).WithClickCount(1),
		chromedp.Sleep(80*time.Millisecond),
		input.DispatchMouseEvent(input.MouseReleased, x, y).WithButton(input.Left).WithClickCount(1)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	chromedp.Run(p, chromedp.Evaluate(`({X: tongbuMMO.x, Y: tongbuMMO.y})`, &after))
	t.Logf("a click at (%.0f, %.0f) of %.0fx%.0f: the player went from %+v to %+v", x, y, w, h, before, after)
	if after.X <= before.X+50 {
		t.Errorf("a click to the right did not walk the player there: %+v then %+v", before, after)
	}
	// F strikes the nearest NPC: the world resolves it as the page's (the
	// only human's) strike, and the page sees the NPC hurt. With none
	// near, the player walks on and tries again.
	type strike struct{ Strikes, StruckLife int }
	var st strike
	var human int64
	struck := func() bool { return st.Strikes > 0 && human > 0 && st.StruckLife >= 0 && st.StruckLife < 100 }
	for try := 0; try < 6 && !struck(); try++ {
		if err := press(p, "f", "KeyF", 70, 80*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		// The world's count first: the page has sent at least as many.
		human = u.humanStrikes(t)
		if err := chromedp.Run(p, chromedp.Evaluate(`({Strikes: tongbuMMO.strikes, StruckLife: tongbuMMO.struckLife})`, &st)); err != nil {
			t.Fatalf("reading the page's strikes: %v", err)
		}
		if st.Strikes == 0 || human <= 0 { // nothing near, or out of reach: walk on
			chromedp.Run(p,
				input.DispatchMouseEvent(input.MousePressed, x, y-h/5).WithButton(input.Left).WithClickCount(1),
				chromedp.Sleep(80*time.Millisecond),
				input.DispatchMouseEvent(input.MouseReleased, x, y-h/5).WithButton(input.Left).WithClickCount(1))
			time.Sleep(2 * time.Second)
		}
	}
	t.Logf("mmo, F: %+v, the world resolved %d human strikes", st, human)
	if !struck() {
		t.Errorf("F struck no NPC that the world resolved and the page then saw hurt: %+v, %d human strikes resolved", st, human)
	}
	if human > int64(st.Strikes) {
		t.Errorf("the world resolved %d human strikes, the page sent %d", human, st.Strikes)
	}
	notBlank(t, p, "mmo page")
	if got := u.metric(t, "tongbu_connections"); got != "1" {
		t.Fatalf("tongbu_connections %s with one page, want 1", got)
	}
	stop() // the browser dies without a word: the idle timeout frees the connection
	for end := time.Now().Add(40 * time.Second); u.metric(t, "tongbu_connections") != "0"; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("tongbu_connections %s 40 s after the page closed, want 0", u.metric(t, "tongbu_connections"))
		}
	}
}

// TestPageWeight: what a browser downloads for each demo page, the page,
// the loader and the client compressed as browsers ask for it, stays
// under 8 MB; the favicon is there.
func TestPageWeight(t *testing.T) {
	u := startDemo(t)
	const budget = 8 << 20
	size := func(p, accept string) int {
		req, _ := http.NewRequest(http.MethodGet, u.web.URL+p, nil)
		req.Header.Set("Accept-Encoding", accept) // set by hand: the client leaves the body compressed
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		if want := map[string]string{"gzip": "gzip", "gzip, deflate, br, zstd": "br"}[accept]; strings.HasSuffix(p, ".wasm") && resp.Header.Get("Content-Encoding") != want {
			t.Errorf("GET %s accepting %q: Content-Encoding %q, want %q", p, accept, resp.Header.Get("Content-Encoding"), want)
		}
		return int(n)
	}
	// What Chrome asks for over HTTPS, and over plain HTTP.
	for _, accept := range []string{"gzip, deflate, br, zstd", "gzip"} {
		for _, page := range []struct{ html, wasm string }{{"/arena.html", "/arena.wasm"}, {"/mmo.html", "/mmo.wasm"}, {"/duel.html", "/duel.wasm"}} {
			total := size(page.html, accept) + size("/wasm_exec.js", accept) + size(page.wasm, accept) + size("/favicon.ico", accept)
			t.Logf("%s accepting %q: %.1f MB on the wire", page.html, accept, float64(total)/(1<<20))
			if total > budget {
				t.Errorf("%s accepting %q: %d bytes on the wire, over %d", page.html, accept, total, budget)
			}
		}
	}
}

// TestDuelInBrowser: a page plays a duel against the demo's bot in the
// prediction mode; it jabs, both sides roll back, and every confirmed
// state hash the page reports equals the bot's.
func TestDuelInBrowser(t *testing.T) {
	u := startDemo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, stop := openPage(t, ctx, u.web.URL+"/duel.html", `window.tongbuDuel && tongbuDuel.confirmed > 60`)
	defer stop()
	var room string
	u.mu.Lock()
	for r := range u.botHashes {
		room = r
	}
	u.mu.Unlock()
	if !strings.HasPrefix(room, "duel-") {
		t.Fatalf("bot hashes from %q, want a duel room", room)
	}
	compared := map[int]bool{}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(time.Second) {
		// A jab: the key held for a few frames, as a person presses it.
		if err := press(p, "j", "KeyJ", 74, 100*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		u.sameHashes(t, p, `tongbuDuel.hashes`, room, "the page's confirmed", compared)
	}
	type figures struct {
		Frame, Confirmed, Rollbacks, Jabs, Stalls int
		Error                                     string
	}
	var f figures
	if err := chromedp.Run(p, chromedp.Evaluate(`({Frame: tongbuDuel.frame, Confirmed: tongbuDuel.confirmed, Rollbacks: tongbuDuel.rollbacks, Jabs: tongbuDuel.jabs, Stalls: tongbuDuel.stalls, Error: tongbuDuel.error || ""})`, &f)); err != nil {
		t.Fatal(err)
	}
	t.Logf("duel page: %+v; %d confirmed hashes equal to the bot's", f, len(compared))
	switch {
	case f.Confirmed < 30*60/2 || len(compared) < 30:
		t.Fatalf("after 30 s: %+v, %d hashes compared", f, len(compared))
	case f.Jabs == 0:
		t.Errorf("the page's key presses threw no jab: %+v", f)
	case f.Rollbacks == 0:
		t.Errorf("the page never rolled back: the bot's input was never predicted wrong? %+v", f)
	case f.Error != "":
		t.Errorf("page error: %s", f.Error)
	}
	for _, kind := range []string{"desync", "verdict", "sim_behind"} {
		if v := u.metric(t, `tongbu_lockstep_events_total{kind="`+kind+`"}`); v != "" && v != "0" {
			t.Errorf("%s %s events in the duel room", v, kind)
		}
	}
	notBlank(t, p, "duel page")

	// A page that goes away frees its seat at once: it closes its
	// connection, and only the bot's is left.
	if got := u.metric(t, "tongbu_connections"); got != "2" {
		t.Fatalf("tongbu_connections %s with the page and the bot, want 2", got)
	}
	if err := chromedp.Run(p, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	for end := time.Now().Add(5 * time.Second); u.metric(t, "tongbu_connections") != "1"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("tongbu_connections %s 5 s after the page went away, want 1", u.metric(t, "tongbu_connections"))
		}
	}
}

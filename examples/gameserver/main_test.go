//go:build !js

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/matchmaker"
)

// testRounds is PBKDF2's in the tests: the race detector makes the real
// figure's half second a login several seconds.
const testRounds = 1000

// startTest starts a game server on loopback for the test.
func startTest(t *testing.T) (*gameServer, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	path := filepath.Join(t.TempDir(), "accounts.json")
	g, err := start(ctx, config{HTTP: "127.0.0.1:0", UDP: "127.0.0.1:0", Accounts: path, rounds: testRounds}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	return g, path
}

// TestTutorial plays the tutorial through: two players sign up, log in,
// measure their round trip, queue, are matched, duel over real WebRTC on
// this machine until one wins by three lag-compensated hits, and find
// their new ratings stored, in the file too.
func TestTutorial(t *testing.T) {
	g, path := startTest(t)
	ended := make(chan result, 1)
	g.lobby.onEnd = func(r result) { ended <- r }
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	names := []string{"ann", "bo"}
	stats := make([]fightStats, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			p := &player{lobby: g.url + "/api", node: g.url, name: name, http: &http.Client{}}
			if errs[i] = p.signIn(ctx, name+" secret password"); errs[i] != nil {
				return
			}
			a, err := p.findMatch(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			if len(a.Opponents) != 1 || a.Opponents[0] != names[1-i] {
				t.Errorf("%s matched against %v", name, a.Opponents)
			}
			stats[i], errs[i] = p.fight(ctx, a)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("%s: %v", names[i], err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	var r result
	select {
	case r = <-ended:
	case <-ctx.Done():
		t.Fatal("no match ended")
	}
	if r.Err != nil || r.Winner < 0 {
		t.Fatalf("the match ended %+v", r)
	}
	winner, loser := r.Teams[r.Winner][0].ID, r.Teams[1-r.Winner][0].ID
	t.Logf("%s won; casts %v, life at the end %v", winner, stats[0].Casts, []int{stats[0].Life, stats[1].Life})
	for i, name := range names {
		if name == loser && stats[i].Life != 0 {
			t.Errorf("the loser %s last saw its life at %d", name, stats[i].Life)
		}
		if name == winner && (stats[i].Casts < 3 || stats[i].Life == 0) {
			t.Errorf("the winner %s cast %d bolts and has %d life", name, stats[i].Casts, stats[i].Life)
		}
	}

	// The ratings moved, and the file holds them: a restart keeps them.
	acc, err := openAccounts(path, testRounds)
	if err != nil {
		t.Fatal(err)
	}
	fresh := matchmaker.NewRating()
	w, _ := acc.get(winner)
	l, _ := acc.get(loser)
	if w.Rating.Mu <= fresh.Mu || l.Rating.Mu >= fresh.Mu || w.Rating.Sigma >= fresh.Sigma || w.Wins != 1 || l.Losses != 1 {
		t.Errorf("stored: winner %+v, loser %+v", w, l)
	}
	p := &player{lobby: g.url + "/api", node: g.url, name: winner, http: &http.Client{}}
	if err := p.signIn(ctx, winner+" secret password"); err != nil {
		t.Fatal(err)
	}
	if pr, err := p.me(ctx); err != nil || pr.Rating != w.Rating || pr.Wins != 1 {
		t.Errorf("/me: %+v, %v; stored %+v", pr, err, w)
	}
}

// TestLobbyRefuses: what a client gets wrong is refused with a status
// that says so, and nothing is queued.
func TestLobbyRefuses(t *testing.T) {
	g, _ := startTest(t)
	api := g.url + "/api"
	ctx := context.Background()
	ann := &player{lobby: api, node: g.url, name: "ann", http: &http.Client{}}
	if err := ann.signIn(ctx, "ann's password"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, method, path, token, body string
		want                            int
	}{
		{"a name taken", "POST", "/signup", "", `{"name":"ann","password":"another password"}`, 409},
		{"a short name", "POST", "/signup", "", `{"name":"a","password":"long enough"}`, 400},
		{"a name with a space", "POST", "/signup", "", `{"name":"a b c","password":"long enough"}`, 400},
		{"a short password", "POST", "/signup", "", `{"name":"cy","password":"short"}`, 400},
		{"an unknown field", "POST", "/signup", "", `{"name":"cyd","password":"long enough","admin":true}`, 400},
		{"not JSON", "POST", "/login", "", `name=ann`, 400},
		{"a body too large", "POST", "/login", "", `{"name":"ann","password":"` + strings.Repeat("x", 5000) + `"}`, 400},
		{"a wrong password", "POST", "/login", "", `{"name":"ann","password":"not ann's password"}`, 401},
		{"no such player", "POST", "/login", "", `{"name":"nobody","password":"whatever it is"}`, 401},
		{"no login", "GET", "/me", "", ``, 401},
		{"a forged token", "POST", "/play", "Bearer abc", `{}`, 401},
		{"a bad round trip", "POST", "/play", "Bearer " + ann.token, `{"rtt_ms":{"local":-5}}`, 400},
	} {
		req, _ := http.NewRequest(c.method, api+c.path, strings.NewReader(c.body))
		if c.token != "" {
			req.Header.Set("Authorization", c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, resp.StatusCode, bytes.TrimSpace(b), c.want)
		}
	}

	// In line twice: the second /play is refused, and a client that
	// gives up leaves the line.
	pctx, cancel := context.WithCancel(ctx)
	first := make(chan error, 1)
	go func() { _, err := ann.findMatch(pctx); first <- err }()
	deadline := time.Now().Add(10 * time.Second)
	for !inLine(g, "ann") {
		if time.Now().After(deadline) {
			t.Fatal("ann never got in line")
		}
		time.Sleep(10 * time.Millisecond)
	}
	err := ann.call(ctx, "POST", "/play", map[string]any{}, nil)
	if he, ok := err.(*httpError); !ok || he.Status != http.StatusConflict {
		t.Errorf("a second /play: %v, want 409", err)
	}
	cancel()
	<-first
	for inLine(g, "ann") {
		if time.Now().After(deadline) {
			t.Fatal("ann is still in line after her client gave up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func inLine(g *gameServer, player string) bool {
	g.lobby.mu.Lock()
	defer g.lobby.mu.Unlock()
	return g.lobby.waiting[player] != nil && g.lobby.m.Has(player)
}

type nopSender struct{}

func (nopSender) SendUnreliable(interest.ID, []byte) error { return nil }
func (nopSender) SendReliable(interest.ID, []byte) error   { return nil }

// TestBoltLagCompensated: a bolt is judged where the caster saw its
// target, not where the target is when the cast arrives, and a bolt cast
// during the cooldown does nothing.
func TestBoltLagCompensated(t *testing.T) {
	start := time.Unix(1000, 0)
	w, err := interest.NewWorld(duelConfig(), start, nopSender{})
	if err != nil {
		t.Fatal(err)
	}
	d := &duel{match: matchmaker.Match{ID: "m", Teams: [][]matchmaker.Player{{{ID: "ann"}}, {{ID: "bo"}}}},
		team: map[string]int{"ann": 0, "bo": 1}, player: map[interest.ID]string{}, ready: map[interest.ID]int{}, limit: 1 << 30}
	ann, err := d.join(w, "ann")
	if err != nil {
		t.Fatal(err)
	}
	bo, err := d.join(w, "bo")
	if err != nil {
		t.Fatal(err)
	}
	period := w.Config().Period()
	now := start
	tick := func(n int) {
		for range n {
			now = now.Add(period)
			w.Tick(now)
		}
	}
	// Bo stands 8 m from ann, then runs away at 16 m/s.
	annPos, _ := w.Logic(ann)
	if err := w.Place(bo, annPos.Pos.Add(interest.Vec{X: 8 * 64})); err != nil {
		t.Fatal(err)
	}
	tick(2)
	seen := w.Frame() // ann sees bo here, 8 m away
	if err := w.Move(bo, interest.Vec{X: 60 * 64, Y: annPos.Pos.Y}, 64); err != nil {
		t.Fatal(err)
	}
	tick(4) // 4 m further: 12 m away when the cast arrives
	if r, _ := w.Reach(interest.Action{Player: ann, Frame: w.Frame(), View: float64(w.Frame())}, bo); r <= boltRange {
		t.Fatalf("bo is %v units from ann now, want out of range", r)
	}
	life := func() int { lg, _ := w.Logic(bo); return int(lg.Life) }
	cast := func(view int) {
		d.act(w, interest.Action{Player: ann, Kind: interest.ActionSkill, Skill: boltSkill, Target: bo, Frame: w.Frame(), View: float64(view)})
	}
	cast(seen)
	if life() != 100-boltDamage {
		t.Fatalf("a bolt at bo where ann saw him in range: life %d, want %d", life(), 100-boltDamage)
	}
	tick(2)
	cast(seen)
	if life() != 100-boltDamage {
		t.Errorf("a bolt within the cooldown hit: life %d", life())
	}
	tick(int(boltCooldown / period))
	cast(w.Frame())
	if life() != 100-boltDamage {
		t.Errorf("a bolt at bo seen out of range hit: life %d", life())
	}
}

// TestTutorialExcerpts: every Go block of docs/tutorial.md is a TUTORIAL
// region of this program, verbatim (less its indentation), and every
// region is in the tutorial.
func TestTutorialExcerpts(t *testing.T) {
	doc, err := os.ReadFile("../../docs/tutorial.md")
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("*.go")
	regions := map[string]string{}
	re := regexp.MustCompile(`(?s)\n([\t]*)// TUTORIAL:([a-z-]+)\n(.*?)\n[\t]*// TUTORIAL:end`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllStringSubmatch(string(src), -1) {
			var lines []string
			for _, l := range strings.Split(strings.TrimRight(m[3], "\n"), "\n") {
				lines = append(lines, strings.TrimPrefix(l, m[1]))
			}
			regions["```go\n"+strings.Join(lines, "\n")+"\n```"] = f + ":" + m[2]
		}
	}
	if len(regions) < 5 {
		t.Fatalf("%d TUTORIAL regions found", len(regions))
	}
	for block, name := range regions {
		if !bytes.Contains(doc, []byte(block)) {
			t.Errorf("docs/tutorial.md does not hold region %s verbatim:\n%s", name, block)
		}
	}
	for _, b := range regexp.MustCompile("(?s)```go\n.*?\n```").FindAll(doc, -1) {
		if _, ok := regions[string(b)]; !ok {
			t.Errorf("docs/tutorial.md has a Go block that is no region of the program:\n%s", b)
		}
	}
}

// TestBots runs the program as `go run ./examples/gameserver -bots 2`
// does, until a duel has ended and been printed by both.
func TestBots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, config{HTTP: "127.0.0.1:0", UDP: "127.0.0.1:0", Accounts: filepath.Join(t.TempDir(), "a.json"), Bots: 2, rounds: testRounds}, slog.New(slog.DiscardHandler), pw)
		pw.Close()
	}()
	line := regexp.MustCompile(`^bot-[12] vs \[bot-[12]\]: \d+ casts, life \d+; now (\d+)-(\d+), rating [\d.]+ \(sigma [\d.]+\)$`)
	var out []string
	duels := 0
	sc := bufio.NewScanner(pr)
	for duels < 2 && sc.Scan() { // a duel: each bot prints it
		out = append(out, sc.Text())
		if line.MatchString(sc.Text()) {
			duels++
		}
	}
	cancel()
	go io.Copy(io.Discard, pr)
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("run: %v", err)
	}
	if duels < 2 {
		t.Fatalf("%d results printed:\n%s", duels, strings.Join(out, "\n"))
	}
	if !strings.HasPrefix(out[0], "lobby and game server at http://127.0.0.1:") {
		t.Errorf("first line %q", out[0])
	}
}

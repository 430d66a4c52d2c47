//go:build !js

package engine

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
)

// TestWebRTC runs the engine over real WebRTC on loopback: a player with a
// good ticket joins and plays frames, a bad ticket is refused at signaling
// with the reason, and the HTTP endpoints answer.
func TestWebRTC(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	if _, err := s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}

	dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
	defer dcancel()
	tk, _ := s.Ticket("alice", "r", RolePlayer, time.Minute)
	c, err := Dial(dctx, web.URL, tk, &ClientConfig{IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	for deadline := time.Now().Add(10 * time.Second); frames < 10 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		now := time.Now()
		c.Lockstep().Input(now, []byte{1})
		if err := c.Update(now); err != nil {
			t.Fatal(err)
		}
		frames += len(c.Lockstep().Advance(now).Frames)
	}
	if frames < 10 {
		t.Fatalf("%d frames played over WebRTC in 10 s", frames)
	}

	// The same ticket again: refused at signaling, with the reason.
	if _, err := Dial(dctx, web.URL, tk, &ClientConfig{IncludeLoopback: true}); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replayed ticket: %v", err)
	}
	if _, err := Dial(dctx, web.URL, "garbage", &ClientConfig{IncludeLoopback: true}); err == nil || !strings.Contains(err.Error(), "invalid ticket") {
		t.Fatalf("bad ticket: %v", err)
	}

	for path, want := range map[string]string{HealthPath: "ok", MetricsPath: "tongbu_connections 1"} {
		resp, err := http.Get(web.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), want) {
			t.Fatalf("GET %s: %d %q, want %q", path, resp.StatusCode, body, want)
		}
	}

	c.Close()
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestNoGoroutinePerPeer: players and world members joined over the lean
// stack cost the server no goroutine each (the transport hands over their
// messages and tells of their close), and their leaving is seen all the
// same: the room frees their slots, the world their entities.
func TestNoGoroutinePerPeer(t *testing.T) {
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	room, err := s.CreateRoom("r", lockstep.Config{Players: 20, Hz: 30})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWorld("w", WorldConfig{}); err != nil {
		t.Fatal(err)
	}
	peers := func() int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.peers)
	}
	// The clients' side: the lean client's endpoint is per process, so
	// its goroutines do not grow with clients either; count the server's
	// by the difference of twenty joins against two.
	join := func(n int, target string) []*Client {
		var cs []*Client
		for i := range n {
			tk, _ := s.Ticket(fmt.Sprintf("%s%d", target, i), target, RolePlayer, time.Minute)
			dctx, dcancel := context.WithTimeout(ctx, 20*time.Second)
			c, err := Dial(dctx, web.URL, tk, &ClientConfig{IncludeLoopback: true, SharedSocket: true})
			dcancel()
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		return cs
	}
	settle := func() int {
		time.Sleep(300 * time.Millisecond)
		return runtime.NumGoroutine()
	}
	few := append(join(1, "r"), join(1, "w")...)
	g0 := settle()
	many := append(join(9, "r"), join(9, "w")...)
	g1 := settle()
	t.Logf("goroutines: %d with 2 joined, %d with 20", g0, g1)
	if per := float64(g1-g0) / 18; per > 0.05 {
		t.Errorf("%.2f goroutines a connection", per)
	}
	for _, c := range append(few, many...) {
		c.Close()
	}
	for deadline := time.Now().Add(10 * time.Second); room.Connected() > 0 || peers() > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after every client closed: %d in the room, %d connections held", room.Connected(), peers())
		}
	}
}

// TestTransferWebRTC moves a player between two servers over real WebRTC
// on loopback: the client opens its connection to the second server by
// itself, then closes the first.
func TestTransferWebRTC(t *testing.T) {
	var servers [2]*Server
	var urls [2]string
	for i := range servers {
		s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true})
		if err != nil {
			t.Fatal(err)
		}
		web := httptest.NewServer(s.Handler())
		defer web.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go s.Serve(ctx)
		servers[i], urls[i] = s, web.URL
	}
	field, err := servers[0].CreateWorld("field", WorldConfig{Interest: interest.Config{Width: 8, Height: 8}})
	if err != nil {
		t.Fatal(err)
	}
	arrived := make(chan string, 1)
	cave, err := servers[1].CreateWorld("cave", WorldConfig{Interest: interest.Config{Width: 8, Height: 8},
		Arrive: func(w *interest.World, player string, state []byte) (interest.ID, error) {
			arrived <- player + " " + string(state)
			return defaultJoin(w, player)
		}})
	if err != nil {
		t.Fatal(err)
	}
	var moves []Move
	tk, _ := servers[0].Ticket("ann", "field", RolePlayer, time.Minute)
	dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer dcancel()
	c, err := Dial(dctx, urls[0], tk, &ClientConfig{IncludeLoopback: true, OnMove: func(m Move) { moves = append(moves, m) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	done := make(chan error, 1)
	if err := field.Transfer("ann", &remote{w: cave, url: urls[1]}, []byte("hp=7"), func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); len(moves) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if len(moves) != 1 || moves[0].To != "cave" || moves[0].URL != urls[1] {
		t.Fatalf("moves %+v", moves)
	}
	if got := <-arrived; got != "ann hp=7" {
		t.Fatalf("arrived %q", got)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the old world never let the player go")
	}
	if p, _ := field.Load(); p != 0 {
		t.Fatalf("%d players left in the old world", p)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Interest().Self(); ok {
			return
		}
	}
	t.Fatal("no world frame from the new server")
}

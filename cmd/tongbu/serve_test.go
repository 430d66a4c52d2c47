//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func TestTicketCommand(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "a-secret-of-at-least-16-bytes")
	var out, errb bytes.Buffer
	if code := run([]string{"ticket", "-player", "p1", "-target", "room-1", "-ttl", "1m"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	tk, err := engine.ParseTicket([]byte("a-secret-of-at-least-16-bytes"), strings.TrimSpace(out.String()), time.Now())
	if err != nil || tk.Player != "p1" || tk.Target != "room-1" || tk.Role != engine.RolePlayer {
		t.Fatalf("ticket %+v, %v", tk, err)
	}
	t.Setenv("TONGBU_SECRET", "")
	if code := run([]string{"ticket", "-player", "p", "-target", "t"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no ticket secret") {
		t.Fatalf("no secret: exit %d, %s", code, errb.String())
	}
}

func TestServeConfig(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	var cfg serveConfig
	if err := json.Unmarshal([]byte(`{"rooms":[{"name":"duel","players":2,"hz":30,"fill":"repeat","late":"next"}],
		"worlds":[{"name":"field","width":8,"height":8}]}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := createFromConfig(srv, &cfg, 2); err != nil {
		t.Fatal(err)
	}
	r, ok := srv.Room("duel")
	if !ok || r.Config().Players != 2 || r.Config().Hz != 30 {
		t.Fatalf("room duel: %v %+v", ok, r)
	}
	if _, ok := srv.Room("room-2"); !ok {
		t.Fatal("room-2 missing")
	}
	if w, ok := srv.World("field"); !ok || w.Config().Width != 8 {
		t.Fatal("world field missing")
	}
	cfg.Rooms[0].Name, cfg.Rooms[0].Fill = "other", "sometimes"
	if err := createFromConfig(srv, &cfg, 0); err == nil || !strings.Contains(err.Error(), "fill") {
		t.Fatalf("bad fill: %v", err)
	}
}

// TestStandingRoom: a room of tongbu serve's config that closes for being
// empty is replaced by a fresh one of the same name; one closed for other
// reasons is not.
func TestStandingRoom(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true, RoomIdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	go srv.Serve(t.Context())
	if err := standingRoom(srv, "duel", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	first, _ := srv.Room("duel")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, ok := srv.Room("duel"); ok && r != first {
			if r.Config().Players != 2 || r.Config().Hz != 30 {
				t.Fatalf("the fresh room's config %+v", r.Config())
			}
			r.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh room 10 s after the first stood empty")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := srv.Room("duel"); ok {
		t.Fatal("a room closed by hand came back")
	}
}

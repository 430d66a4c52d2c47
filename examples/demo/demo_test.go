//go:build !js

package main

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestBotRestarts: a demo bot whose connection is taken from it (here by
// a second connection with its name, which the server lets replace it)
// comes back by itself, takes its seat again and plays on.
func TestBotRestarts(t *testing.T) {
	d, err := newDemo(demoConfig{UDP: 0, Assets: t.TempDir(), NoBuild: true, NPCs: 10, MMOBots: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.srv.Serve(ctx); close(served) }()
	defer func() { cancel(); <-served; d.stop() }()
	var mu sync.Mutex
	last := map[string]int{} // room -> the newest frame the bot confirmed
	d.botFrame = func(room string, slot, frame int, hash uint64) {
		mu.Lock()
		last[room] = max(last[room], frame)
		mu.Unlock()
	}
	if _, err := d.duelTicket("guest"); err != nil {
		t.Fatal(err)
	}
	room := "duel-1"
	newest := func() int {
		mu.Lock()
		defer mu.Unlock()
		return last[room]
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(20 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("%s: not within 20 s", what)
			}
		}
	}
	wait("the bot plays", func() bool { return newest() > 60 })
	// Take the bot's seat: the server closes the bot's connection.
	c, s := d.bots.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	tk, _ := d.srv.Ticket("bot", room, engine.RolePlayer, time.Minute)
	if err := d.srv.Attach(s, tk); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	at := newest()
	wait("the impostor is replaced", func() bool {
		select {
		case <-c.Done():
			return true
		default:
			return false
		}
	})
	wait("the bot plays again", func() bool { return newest() > at+120 })
	r, ok := d.srv.Room(room)
	if !ok || r.Connected() != 1 {
		t.Fatalf("room %v: %d connected, want the bot", ok, r.Connected())
	}
}

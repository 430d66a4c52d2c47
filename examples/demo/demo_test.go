//go:build !js

package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestBotRestarts: a duel starts only when its guest has joined; a demo
// bot whose connection is taken from it (here by a second connection with
// its name, which the server lets replace it) comes back by itself, takes
// its seat again and plays on.
func TestBotRestarts(t *testing.T) {
	d := serveSmallDemo(t)
	ctx := t.Context()
	var mu sync.Mutex
	last := map[string]int{} // room -> the newest frame the bot confirmed
	d.botFrame = func(room string, slot, frame int, hash uint64) {
		mu.Lock()
		last[room] = max(last[room], frame)
		mu.Unlock()
	}
	guest, err := d.duelTicket("guest")
	if err != nil {
		t.Fatal(err)
	}
	room := "duel-1"
	newest := func() int {
		mu.Lock()
		defer mu.Unlock()
		return last[room]
	}
	// The duel starts when both players are there, not while the guest's
	// page loads: the bot alone plays nothing.
	time.Sleep(time.Second)
	if n := newest(); n > 0 {
		t.Fatalf("the bot played to frame %d before the guest came", n)
	}
	// The guest joins and keeps its connection up.
	gc, gs := d.bots.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	if err := d.srv.Attach(gs, guest); err != nil {
		t.Fatal(err)
	}
	g, err := engine.NewClient(ctx, gc)
	if err != nil {
		t.Fatal(err)
	}
	gctx, gstop := context.WithCancel(ctx)
	gdone := make(chan struct{})
	defer func() { gstop(); <-gdone }()
	go func() { // the guest's game loop owns its client
		defer close(gdone)
		defer g.Close()
		for gctx.Err() == nil && g.Update(time.Now()) == nil {
			g.Lockstep().Advance(time.Now())
			time.Sleep(16 * time.Millisecond)
		}
	}()
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
	if !ok || r.Connected() != 2 {
		t.Fatalf("room %v: %d connected, want the bot and the guest", ok, r.Connected())
	}
}

// serveSmallDemo starts a demo with a small MMO world and no browser
// clients, serving until the test ends.
func serveSmallDemo(t *testing.T) *demo {
	t.Helper()
	d, err := newDemo(demoConfig{UDP: 0, Assets: t.TempDir(), NoBuild: true, NPCs: 10, MMOBots: 1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.srv.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); <-served; d.stop() })
	return d
}

// TestStopQuiet: when the server shuts down, the demo's bots end with it
// rather than logging that they stopped and trying to come back.
func TestStopQuiet(t *testing.T) {
	var log syncBuffer
	d, err := newDemo(demoConfig{UDP: 0, Assets: t.TempDir(), NoBuild: true, NPCs: 10, MMOBots: 1,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { d.srv.Serve(ctx); close(served) }()
	if _, err := d.duelTicket("guest"); err != nil {
		t.Fatal(err)
	}
	r, _ := d.srv.Room("duel-1")
	for end := time.Now().Add(10 * time.Second); r.Connected() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the duel's bot did not join")
		}
	}
	cancel() // as Ctrl-C does: the server says goodbye, then the demo stops
	<-served
	d.stop()
	if s := log.String(); strings.Contains(s, "bot stopped") || strings.Contains(s, "rejoin") {
		t.Fatalf("the demo's log on the way out:\n%s", s)
	}
}

// syncBuffer is a bytes.Buffer that several goroutines may write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

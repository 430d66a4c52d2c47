//go:build !js

package engine

import (
	"context"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestRoomIdleTimeout: a room stays while a player is connected, closes
// once it has been empty for RoomIdleTimeout, tells OnClose it was for
// being idle, and frees its name for a fresh room.
func TestRoomIdleTimeout(t *testing.T) {
	const idle = 300 * time.Millisecond
	h := newHarness(t, Config{RoomIdleTimeout: idle})
	defer h.shutdown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.s.Serve(ctx)
	r, err := h.s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 30})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan bool, 1)
	r.OnClose(func(idle bool) { closed <- idle })
	c, err := h.join("alice", "r", RolePlayer, memnet.LinkConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Connected for three idle periods: the room stays.
	if err := pump(c, 3*idle); err != nil {
		t.Fatal(err)
	}
	select {
	case <-closed:
		t.Fatal("the room closed with a player connected")
	default:
	}
	began := time.Now()
	c.Close()
	select {
	case wasIdle := <-closed:
		if !wasIdle {
			t.Fatal("OnClose says the room was closed, not idle")
		}
		if d := time.Since(began); d < idle {
			t.Fatalf("closed %v after the player left, before the %v idle timeout", d, idle)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("an empty room still open after 10 s")
	}
	if _, ok := h.s.Room("r"); ok {
		t.Fatal("the server still lists the idle room")
	}
	if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 2}); err != nil {
		t.Fatalf("a fresh room of the same name: %v", err)
	}
}

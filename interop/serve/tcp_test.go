//go:build !js

package serve_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// TestServeTCP: `tongbu serve -tcp` says where its TCP port is, and a
// native client that takes TCP only joins one of its rooms and plays.
func TestServeTCP(t *testing.T) {
	const secret = "0123456789abcdef0123"
	p := startServeWith(t, secret, "tcp", "-rooms", "1", "-tcp", "127.0.0.1:0")
	if !strings.Contains(p.first, ", TCP 127.0.0.1:") {
		t.Fatalf("the first line %q names no TCP port", p.first)
	}
	ticket, err := engine.SignTicket([]byte(secret), engine.Ticket{Player: "ann", Target: "room-1", Expires: time.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := engine.Dial(ctx, p.url+engine.ConnectPath, ticket, &engine.ClientConfig{Network: "tcp"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ls := c.Lockstep()
	for now := time.Now(); ; now = time.Now() {
		ls.Input(now, []byte{1})
		if err := c.Update(now); err != nil {
			t.Fatal(err)
		}
		if len(ls.Advance(now).Frames) > 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatal("no frame over TCP in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

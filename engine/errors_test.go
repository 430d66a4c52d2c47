//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestErrors provokes each of the engine's errors through its exported
// functions: errors.Is finds the sentinel, and %+v shows the stack of the
// call that returned it, down to this test.
func TestErrors(t *testing.T) {
	h := newHarness(t, Config{MaxRooms: 2})
	defer h.shutdown()
	if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.CreateWorld("w", WorldConfig{}); err != nil {
		t.Fatal(err)
	}
	alice, _ := h.s.Ticket("alice", "r", RolePlayer, time.Minute)
	if c, err := h.joinWith(alice, memnet.LinkConfig{}); err != nil {
		t.Fatal(err)
	} else {
		defer c.Close()
	}
	attach := func(ticket string) error {
		c, s := h.net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
		defer c.Close()
		return h.s.Attach(s, ticket)
	}
	ticket := func(player, target string, role Role) string {
		tk, err := h.s.Ticket(player, target, role, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	expired, _ := SignTicket(testSecret, Ticket{Player: "p", Target: "r", Expires: time.Now().Add(-time.Minute)})
	tests := []struct {
		name string
		err  func() error
		want error
	}{
		{"short secret", func() error { _, err := NewServer(Config{Secret: []byte("short")}); return err }, ErrConfig},
		{"server URL", func() error { _, err := Dial(context.Background(), "ftp://x", "t", nil); return err }, ErrConfig},
		{"room name", func() error { _, err := h.s.CreateRoom("", lockstep.Config{}); return err }, ErrConfig},
		{"name taken", func() error { _, err := h.s.CreateRoom("w", lockstep.Config{}); return err }, ErrExists},
		{"too many rooms", func() error { _, err := h.s.CreateRoom("third", lockstep.Config{}); return err }, ErrFull},
		{"no such target", func() error { return attach(ticket("p", "nowhere", RolePlayer)) }, ErrNotFound},
		{"spectator in a world", func() error { return attach(ticket("p", "w", RoleSpectator)) }, ErrRole},
		{"room full", func() error { return attach(ticket("bob", "r", RolePlayer)) }, ErrFull},
		{"forged ticket", func() error { return attach("forged") }, ErrTicketInvalid},
		{"expired ticket", func() error { return attach(expired) }, ErrTicketExpired},
		{"used ticket", func() error { return attach(alice) }, ErrTicketReplayed},
		{"parse", func() error { _, err := ParseTicket(testSecret, "!!", time.Now()); return err }, ErrTicketInvalid},
		{"sign", func() error { _, err := SignTicket(testSecret, Ticket{Target: "r"}); return err }, ErrTicketInvalid},
		{"bad welcome", func() error {
			c, s := h.net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
			defer c.Close()
			w := appendWelcome(nil, &welcome{mode: Lockstep, target: "r", lockstep: lockstep.Config{Players: 2}.WithDefaults()})
			s.SendReliable(w[:4]) // cut short
			_, err := NewClient(context.Background(), c)
			return err
		}, ErrMalformed},
		{"newer welcome", func() error {
			c, s := h.net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
			defer c.Close()
			s.SendReliable([]byte{kindEngine | typeWelcome<<kindBits, 0xff})
			_, err := NewClient(context.Background(), c)
			return err
		}, ErrWireVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			trace := fmt.Sprintf("%+v", err)
			if !strings.Contains(trace, "engine.") || !strings.Contains(trace, "errors_test.go:") {
				t.Fatalf("%%+v shows no stack into the engine from the caller:\n%s", trace)
			}
		})
	}
	h.shutdown()
	if _, err := h.s.CreateRoom("late", lockstep.Config{}); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("a room after shutdown: %v, want ErrServerClosed", err)
	}
}

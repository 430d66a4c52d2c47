//go:build !js

package engine

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// TestDialRefusals dials a real server over WebRTC with each kind of bad
// ticket and at each limit: the error matches the engine error a game
// acts on (a new ticket, another room, another server), carries the
// server's reason token, and the server's log counts the refusals by
// reason.
func TestDialRefusals(t *testing.T) {
	var logs syncBuffer
	s, err := NewServer(Config{
		Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, MaxConns: 3,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	go s.Serve(ctx)
	if _, err := s.CreateRoom("duo", lockstep.Config{Players: 1, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateWorld("field", WorldConfig{Interest: interest.Config{Width: 4, Height: 4}}); err != nil {
		t.Fatal(err)
	}
	sign := func(secret []byte, player, target string, role Role, expires time.Time) string {
		tk, err := SignTicket(secret, Ticket{Player: player, Target: target, Role: role, Expires: expires})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	soon := time.Now().Add(time.Minute)
	dial := func(ticket string) error {
		c, err := Dial(ctx, web.URL, ticket, &ClientConfig{IncludeLoopback: true})
		if err == nil {
			t.Cleanup(func() { c.Close() })
		}
		return err
	}
	first := sign(testSecret, "ann", "duo", RolePlayer, soon)
	if err := dial(first); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		ticket string
		want   error
		reason string // the signaling refusal's token; "" when the refusal comes once connected
	}{
		{"another secret", sign([]byte("another server's secret"), "bob", "duo", RolePlayer, soon), ErrTicketInvalid, "ticket_invalid"},
		{"not a ticket", "garbage", ErrTicketInvalid, "ticket_invalid"},
		{"expired", sign(testSecret, "bob", "duo", RolePlayer, time.Now().Add(-time.Second)), ErrTicketExpired, "ticket_expired"},
		{"used", first, ErrTicketReplayed, "ticket_replayed"},
		{"no such room", sign(testSecret, "bob", "trio", RolePlayer, soon), ErrNotFound, "not_found"},
		{"spectator in a world", sign(testSecret, "bob", "field", RoleSpectator, soon), ErrRole, "role"},
		{"room full", sign(testSecret, "bob", "duo", RolePlayer, soon), ErrFull, ""},
	} {
		err := dial(tt.ticket)
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want it to match %v", tt.name, err, tt.want)
			continue
		}
		var se *transport.SignalingError
		if got := errors.As(err, &se); got != (tt.reason != "") || got && se.Reason != tt.reason {
			t.Errorf("%s: %v: want the signaling reason %q", tt.name, err, tt.reason)
		}
	}
	// At the server's connection limit (three: ann, and two in the world).
	for _, p := range []string{"cy", "di"} {
		if err := dial(sign(testSecret, p, "field", RolePlayer, soon)); err != nil {
			t.Fatal(err)
		}
	}
	if err := dial(sign(testSecret, "ed", "field", RolePlayer, soon)); !errors.Is(err, ErrFull) {
		t.Errorf("at MaxConns: %v, want ErrFull", err)
	}
	// A server shutting down.
	closing := sign(testSecret, "fay", "field", RolePlayer, soon)
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	s.Shutdown(sctx)
	if err := dial(closing); !errors.Is(err, ErrServerClosed) {
		t.Errorf("shutting down: %v, want ErrServerClosed", err)
	}
	log := logs.String()
	if !strings.Contains(log, "by_reason=") || !strings.Contains(log, `msg=joined player=ann target=duo`) {
		t.Errorf("the log holds no refusals by reason or no join:\n%s", log)
	}
}

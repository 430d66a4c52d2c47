package engine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testSecret = []byte("0123456789abcdef-test-secret")

func TestTicketRoundTrip(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	in := Ticket{Player: "alice", Target: "room-1", Role: RoleSpectator, Expires: now.Add(time.Minute)}
	s, err := SignTicket(testSecret, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ParseTicket(testSecret, s, now)
	if err != nil {
		t.Fatal(err)
	}
	if out.Player != in.Player || out.Target != in.Target || out.Role != in.Role || !out.Expires.Equal(in.Expires) || out.Nonce == 0 {
		t.Fatalf("got %+v, want %+v with a nonce", out, in)
	}
	s2, _ := SignTicket(testSecret, in)
	if s2 == s {
		t.Fatal("two tickets for the same grant are identical: the nonce is not random")
	}
}

func TestTicketRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	good := Ticket{Player: "bob", Target: "w", Expires: now.Add(time.Minute)}
	sign := func(tk Ticket) string {
		s, err := SignTicket(testSecret, tk)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ok := sign(good)
	flip := []byte(ok)
	flip[3] ^= 1
	if flip[3] == '-' || flip[3] == '_' { // keep it base64url
		flip[3] = 'A'
	}
	for _, tc := range []struct {
		name   string
		secret []byte
		ticket string
		want   error
	}{
		{"expired", testSecret, sign(Ticket{Player: "bob", Target: "w", Expires: now}), ErrTicketExpired},
		{"other secret", []byte("another-secret-of-16+"), ok, ErrTicketInvalid},
		{"tampered", testSecret, string(flip), ErrTicketInvalid},
		{"truncated", testSecret, ok[:len(ok)-4], ErrTicketInvalid},
		{"not base64", testSecret, "!!!", ErrTicketInvalid},
		{"empty", testSecret, "", ErrTicketInvalid},
		{"huge", testSecret, strings.Repeat("A", 10000), ErrTicketInvalid},
	} {
		if _, err := ParseTicket(tc.secret, tc.ticket, now); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, tk := range []Ticket{
		{Target: "w", Expires: now},                              // no player
		{Player: strings.Repeat("p", 65), Target: "w"},           // long player
		{Player: "p", Target: "w", Role: 7},                      // unknown role
		{Player: "p", Target: strings.Repeat("w", MaxNameLen+1)}, // long target
	} {
		if _, err := SignTicket(testSecret, tk); !errors.Is(err, ErrTicketInvalid) {
			t.Errorf("SignTicket(%+v) = %v, want ErrTicketInvalid", tk, err)
		}
	}
	if _, err := SignTicket([]byte("short"), good); err == nil {
		t.Error("a short secret was accepted")
	}
}

func TestTicketReplay(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	var u usedTickets
	tk := Ticket{Player: "p", Target: "r", Expires: now.Add(time.Second), Nonce: 42}
	if err := u.use(tk, now); err != nil {
		t.Fatal(err)
	}
	if err := u.use(tk, now); !errors.Is(err, ErrTicketReplayed) {
		t.Fatalf("second use: %v, want ErrTicketReplayed", err)
	}
	// Expired nonces are forgotten: memory stays bounded by the live ones.
	later := now.Add(2 * time.Minute)
	if err := u.use(Ticket{Nonce: 43, Expires: later.Add(time.Second)}, later); err != nil {
		t.Fatal(err)
	}
	if len(u.seen) != 1 {
		t.Fatalf("%d nonces remembered after the first expired, want 1", len(u.seen))
	}
}

func FuzzParseTicket(f *testing.F) {
	now := time.Unix(1_800_000_000, 0)
	s, _ := SignTicket(testSecret, Ticket{Player: "p", Target: "t", Expires: now.Add(time.Hour)})
	f.Add(s)
	f.Add("")
	f.Add("AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		tk, err := ParseTicket(testSecret, s, now)
		if err != nil {
			return
		}
		// Whatever parses was signed by us: it must sign back to a ticket
		// that parses to the same grant.
		s2, err := SignTicket(testSecret, tk)
		if err != nil {
			t.Fatalf("a parsed ticket does not sign again: %v", err)
		}
		tk2, err := ParseTicket(testSecret, s2, now)
		if err != nil || tk2 != tk {
			t.Fatalf("round trip: %+v, %v; want %+v", tk2, err, tk)
		}
	})
}

//go:build !js

package engine

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// attachWith presents ticket to h's server as a new connection and
// returns what the server said; an admitted connection is closed again.
func attachWith(h *harness, ticket string) error {
	c, sc := h.net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
	defer c.Close()
	return h.s.Attach(sc, ticket)
}

// held runs c for d and returns the credentials it holds then.
func held(t *testing.T, c *Client, d time.Duration) []string {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return slices.Clone(c.credentials)
}

// TestCredentialsBound: a player's resume credentials admit only while
// the server vouches for them: the two newest of a live connection; none
// once the player closed its client; none past the session's end, and
// none is given then; none after a kick, which also refuses the tickets
// issued before it and ends the player's connections with its reason. A
// credential kept cannot chain a player in for ever (before, a 2-second
// ticket kept one admitted 21 minutes later).
func TestCredentialsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxSession: 3 * time.Minute})
		defer h.shutdown()
		if _, err := h.s.CreateWorld("w", WorldConfig{Interest: interest.Config{Width: 4, Height: 4}}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 10}); err != nil {
			t.Fatal(err)
		}
		link := memnet.LinkConfig{Latency: 5 * time.Millisecond}

		// Two at first; a refresh retires the older.
		ann, err := h.join("ann", "w", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		first := held(t, ann, 200*time.Millisecond)
		if len(first) != resumeCreds {
			t.Fatalf("%d credentials after joining, want %d", len(first), resumeCreds)
		}
		later := held(t, ann, resumeRefresh+time.Second)
		if len(later) != resumeCreds || later[0] != first[1] || later[1] == first[1] {
			t.Fatalf("after a refresh: %q, from %q", later, first)
		}
		if err := attachWith(h, first[0]); !errors.Is(err, ErrTicketInvalid) {
			t.Errorf("a credential two refreshes old: %v, want ErrTicketInvalid", err)
		}
		// The player closes its client: its credentials end with it.
		ann.Close()
		time.Sleep(time.Second)
		if err := attachWith(h, later[1]); !errors.Is(err, ErrTicketInvalid) {
			t.Errorf("the credential of a client that closed itself: %v, want ErrTicketInvalid", err)
		}

		// The session ends 3 minutes after its ticket: no credential
		// after that, and none admits.
		bo, err := h.join("bo", "w", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		last := held(t, bo, 3*time.Minute+resumeRefresh)
		if tk, err := parseTicket(testSecret, last[len(last)-1], start); err != nil || tk.Expires.After(start.Add(3*time.Minute+time.Second)) {
			t.Errorf("a credential valid past the session's end: %+v, %v", tk, err)
		}
		if again := held(t, bo, resumeRefresh+time.Second); !slices.Equal(again, last) {
			t.Errorf("a credential given after the session's end")
		}
		tk, _ := parseTicket(testSecret, last[len(last)-1], start)
		if err := h.s.creds.check(h.s, tk, time.Now()); !errors.Is(err, ErrTicketExpired) {
			t.Errorf("a credential past the session's end: %v, want ErrTicketExpired", err)
		}
		bo.Close()

		// A kick ends the player's connections in every room and world,
		// and refuses its credentials and the tickets issued before it.
		before, _ := h.s.Ticket("cy", "w", RolePlayer, time.Minute)
		cyWorld, err := h.join("cy", "w", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		cyRoom, err := h.join("cy", "r", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		creds := held(t, cyWorld, 200*time.Millisecond)
		if n := h.s.Kick("cy", "cheating"); n != 2 {
			t.Fatalf("the kick ended %d connections, want 2", n)
		}
		for _, c := range []*Client{cyWorld, cyRoom} {
			var err error
			for end := time.Now().Add(2 * time.Second); err == nil && time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				err = c.Update(time.Now())
			}
			var ce *ClosedError
			if !errors.Is(err, ErrKicked) || !errors.As(err, &ce) || ce.Detail != "cheating" {
				t.Errorf("a kicked client: %v, want ErrKicked with the reason", err)
			}
		}
		for _, tk := range append(creds, before) {
			if err := attachWith(h, tk); !errors.Is(err, ErrKicked) {
				t.Errorf("after the kick: %v, want ErrKicked", err)
			}
		}
		w, _ := h.s.World("w")
		if got := w.Players(); slices.Contains(got, "cy") {
			t.Errorf("the kicked player is still in the world: %v", got)
		}
		if _, err := w.Reserve("cy", nil, 0, nil); !errors.Is(err, ErrKicked) {
			t.Errorf("a booking for a player kicked a moment ago: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
		if _, err := h.join("cy", "w", RolePlayer, link); err != nil {
			t.Errorf("a ticket issued after the kick: %v", err)
		}
		if got := h.metric("tongbu_kicked_connections_total"); got != "2" {
			t.Errorf("tongbu_kicked_connections_total %q, want 2", got)
		}
	})
}

// TestCredentialsMoved: a player who moved to another world is in that
// world only: a resume with a credential of the world it left is refused
// (ErrMoved, with where it went), and a resuming client follows it there,
// to its entity (before, the old world took it in again: two worlds held
// one player).
func TestCredentialsMoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTwoServers(t)
		field := ts.world(ts.a, "field", 0)
		cave := ts.world(ts.b, "cave", 10)
		var moves []Move
		tk, _ := ts.a.s.Ticket("ann", "field", RolePlayer, time.Minute)
		cfg := ts.config(&moves)
		c, err := Dial(context.Background(), "mem://a", tk, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts.expect("join field ann")
		run(t, c, time.Second)
		old := slices.Clone(c.credentials)
		done := startMove(t, field, "ann", &remote{w: cave, url: "mem://b"}, "hp=7")
		run(t, c, 2*time.Second)
		if err := <-done; err != nil {
			t.Fatalf("transfer: %v", err)
		}
		ts.expect("arrive cave ann hp=7", "leave field ann")
		entity := c.Entity()

		// The old world's credential: refused, and it says where.
		err = attachWith(ts.a, old[len(old)-1])
		var mv *movedError
		if !errors.Is(err, ErrMoved) || !errors.As(err, &mv) || mv.world != "cave" || mv.url != "mem://b" || mv.ticket == "" {
			t.Fatalf("a credential of the world the player left: %v", err)
		}
		if got := field.Players(); len(got) != 0 {
			t.Fatalf("the field holds %v", got)
		}
		// Over signaling, the refusal carries it in a header.
		rf := signalingRefusal(err).(*transport.Refusal)
		se := &transport.SignalingError{Status: rf.Status, Reason: rf.Reason, Header: http.Header(rf.Header)}
		if to, ticket, ok := followMove(&refusedError{ErrMoved, se}, "mem://a"); !ok || to != "mem://b" || ticket == "" {
			t.Fatalf("the signaling refusal tells %q %q %v", to, ticket, ok)
		}

		// A client resuming with the old credential follows the player.
		r := dialResume(context.Background(), "mem://a", []string{old[0]}, cfg)
		if r.err != nil || r.follows != 1 {
			t.Fatalf("resume with the old world's credential: %v (%d follows)", r.err, r.follows)
		}
		defer r.c.Close()
		if r.c.Target() != "cave" || r.c.Entity() != entity {
			t.Fatalf("resumed into %q entity %d; the player is in cave as %d", r.c.Target(), r.c.Entity(), entity)
		}
		run(t, r.c, time.Second)
		if got, f := cave.Players(), field.Players(); len(got) != 1 || len(f) != 0 {
			t.Fatalf("cave holds %v, field %v", got, f)
		}
		c.Close()
		r.c.Close()
		time.Sleep(time.Second)
	})
}

// TestCredentialsAfterLoss: the credentials of a connection whose path
// was lost admit for the resume window, not after it.
func TestCredentialsAfterLoss(t *testing.T) {
	s, relay, url, lim := resumeServer(t, 2*time.Second)
	for _, late := range []bool{false, true} {
		player := map[bool]string{false: "ann", true: "bob"}[late]
		tk, _ := s.Ticket(player, "field", RolePlayer, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		c, err := Dial(ctx, url, tk, &ClientConfig{Limits: lim, ResumeTimeout: -1})
		if err != nil {
			t.Fatal(err)
		}
		updateUntil(t, c, 5*time.Second, "credentials", func() bool { return len(c.credentials) > 0 })
		creds := slices.Clone(c.credentials)
		relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1})
		w, _ := s.World("field")
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			away := make(chan bool, 1)
			w.Do(func(*interest.World) { _, ok := w.away[player]; away <- ok })
			if <-away {
				break
			}
			if time.Now().After(end) {
				t.Fatal("the server did not notice the lost path")
			}
		}
		c.Close()
		relay.SetLinks(udpimpair.Link{}, udpimpair.Link{})
		if late {
			time.Sleep(2500 * time.Millisecond)
		}
		nc, err := Dial(ctx, url, creds[len(creds)-1], &ClientConfig{Limits: lim})
		switch {
		case !late && err != nil:
			t.Errorf("a credential within the resume window: %v", err)
		case late && !errors.Is(err, ErrTicketExpired):
			t.Errorf("a credential past the resume window: %v, want ErrTicketExpired", err)
		}
		if nc != nil {
			nc.Close()
		}
		cancel()
	}
}

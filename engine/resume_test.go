//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// resumeServer is a server whose WebRTC path goes through a relay the
// test can cut, with a world and a room, and connections that notice a
// silent path within a second.
func resumeServer(t *testing.T, window time.Duration) (*Server, *udpimpair.Relay, string, transport.Limits) {
	t.Helper()
	lim := transport.Limits{IdleTimeout: time.Second}
	s, err := NewServer(Config{Secret: testSecret, UDPAddr: "127.0.0.1:0", PublicIPs: []string{"127.0.0.2"}, Limits: lim, ResumeWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	port := s.UDPAddr().(*net.UDPAddr).AddrPort().Port()
	relay, err := udpimpair.New(fmt.Sprintf("127.0.0.2:%d", port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), udpimpair.Link{}, udpimpair.Link{}, 1)
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { s.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); <-served; web.Close(); relay.Close() })
	if _, err := s.CreateWorld("field", WorldConfig{Interest: interest.Config{Width: 8, Height: 8}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRoom("duo", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	return s, relay, web.URL, lim
}

// updateUntil runs c's loop until done, or fails t after d.
func updateUntil(t *testing.T, c *Client, d time.Duration, what string, done func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !done(); time.Sleep(5 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			t.Fatalf("%s: Update: %v", what, err)
		}
		if c.Lockstep() != nil {
			c.Lockstep().Advance(time.Now())
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// TestResume: a client whose path goes silent mid-match (every datagram
// of its path dropped, as when a phone leaves Wi-Fi) notices, dials again
// by itself with the server's credential from a new socket (a new source
// address), and is back: the same entity of the world, the same slot of
// the room, told to the game as Reconnecting then Resumed, with no ticket
// from the game server.
func TestResume(t *testing.T) {
	s, relay, url, lim := resumeServer(t, 10*time.Second)
	for _, target := range []string{"field", "duo"} {
		t.Run(target, func(t *testing.T) {
			var events []ConnectionEvent
			tk, _ := s.Ticket("ann-"+target, target, RolePlayer, time.Minute)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := Dial(ctx, url, tk, &ClientConfig{Limits: lim, OnConnection: func(e ConnectionEvent) { events = append(events, e) }})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			updateUntil(t, c, 5*time.Second, "credentials", func() bool { return len(c.credentials) > 0 })
			entity, slot := c.Entity(), c.Slot()

			relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1})
			updateUntil(t, c, 5*time.Second, "noticing the lost path", func() bool { return len(events) > 0 })
			if events[0].State != Reconnecting || !errors.Is(events[0].Err, ErrClosed) && events[0].Err == nil {
				t.Fatalf("first event %+v, want Reconnecting", events[0])
			}
			relay.SetLinks(udpimpair.Link{}, udpimpair.Link{})
			updateUntil(t, c, 15*time.Second, "resuming", func() bool { return len(events) > 1 })
			if e := events[1]; e.State != Resumed || e.Attempts < 1 {
				t.Fatalf("second event %+v, want Resumed", e)
			}
			t.Logf("%s: resumed after %v, %d dial(s)", target, events[1].Away.Round(time.Millisecond), events[1].Attempts)
			if target == "field" {
				if c.Entity() != entity {
					t.Errorf("entity %d after resuming, was %d", c.Entity(), entity)
				}
				updateUntil(t, c, 5*time.Second, "seeing its own entity again", func() bool {
					_, ok := c.Interest().Self()
					return ok
				})
			} else {
				if c.Slot() != slot {
					t.Errorf("slot %d after resuming, was %d", c.Slot(), slot)
				}
				played := 0
				updateUntil(t, c, 10*time.Second, "playing frames again", func() bool {
					played += len(c.Lockstep().Advance(time.Now()).Frames)
					return played > 30
				})
			}
		})
	}
}

// TestResumeGivesUp: with the server gone for good, a lost connection is
// resumed for ResumeTimeout, then Lost is told and Update returns the
// error; a client closed by the game is not waited for by the world.
func TestResumeGivesUp(t *testing.T) {
	s, relay, url, lim := resumeServer(t, 10*time.Second)
	var events []ConnectionEvent
	tk, _ := s.Ticket("bob", "field", RolePlayer, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, url, tk, &ClientConfig{Limits: lim, ResumeTimeout: 2 * time.Second,
		OnConnection: func(e ConnectionEvent) { events = append(events, e) }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	updateUntil(t, c, 5*time.Second, "credentials", func() bool { return len(c.credentials) > 0 })
	relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1}) // and it never comes back
	var final error
	for end := time.Now().Add(15 * time.Second); final == nil; time.Sleep(5 * time.Millisecond) {
		final = c.Update(time.Now())
		if time.Now().After(end) {
			t.Fatal("still resuming after 15 s, with a ResumeTimeout of 2 s")
		}
	}
	if len(events) != 2 || events[0].State != Reconnecting || events[1].State != Lost {
		t.Fatalf("events %+v, want Reconnecting then Lost", events)
	}
	t.Logf("lost: %v (%d dials in %v)", final, events[1].Attempts, events[1].Away.Round(time.Millisecond))

	// The world held the entity meanwhile, and lets it go after its window;
	// a client that closes itself is let go at once.
	w, _ := s.World("field")
	held := func() int {
		n := make(chan int, 1)
		w.Do(func(*interest.World) { n <- len(w.away) })
		return <-n
	}
	if held() != 1 {
		t.Errorf("%d players held, want bob's", held())
	}
	relay.SetLinks(udpimpair.Link{}, udpimpair.Link{})
	tk, _ = s.Ticket("cat", "field", RolePlayer, time.Minute)
	c2, err := Dial(ctx, url, tk, &ClientConfig{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
	time.Sleep(2 * time.Second)
	if n := held(); n != 1 {
		t.Errorf("%d players held after cat closed its own connection, want only bob's", n)
	}
}

// TestResumeMessage: the credentials message round-trips, and what is not
// one is refused with ErrMalformed.
func TestResumeMessage(t *testing.T) {
	in := []string{"a", "credential-two"}
	out, err := readResume(appendResume(nil, in))
	if err != nil || len(out) != 2 || out[0] != in[0] || out[1] != in[1] {
		t.Fatalf("round trip: %q %v", out, err)
	}
	for _, bad := range [][]byte{nil, {kindEngine | typeResume<<kindBits}, appendResume(nil, []string{""}), appendBye(nil, byeClosed, "")} {
		if _, err := readResume(bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: %v, want ErrMalformed", bad, err)
		}
	}
}

// TestResumeRefresh: every connection gets fresh credentials every
// resumeRefresh from the server's one refresh queue; a connection that
// leaves leaves the queue at once (nothing of it is kept for the next
// refresh), and the others keep their turns.
func TestResumeRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		if _, err := h.s.CreateWorld("w", WorldConfig{Interest: interest.Config{Width: 4, Height: 4}}); err != nil {
			t.Fatal(err)
		}
		var cs []*Client
		t0 := time.Now()
		for i := range 3 {
			c, err := h.join(fmt.Sprint("p", i), "w", RolePlayer, memnet.LinkConfig{Latency: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
			time.Sleep(time.Second) // the joins a second apart: their refreshes too
		}
		update := func(d time.Duration) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
				for _, c := range cs {
					c.Update(time.Now())
				}
			}
		}
		update(100 * time.Millisecond)
		first := make([]string, len(cs))
		for i, c := range cs {
			if len(c.credentials) != resumeCreds {
				t.Fatalf("client %d holds %d credentials after joining, want %d", i, len(c.credentials), resumeCreds)
			}
			first[i] = c.credentials[len(c.credentials)-1]
		}
		if n := h.queued(); n != 3 {
			t.Fatalf("%d connections queued for a refresh, want 3", n)
		}
		// Client 1 leaves; the others get fresh credentials at their turn.
		cs[1].Close()
		update(time.Second)
		if n := h.queued(); n != 2 {
			t.Fatalf("%d connections queued after one left, want 2", n)
		}
		update(time.Until(t0.Add(resumeRefresh - 500*time.Millisecond)))
		if got := cs[0].credentials[len(cs[0].credentials)-1]; got != first[0] {
			t.Fatal("client 0 had a fresh credential before resumeRefresh")
		}
		update(time.Until(t0.Add(resumeRefresh + 3*time.Second))) // client 2 joined 2 s after client 0
		for _, i := range []int{0, 2} {
			c := cs[i]
			if len(c.credentials) != resumeCreds || c.credentials[len(c.credentials)-1] == first[i] {
				t.Fatalf("client %d: no fresh credential after resumeRefresh (%d held)", i, len(c.credentials))
			}
		}
		if n := h.queued(); n != 2 {
			t.Fatalf("%d connections queued after the refresh, want 2", n)
		}
		for _, c := range cs {
			c.Close()
		}
		update(time.Second)
		if n := h.queued(); n != 0 {
			t.Fatalf("%d connections queued after all left, want 0", n)
		}
	})
}

// queued counts the connections in the server's resume queue.
func (h *harness) queued() int {
	q := &h.s.resumes
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for p := q.head; p != nil; p = p.rq.next {
		n++
	}
	return n
}

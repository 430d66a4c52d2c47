//go:build !js

package engine

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// syncBuffer is a log destination that tests may read while the server
// writes.
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

// TestTicketSpentOnlyByAnOffer runs signaling over real WebRTC: a garbage
// offer does not spend its ticket, concurrent offers with one ticket let
// exactly one player in, and a flood of forged tickets is counted in the
// metrics and logged in a line or two, not one line each.
func TestTicketSpentOnlyByAnOffer(t *testing.T) {
	var logs syncBuffer
	s, err := NewServer(Config{
		Secret: testSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(s.Handler())
	defer web.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx) }()
	if _, err := s.CreateRoom("r", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	post := func(ticket, body string) int {
		req, _ := http.NewRequest(http.MethodPost, web.URL+ConnectPath, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/sdp")
		req.Header.Set("Authorization", "Bearer "+ticket)
		req.Header.Set(WireHeader, strconv.Itoa(wireVersion))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}

	tk, _ := s.Ticket("alice", "r", RolePlayer, time.Minute)
	if code := post(tk, "v=0\r\nnot an offer"); code != http.StatusBadRequest {
		t.Fatalf("garbage offer: %d, want 400", code)
	}
	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	c, err := Dial(dctx, web.URL, tk, &ClientConfig{IncludeLoopback: true})
	if err != nil {
		t.Fatalf("the ticket a garbage offer carried: %v", err)
	}
	defer c.Close()

	// Two dials at once with bob's ticket: one plays, one is refused.
	bob, _ := s.Ticket("bob", "r", RolePlayer, time.Minute)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			c, err := Dial(dctx, web.URL, bob, &ClientConfig{IncludeLoopback: true})
			if err == nil {
				defer c.Close()
			}
			errs <- err
		}()
	}
	var ok, refused int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case strings.Contains(err.Error(), "already used"):
			refused++
		default:
			t.Fatalf("concurrent dial: %v", err)
		}
	}
	if ok != 1 || refused != 1 {
		t.Fatalf("one ticket, two dials: %d joined and %d refused, want 1 and 1", ok, refused)
	}

	for range 200 {
		if code := post("forged", "v=0"); code != http.StatusForbidden {
			t.Fatalf("forged ticket: %d, want 403", code)
		}
	}
	if n := strings.Count(logs.String(), "connections refused"); n > 3 {
		t.Fatalf("%d log lines for about 200 refusals, want a bounded few:\n%s", n, logs.String())
	}
	resp, err := http.Get(web.URL + MetricsPath)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(m), `tongbu_refused_total{reason="invalid"} 200`) {
		t.Fatalf("metrics do not count the forged tickets:\n%s", m)
	}
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

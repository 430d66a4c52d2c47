//go:build !js

package engine

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// FuzzClientStream plays a hostile server to an engine.Client: a welcome,
// then arbitrary messages on both channels, (channel, length, bytes)
// triples, then a bye. The client sorts each to its mode or to itself,
// drops what does not decode, never panics, and ends with the bye's
// reason.
func FuzzClientStream(f *testing.F) {
	bye := appendBye(nil, byeShutdown, "done")
	f.Add(false, []byte{0, 3, 1, 2, 3, 1, 2, 0x80, 0x01})
	f.Add(true, []byte{1, 4, 'x', 'y', 'z', 'w', 0, 1, 0})
	f.Add(false, append([]byte{1, byte(len(bye))}, bye...))
	seats := appendSeats(nil, []Seat{SeatPlaying, SeatLate, SeatGone})
	f.Add(false, append([]byte{1, byte(len(seats))}, seats...))
	resume := appendResume(nil, []string{"credential-1", "credential-2"})
	f.Add(false, append([]byte{1, byte(len(resume))}, resume...))
	f.Add(true, append([]byte{0, 9}, appendWelcome(nil, &welcome{mode: Interest, target: "w", self: 1, interest: interest.Config{}.WithDefaults()})[:9]...))
	f.Fuzz(func(t *testing.T, interestMode bool, data []byte) {
		net := memnet.New(1)
		c, s := net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
		defer c.Close()
		defer s.Close()
		w := &welcome{mode: Lockstep, target: "r", slot: 1, lockstep: lockstep.Config{Players: 2}.WithDefaults()}
		if interestMode {
			w = &welcome{mode: Interest, target: "w", self: 1, interest: interest.Config{}.WithDefaults()}
		}
		if err := s.SendReliable(appendWelcome(nil, w)); err != nil {
			t.Fatal(err)
		}
		for len(data) >= 2 {
			ch, n := data[0]&1, int(data[1])
			data = data[2:]
			n = min(n, len(data))
			msg := data[:n]
			data = data[n:]
			if ch == 0 && n > 0 {
				s.SendUnreliable(msg)
			} else if n > 0 {
				s.SendReliable(msg)
			}
		}
		s.SendReliable(bye)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		cl, err := NewClient(ctx, c)
		if err != nil {
			t.Fatalf("the welcome came first: %v", err)
		}
		var closed *ClosedError
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			err := cl.Update(time.Now())
			if err != nil {
				if !errors.As(err, &closed) {
					t.Fatalf("Update: %v, want a ClosedError", err)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the bye never closed the client")
			}
		}
	})
}

// FuzzAuthorize feeds the signaling hook arbitrary Authorization headers
// and query strings: it refuses what is not a good ticket for a target the
// server has, with an error, and never spends one.
func FuzzAuthorize(f *testing.F) {
	s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true, TicketInQuery: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Shutdown(context.Background()) })
	if _, err := s.CreateRoom("r", lockstep.Config{Players: 2}); err != nil {
		f.Fatal(err)
	}
	good, _ := s.Ticket("alice", "r", RolePlayer, time.Minute)
	elsewhere, _ := s.Ticket("bob", "nowhere", RolePlayer, time.Minute)
	f.Add("Bearer "+good, "")
	f.Add("", "ticket="+good)
	f.Add("Bearer "+elsewhere, "")
	f.Add("Basic abc", "ticket=%zz&ticket=x")
	f.Add("Bearer "+good[:len(good)-2], "")
	f.Fuzz(func(t *testing.T, auth, query string) {
		req, err := newRequest(auth, query)
		if err != nil {
			t.Skip()
		}
		meta, err := s.authorize(req)
		if err != nil {
			return
		}
		a, ok := meta.(admission)
		tk := a.ticket
		if !ok || tk.Target != "r" || s.used.used(tk) || a.wire != wireVersion {
			t.Fatalf("authorized %+v (%v): not an unspent ticket for room r", meta, ok)
		}
	})
}

// newRequest is a signaling request with the given Authorization header
// and raw query.
func newRequest(auth, query string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, "http://server"+ConnectPath, nil)
	if err != nil {
		return nil, err
	}
	req.URL.RawQuery = query
	req.Header.Set("Authorization", auth)
	return req, nil
}

//go:build !js

package matchmaker

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzMessages: every message a Service or a queue reads from the network
// decodes or is refused with an error; a submit's tickets that decode go
// into a Matcher, which takes them or refuses them, and forms matches
// from what it took without panicking.
func FuzzMessages(f *testing.F) {
	seed := func(v any) {
		b, _ := json.Marshal(v)
		f.Add(b)
	}
	seed(submitMsg{Queue: "q1", Tickets: []Ticket{
		{ID: "a", Mode: "duel", Players: []Player{{ID: "a", Rating: NewRating()}}, RTT: map[string]int{"eu": 30}},
		{ID: "b", Mode: "duel", Players: []Player{{ID: "b", Rating: NewRating()}}},
		{ID: "c", Mode: "duel", Backfill: &Backfill{Room: "r", Region: "eu", Teams: [][]Rating{{NewRating()}}, Open: []int{0, 1}}},
	}})
	seed(heartbeat{ID: "mm", Instance: 1, IntervalMS: 1000, Switches: [][2]string{{"1.4", "1.5"}}})
	seed(queueMsg{Op: "claim", Service: "mm", Claims: []claim{{Match: "m", Tickets: []string{"a"}}}})
	seed(queueMsg{Op: "seat", Service: "mm", Seat: &seatMsg{Ticket: "c", Match: "m", Players: []string{"a"}}})
	f.Add([]byte(`{"queue":"q","tickets":[{"id":"x","mode":"duel","players":[{"id":"p","rating":{"Mu":1e308,"Sigma":-1}}]}]}`))
	f.Add([]byte(`{"op":"seat","service":"mm"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		decode[heartbeat](b)
		decode[switchMsg](b)
		decode[cancelMsg](b)
		decode[queueMsg](b)
		decode[queueReply](b)
		decode[submitReply](b)
		s, err := decode[submitMsg](b)
		if err != nil {
			return
		}
		m, err := NewMatcher(Config{Modes: []Mode{{Name: "duel", Teams: 2, TeamSize: 1}, {Name: "3x2", Teams: 3, TeamSize: 2}}})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1e9, 0)
		for _, tk := range s.Tickets {
			m.Add(tk, now)
		}
		m.Match(now.Add(time.Hour), []Site{{Node: "n", Region: "eu", Free: 10}})
		m.Match(now.Add(time.Hour), nil)
	})
}

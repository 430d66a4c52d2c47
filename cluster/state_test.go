//go:build !js

package cluster

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

func hb(id string, inst, gen uint64, rooms int) *heartbeat {
	return &heartbeat{ID: id, Instance: inst, URL: "http://" + id + ":8080", Capacity: 10, Rooms: rooms, Gen: gen, IntervalMS: 100}
}

func ev(id string, inst, gen uint64, op, room string) *roomEvent {
	return &roomEvent{ID: id, Instance: inst, Gen: gen, Op: op, Room: room}
}

func rooms(s *state, id string) []string {
	var out []string
	for r := range s.nodes[id].rooms {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

func TestStateEventsAndExpiry(t *testing.T) {
	s := newState(3, 10, 100)
	if fetch, loss := s.heartbeat(hb("a", 1, 0, 0), t0); fetch || loss != nil {
		t.Fatalf("a fresh empty node: fetch %v, loss %v", fetch, loss)
	}
	for i, e := range []*roomEvent{ev("a", 1, 1, "open", "r1"), ev("a", 1, 2, "open", "r2"), ev("a", 1, 3, "open", "r3"), ev("a", 1, 4, "close", "r2")} {
		if s.event(e) {
			t.Fatalf("event %d in order asked for the list", i)
		}
	}
	if got := rooms(s, "a"); !slices.Equal(got, []string{"r1", "r3"}) {
		t.Fatalf("rooms %v", got)
	}
	if s.event(ev("a", 1, 3, "open", "r9")) {
		t.Fatal("an old event asked for the list")
	}
	if fetch, _ := s.heartbeat(hb("a", 1, 4, 2), t0.Add(100*time.Millisecond)); fetch {
		t.Fatal("a heartbeat matching the events asked for the list")
	}
	// Three intervals of 100 ms pass: not yet; past them: lost.
	if l := s.expire(t0.Add(400 * time.Millisecond)); len(l) != 0 {
		t.Fatalf("lost after exactly 3 intervals: %v", l)
	}
	losses := s.expire(t0.Add(401 * time.Millisecond))
	if len(losses) != 1 || losses[0].Node != "a" || !slices.Equal(losses[0].Rooms, []string{"r1", "r3"}) {
		t.Fatalf("losses %+v", losses)
	}
	if l := s.expire(t0.Add(time.Second)); len(l) != 0 {
		t.Fatalf("a dead node lost twice: %v", l)
	}
	if len(s.lost) != 2 || s.lost[0].Room != "r1" || s.lost[1].URL != "http://a:8080" {
		t.Fatalf("lost %+v", s.lost)
	}
	if _, ok := s.locate("r1"); ok {
		t.Fatal("a lost room is still located")
	}
	// Back from a partition, same instance: the list is asked again.
	if fetch, loss := s.heartbeat(hb("a", 1, 4, 2), t0.Add(2*time.Second)); !fetch || loss != nil {
		t.Fatalf("back from the dead: fetch %v, loss %v", fetch, loss)
	}
	s.listed("a", &roomList{ID: "a", Instance: 1, Gen: 4, Rooms: []string{"r1", "r3"}})
	if st, ok := s.locate("r3"); !ok || st.ID != "a" || !st.Alive {
		t.Fatalf("locate r3: %+v %v", st, ok)
	}
}

func TestStateGapsAndLists(t *testing.T) {
	tests := []struct {
		name   string
		events []*roomEvent
		fetch  bool
	}{
		{"in order", []*roomEvent{ev("a", 1, 1, "open", "x"), ev("a", 1, 2, "open", "y")}, false},
		{"a gap", []*roomEvent{ev("a", 1, 1, "open", "x"), ev("a", 1, 3, "open", "z")}, true},
		{"another instance's event is ignored", []*roomEvent{ev("a", 2, 1, "open", "x")}, false},
		{"an unknown node's event is ignored", []*roomEvent{ev("b", 1, 1, "open", "x")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newState(3, 10, 100)
			s.heartbeat(hb("a", 1, 0, 0), t0)
			fetch := false
			for _, e := range tt.events {
				fetch = s.event(e) || fetch
			}
			if fetch != tt.fetch {
				t.Fatalf("fetch %v, want %v", fetch, tt.fetch)
			}
		})
	}

	s := newState(3, 10, 100)
	// A node first seen with rooms: its list is fetched once, not twice.
	if fetch, _ := s.heartbeat(hb("a", 1, 5, 2), t0); !fetch {
		t.Fatal("a node with rooms did not ask for the list")
	}
	if fetch, _ := s.heartbeat(hb("a", 1, 5, 2), t0.Add(100*time.Millisecond)); fetch {
		t.Fatal("a second fetch while one is on its way")
	}
	s.listed("a", nil) // the request failed: the next heartbeat asks again
	if fetch, _ := s.heartbeat(hb("a", 1, 5, 2), t0.Add(200*time.Millisecond)); !fetch {
		t.Fatal("no fetch after a failed one")
	}
	s.listed("a", &roomList{ID: "a", Instance: 9, Gen: 5, Rooms: []string{"stale"}}) // another instance's
	if len(s.nodes["a"].rooms) != 0 {
		t.Fatal("another instance's list applied")
	}
	s.heartbeat(hb("a", 1, 5, 2), t0.Add(300*time.Millisecond))
	s.listed("a", &roomList{ID: "a", Instance: 1, Gen: 5, Rooms: []string{"p", "q"}})
	if got := rooms(s, "a"); !slices.Equal(got, []string{"p", "q"}) {
		t.Fatalf("rooms %v", got)
	}
	// A list larger than the node's capacity is refused.
	s.heartbeat(hb("a", 1, 6, 2), t0.Add(400*time.Millisecond))
	big := &roomList{ID: "a", Instance: 1, Gen: 6}
	for i := range 11 {
		big.Rooms = append(big.Rooms, fmt.Sprint("r", i))
	}
	s.listed("a", big)
	if got := rooms(s, "a"); !slices.Equal(got, []string{"p", "q"}) {
		t.Fatalf("rooms after an oversized list %v", got)
	}
}

func TestStateRestartAndLeave(t *testing.T) {
	s := newState(3, 10, 100)
	s.heartbeat(hb("a", 1, 0, 0), t0)
	s.event(ev("a", 1, 1, "open", "r1"))
	// The process restarts before it is declared dead: a new instance.
	fetch, loss := s.heartbeat(hb("a", 2, 0, 0), t0.Add(50*time.Millisecond))
	if fetch || loss == nil || !loss.Restarted || !slices.Equal(loss.Rooms, []string{"r1"}) {
		t.Fatalf("restart: fetch %v, loss %+v", fetch, loss)
	}
	s.event(ev("a", 2, 1, "open", "r2"))
	if got := rooms(s, "a"); !slices.Equal(got, []string{"r2"}) {
		t.Fatalf("rooms %v", got)
	}
	// A leave from another instance is ignored; from this one, the node
	// is forgotten and nothing is lost.
	if s.leave(&leave{ID: "a", Instance: 1}) {
		t.Fatal("another instance's leave accepted")
	}
	if !s.leave(&leave{ID: "a", Instance: 2}) || len(s.nodes) != 0 {
		t.Fatal("leave not applied")
	}
	if l := s.expire(t0.Add(time.Hour)); len(l) != 0 || len(s.lost) != 1 {
		t.Fatalf("after leave: losses %v, lost %v", l, s.lost)
	}
}

func TestStateBounds(t *testing.T) {
	s := newState(3, 4, 5)
	for i := range 10 {
		s.heartbeat(hb(fmt.Sprint("n", i), 1, 0, 0), t0)
	}
	if len(s.nodes) != 4 {
		t.Fatalf("%d nodes tracked, bound 4", len(s.nodes))
	}
	for i := range 4 {
		id := fmt.Sprint("n", i)
		for g := uint64(1); g <= 3; g++ {
			s.event(ev(id, 1, g, "open", fmt.Sprint(id, "-r", g)))
		}
	}
	losses := s.expire(t0.Add(time.Second))
	if len(losses) != 4 || len(s.lost) != 5 {
		t.Fatalf("%d losses, %d lost rooms remembered (bound 5)", len(losses), len(s.lost))
	}
	if s.lost[4].Room != "n3-r3" {
		t.Fatalf("the newest lost room is %q", s.lost[4].Room)
	}
	// Dead nodes make way for new ones.
	s.heartbeat(hb("fresh", 1, 0, 0), t0.Add(2*time.Second))
	if s.nodes["fresh"] == nil || len(s.nodes) != 4 {
		t.Fatalf("a new node not admitted over a dead one: %d nodes", len(s.nodes))
	}
	// Opening more rooms than the capacity asks for the list instead.
	s.heartbeat(hb("full", 1, 0, 0), t0.Add(2*time.Second))
	for g := uint64(1); g <= 10; g++ {
		s.event(ev("full", 1, g, "open", fmt.Sprint("f", g)))
	}
	if !s.event(ev("full", 1, 11, "open", "f11")) || len(s.nodes["full"].rooms) != 10 {
		t.Fatalf("an 11th room on a node of capacity 10: %d rooms", len(s.nodes["full"].rooms))
	}
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		ok   bool
	}{
		{"heartbeat", `{"id":"n-1","instance":7,"url":"http://127.0.0.1:8080","capacity":10,"rooms":2,"gen":5,"interval_ms":1000}`, true},
		{"unknown fields are ignored", `{"id":"n","url":"https://x","capacity":1,"interval_ms":1000,"zone":"eu"}`, true},
		{"id with a dot", `{"id":"n.1","url":"http://x","capacity":1,"interval_ms":1000}`, false},
		{"id too long", `{"id":"` + strings.Repeat("x", 65) + `","url":"http://x","capacity":1,"interval_ms":1000}`, false},
		{"not a URL", `{"id":"n","url":"ftp://x","capacity":1,"interval_ms":1000}`, false},
		{"more rooms than capacity", `{"id":"n","url":"http://x","capacity":1,"rooms":2,"interval_ms":1000}`, false},
		{"capacity too large", `{"id":"n","url":"http://x","capacity":10001,"interval_ms":1000}`, false},
		{"interval too short", `{"id":"n","url":"http://x","capacity":1,"interval_ms":1}`, false},
		{"not JSON", `{"id":`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decode[heartbeat]([]byte(tt.msg))
			if (err == nil) != tt.ok {
				t.Fatalf("err %v, want ok %v", err, tt.ok)
			}
		})
	}
	if _, err := decode[roomEvent]([]byte(`{"id":"n","op":"move","room":"r"}`)); err == nil {
		t.Fatal("unknown op accepted")
	}
	if _, err := decode[RoomRequest]([]byte(`{"room":""}`)); err == nil {
		t.Fatal("empty room name accepted")
	}
	if _, err := decode[RoomRequest](make([]byte, maxMsg+1)); err == nil {
		t.Fatal("oversized message accepted")
	}
}

// FuzzDirectory feeds any bytes to every decoder and applies what decodes
// to a directory: nothing panics and the bounds hold.
func FuzzDirectory(f *testing.F) {
	f.Add([]byte(`{"id":"a","instance":1,"url":"http://a","capacity":2,"rooms":1,"gen":1,"interval_ms":100}`))
	f.Add([]byte(`{"id":"a","instance":1,"gen":1,"op":"open","room":"r"}`))
	f.Add([]byte(`{"id":"a","instance":1,"gen":3,"rooms":["r","s"]}`))
	f.Add([]byte(`{"id":"a","instance":1}`))
	f.Add([]byte(`{"room":"r","players":["p"],"config":{"players":2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newState(3, 4, 8)
		now := t0
		for i := 0; i < 3; i++ {
			now = now.Add(150 * time.Millisecond)
			if h, err := decode[heartbeat](b); err == nil {
				s.heartbeat(h, now)
			}
			if e, err := decode[roomEvent](b); err == nil {
				s.event(e)
			}
			if l, err := decode[roomList](b); err == nil {
				s.listed(l.ID, l)
			}
			if l, err := decode[leave](b); err == nil {
				s.leave(l)
			}
			decode[RoomRequest](b)
			decode[createReply](b)
			s.expire(now)
		}
		if len(s.nodes) > 4 || len(s.lost) > 8 {
			t.Fatalf("bounds broken: %d nodes, %d lost", len(s.nodes), len(s.lost))
		}
		for _, n := range s.nodes {
			if len(n.rooms) > n.hb.Capacity {
				t.Fatalf("%d rooms over capacity %d", len(n.rooms), n.hb.Capacity)
			}
		}
	})
}

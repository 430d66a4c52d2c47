package lockstep

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// TestSpectatorsComeAndGo: the room holds only the spectators watching
// now: a full room takes a new one as soon as one leaves, ids are never
// reused, a removed spectator's packets are dropped, and the ones still
// watching keep receiving frames under their own ids.
func TestSpectatorsComeAndGo(t *testing.T) {
	start := time.Unix(0, 0)
	rec := &recorder{}
	room, err := NewRoom(Config{Players: 2}, start, rec)
	if err != nil {
		t.Fatal(err)
	}
	now := start.Add(time.Second)
	room.Tick(now)
	seen := map[int]bool{}
	add := func() int {
		t.Helper()
		id, err := room.AddSpectator(0, now)
		if err != nil {
			t.Fatal(err)
		}
		if id < 2 || seen[id] {
			t.Fatalf("spectator id %d: a player's, or reused", id)
		}
		seen[id] = true
		return id
	}
	// Many more than the room holds at once come and go.
	for range 3 * maxSpectators {
		if err := room.RemoveSpectator(add()); err != nil {
			t.Fatal(err)
		}
	}
	var ids []int
	for range maxSpectators {
		ids = append(ids, add())
	}
	if _, err := room.AddSpectator(0, now); !errors.Is(err, ErrSpectatorsFull) {
		t.Fatalf("spectator over the bound: %v, want ErrSpectatorsFull", err)
	}
	for _, id := range ids[100:] {
		if err := room.RemoveSpectator(id); err != nil {
			t.Fatal(err)
		}
	}
	if err := room.RemoveSpectator(ids[100]); err == nil {
		t.Fatal("a spectator removed twice")
	}
	if len(room.specs.peers) != 100 || cap(room.specs.peers) > 2*maxSpectators {
		t.Fatalf("%d spectators held (capacity %d), want the 100 watching", len(room.specs.peers), cap(room.specs.peers))
	}
	var w codec.Writer
	(&uplink{}).encode(&w)
	before := room.Stats().Dropped[DropSlot]
	if err := room.Deliver(ids[200], w.Bytes(), now); err == nil || room.Stats().Dropped[DropSlot] != before+1 {
		t.Fatalf("a removed spectator's packet: %v", err)
	}
	if err := room.Deliver(ids[50], w.Bytes(), now); err != nil {
		t.Fatalf("a watching spectator's packet: %v", err)
	}
	rec.slots = nil
	room.Tick(now.Add(time.Second))
	got := map[int]bool{}
	for _, s := range rec.slots {
		got[s] = true
	}
	for _, id := range ids[:100] {
		if !got[id] {
			t.Fatalf("spectator %d, still watching, got no frames", id)
		}
	}
	for _, id := range ids[100:] {
		if got[id] {
			t.Fatalf("removed spectator %d got frames", id)
		}
	}
	q := room.Quality()
	var peers []int
	for _, p := range q.Peers {
		peers = append(peers, p.Peer)
	}
	if !slices.Equal(peers, append([]int{0, 1}, ids[:100]...)) {
		t.Fatalf("quality report peers %v, want the players and the 100 watching", peers)
	}
}

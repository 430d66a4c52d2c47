//go:build !js

package lean

import (
	"slices"
	"testing"
)

// TestTimerTable: slots are handed out densely and reused once freed;
// the sweep finds exactly the peers whose deadline is due, a freed slot
// never, and a peer's deadline set before it had a slot is carried in.
func TestTimerTable(t *testing.T) {
	var tt timerTable
	peers := make([]*Peer, 600) // over two chunks
	slots := make([]int32, len(peers))
	for i := range peers {
		peers[i] = &Peer{}
		if i == 7 {
			peers[i].deadline = 5 // set before its slot
		}
		slots[i] = tt.add(peers[i])
		if slots[i] != int32(i) {
			t.Fatalf("peer %d got slot %d", i, slots[i])
		}
	}
	for i, p := range peers {
		if i%100 == 0 {
			p.setDeadline(int64(10 + i))
		}
	}
	tt.remove(slots[200])
	due := tt.due(300, nil)
	want := []*Peer{peers[0], peers[7], peers[100]}
	if !slices.Equal(due, want) {
		t.Fatalf("due at 300: %d peers, want peers 0, 7 and 100", len(due))
	}
	if got := len(tt.due(1<<62, nil)); got != 6 {
		t.Errorf("due at the end of time: %d peers, want 6 (0, 7, 100, 300, 400 and 500)", got)
	}
	q := &Peer{}
	if s := tt.add(q); s != slots[200] {
		t.Errorf("a freed slot is not reused: got %d, want %d", s, slots[200])
	}
	if got := tt.due(1<<62, nil); slices.Contains(got, q) {
		t.Error("a new peer inherited the freed slot's deadline")
	}
}

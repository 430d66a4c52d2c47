//go:build !js

package engine

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestStrictRoom: a strict room started by its first player does not
// wait for the player not yet there (marked gone until it joins); once
// that player has joined and caught up, the room waits for it: when it
// stops, the other is told whom it waits for and plays no frame, and
// both go on when it is back, with the same frames.
func TestStrictRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 2, Strict: true, StrictWait: 5 * time.Second}); err != nil {
			t.Fatal(err)
		}
		link := memnet.LinkConfig{Latency: 15 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05}
		p0, err := h.join("p0", "r", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		alone := play(t, p0, 2*time.Second)
		if len(alone) < 25 {
			t.Fatalf("the first player alone played %d frames in 2 s: the room waited for one not there", len(alone))
		}
		for _, f := range alone[1:] {
			if !f.Slots[1].Gone {
				t.Fatalf("frame %d: the absent player's slot %+v, want gone", f.Number, f.Slots[1])
			}
		}
		p1, err := h.join("p1", "r", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		var f1 []lockstep.Frame
		done := make(chan struct{})
		go func() { f1 = play(t, p1, 3*time.Second); close(done) }()
		f0 := append(alone, play(t, p0, 3*time.Second)...)
		<-done
		// p1 stops for 2 s: p0 waits, told for whom.
		var told []int
		held := 0
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
			now := time.Now()
			if err := p0.Update(now); err != nil {
				t.Fatal(err)
			}
			st := p0.Lockstep().Advance(now)
			f0 = append(f0, st.Frames...)
			held += len(st.Frames)
			if st.WaitingFor != nil {
				told = st.WaitingFor
			}
		}
		if !slices.Equal(told, []int{1}) || held > 6 {
			t.Fatalf("while the other player was away for 2 s: told %v, played %d frames", told, held)
		}
		done = make(chan struct{})
		go func() { f1 = append(f1, play(t, p1, 3*time.Second)...); close(done) }()
		f0 = append(f0, play(t, p0, 3*time.Second)...)
		<-done
		if p0.Lockstep().WaitingFor() != nil {
			t.Fatalf("still told the room waits for %v", p0.Lockstep().WaitingFor())
		}
		// Both played the same frames, from p1's first.
		byNum := map[int]lockstep.Frame{}
		for _, f := range f0 {
			byNum[f.Number] = f
		}
		same := 0
		for _, f := range f1 {
			g, ok := byNum[f.Number]
			if !ok {
				continue
			}
			for i := range f.Slots {
				if f.Slots[i].MadeUp != g.Slots[i].MadeUp || !slices.EqualFunc(f.Slots[i].Inputs, g.Slots[i].Inputs, func(a, b []byte) bool { return string(a) == string(b) }) {
					t.Fatalf("frame %d slot %d: %+v and %+v", f.Number, i, f.Slots[i], g.Slots[i])
				}
			}
			same++
		}
		if same < 60 {
			t.Fatalf("only %d frames played by both", same)
		}
	})
}

// nullAuthority is an authoritative room's game that changes nothing.
type nullAuthority struct{}

func (nullAuthority) Step(lockstep.Frame)                    {}
func (nullAuthority) Hash() uint64                           { return 0 }
func (nullAuthority) Changes() []lockstep.StateChange        { return nil }
func (nullAuthority) Visible(player int, entity uint32) bool { return true }

// TestRoomWire: strict and authoritative rooms refuse clients that read
// wire versions before 7 (a strict room's configuration, a view in
// parts); other rooms serve them.
func TestRoomWire(t *testing.T) {
	h := newHarness(t, Config{})
	defer h.shutdown()
	for _, tc := range []struct {
		name string
		cfg  lockstep.Config
		old  bool // served to a client of version 6
	}{
		{"plain", lockstep.Config{Players: 2}, true},
		{"strict", lockstep.Config{Players: 2, Strict: true}, false},
		{"auth", lockstep.Config{Players: 2, Authoritative: true, Simulation: func() lockstep.Simulation { return nullAuthority{} }}, false},
	} {
		r, err := h.s.CreateRoom(tc.name, tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.wireFor(6); (err == nil) != tc.old || err != nil && !errors.Is(err, ErrWireVersion) {
			t.Errorf("%s room, a client of version 6: %v", tc.name, err)
		}
		if err := r.wireFor(wireVersion); err != nil {
			t.Errorf("%s room, a client of version %d: %v", tc.name, wireVersion, err)
		}
	}
}

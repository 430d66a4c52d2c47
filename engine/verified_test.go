//go:build !js

package engine_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestVerifiedRoom: an engine room that runs movers and verifies game
// events names the client that reports an event nobody else saw, hands the
// agreed result over, and catches a reconnecting player up from a snapshot.
func TestVerifiedRoom(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	cfg := lockstep.Config{Players: 3, Hz: 30, VerifyEvents: true,
		Simulation: func() lockstep.Simulation { g, _ := movers.New(3, nil); return g }}
	room, err := srv.CreateRoom("verified", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var verdicts []lockstep.Event
	room.OnEvent(func(e lockstep.Event) {
		if e.Kind == lockstep.EventVerdict {
			mu.Lock()
			verdicts = append(verdicts, e)
			mu.Unlock()
		}
	})
	net := memnet.New(1)
	dial := func(player string) *engine.Client {
		client, server := net.Pipe(memnet.LinkConfig{}, memnet.LinkConfig{})
		ticket, _ := srv.Ticket(player, "verified", engine.RolePlayer, time.Minute)
		if err := srv.Attach(server, ticket); err != nil {
			t.Fatal(err)
		}
		c, err := engine.NewClient(context.Background(), client)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var clients []*engine.Client
	for i := range 3 {
		clients = append(clients, dial(fmt.Sprint("p", i)))
	}
	games := make([]*movers.Game, 3)
	for i := range games {
		games[i], _ = movers.New(3, nil)
	}
	// Player 2 plants an event nobody else saw at a frame every client
	// runs live: the first tenth frame a second after all three have
	// stepped a frame (on a loaded machine a player may join late and
	// catch up past any fixed frame).
	var snapshotAt int
	first := []int{-1, -1, -1}
	plantAt, planted := -1, -1
	play := func(until func() bool) {
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end) && !until(); time.Sleep(time.Second / 60) {
			now := time.Now()
			for i, c := range clients {
				if c == nil {
					continue
				}
				c.Lockstep().Input(now, []byte{byte(i * 80), 16})
				if err := c.Update(now); err != nil {
					t.Fatal(err)
				}
				st := c.Lockstep().Advance(now)
				if st.Snapshot != nil {
					if err := games[i].Restore(st.Snapshot); err != nil {
						t.Fatal(err)
					}
					snapshotAt = st.SnapshotFrame
				}
				for _, f := range st.Frames {
					games[i].Step(f)
					if first[i] < 0 {
						first[i] = f.Number
						if plantAt < 0 && slices.Min(first) >= 0 {
							plantAt = f.Number + 30
						}
					}
					if f.Number%10 == 0 {
						c.Lockstep().ReportEvent(f.Number, fmt.Appendf(nil, "tick %d", f.Number))
						if i == 2 && planted < 0 && plantAt >= 0 && f.Number >= plantAt {
							c.Lockstep().ReportEvent(f.Number, []byte("a goal nobody saw"))
							planted = f.Number
						}
					}
				}
			}
		}
	}
	play(func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(verdicts) > 0
	})
	mu.Lock()
	if len(verdicts) != 1 || !slices.Equal(verdicts[0].Players, []int{2}) || verdicts[0].Frame != planted {
		t.Fatalf("verdicts %+v, planted at frame %d (to plant at %d; the clients' first frames %v, frames they have %d %d %d)", verdicts, planted, plantAt, first,
			clients[0].Lockstep().Have(), clients[1].Lockstep().Have(), clients[2].Lockstep().Have())
	}
	mu.Unlock()
	res := make(chan lockstep.MatchResult, 1)
	room.Do(func(l *lockstep.Room) { res <- l.Result() })
	r := <-res
	// The players may have joined after frame 0 and caught up from a
	// snapshot: the agreed events run from there, one every 10 frames,
	// the planted frame's among them.
	if r.Players[2].Disagreed != 1 || r.Players[0].Disagreed != 0 || r.Players[1].Disagreed != 0 || len(r.Events) < 3 {
		t.Fatalf("result %+v", r)
	}
	hasPlanted := false
	for i, e := range r.Events {
		if want := fmt.Sprint("tick ", r.Events[0].Frame+10*i); string(e.Data) != want || e.Frame != r.Events[0].Frame+10*i {
			t.Fatalf("agreed event %d: %q at frame %d, want %q", i, e.Data, e.Frame, want)
		}
		hasPlanted = hasPlanted || e.Frame == planted
	}
	if !hasPlanted {
		t.Fatalf("agreed events %+v", r.Events)
	}

	// Player 0 reconnects with a fresh client: a snapshot of the room's
	// game, then the frames after it.
	// A player who joined after frame 0 took a snapshot already.
	before := room.Stats().Snapshots
	snapshotAt = 0
	clients[0].Close()
	clients[0] = dial("p0")
	games[0], _ = movers.New(3, nil)
	play(func() bool { return snapshotAt > 0 && !clients[0].Lockstep().CatchingUp() })
	if snapshotAt == 0 {
		t.Fatal("no snapshot")
	}
	if st := room.Stats(); st.Snapshots != before+1 || st.SimFrames == 0 {
		t.Fatalf("room stats %+v", st)
	}
}

//go:build !js

package view

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/duel/game"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestSessionsAgree plays 20 s of a duel between two bots, each through
// a Session over an engine connection on the in-memory network (25 ms
// each way, jitter and 1% loss), in virtual time: the room's own run of
// the game and both sessions agree on every confirmed hash, the sessions
// roll back, and one uplink packet leaves per tick.
func TestSessionsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv, err := engine.NewServer(engine.Config{Secret: make([]byte, 32), NoWebRTC: true, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		defer srv.Shutdown(ctx)
		room, err := srv.CreateRoom("duel", game.RoomConfig())
		if err != nil {
			t.Fatal(err)
		}
		desyncs := 0
		room.OnEvent(func(e lockstep.Event) {
			if e.Kind == lockstep.EventDesync {
				desyncs++
			}
		})
		net := memnet.New(1)
		link := memnet.LinkConfig{Latency: 25 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01}
		hashes := []map[int]uint64{{}, {}}
		var sessions []*Session
		var conns []*engine.Client
		for i := range game.Players {
			c, s := net.Pipe(link, link)
			tk, err := srv.Ticket(fmt.Sprint("p", i), "duel", engine.RolePlayer, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.Attach(s, tk); err != nil {
				t.Fatal(err)
			}
			cl, err := engine.NewClient(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			h := hashes[cl.Slot()]
			ss, err := NewSession(cl, lockstep.RollbackConfig{OnConfirmedHash: func(f int, x uint64) { h[f] = x }})
			if err != nil {
				t.Fatal(err)
			}
			sessions = append(sessions, ss)
			conns = append(conns, cl)
		}
		bots := []*game.Bot{game.NewBot(sessions[0].Slot(), 1), game.NewBot(sessions[1].Slot(), 2)}
		sent0 := conns[0].Stats().SentMessages
		const ticks = 20 * game.Hz
		for range ticks {
			now := time.Now()
			for i, s := range sessions {
				if err := s.Tick(now, bots[i].Input(s.Game())); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(time.Second / game.Hz)
		}
		compared := 0
		for f, h := range hashes[0] {
			if h1, ok := hashes[1][f]; ok {
				compared++
				if h1 != h {
					t.Fatalf("frame %d: the sessions' confirmed hashes differ", f)
				}
			}
		}
		if sent := conns[0].Stats().SentMessages - sent0; sent > ticks+ticks/10 {
			t.Errorf("%d messages sent in %d ticks, want one a tick (and a few reliable ones)", sent, ticks)
		}
		st := room.Stats()
		t.Logf("%d hashes compared; room %d frames; session 0 %+v", compared, st.Frames, sessions[0].Stats())
		if compared < 20*game.Hz/30-5 || sessions[0].Stats().Rollbacks == 0 {
			t.Fatalf("%d hashes compared, %+v", compared, sessions[0].Stats())
		}
		if desyncs != 0 {
			t.Fatalf("%d desyncs", desyncs)
		}
	})
}

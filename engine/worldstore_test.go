//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// storeWorld is a world's configuration with a game state the
// checkpoint carries: a counter of ticks, and NPCs walking.
func storeWorld(ticks *atomic.Int64, restored *string) WorldConfig {
	cfg := WorldConfig{
		Interest: interest.Config{Width: 8, Height: 8, Hz: 20},
		Tick: func(w *interest.World, now time.Time) {
			ticks.Add(1)
		},
		Checkpoint: func(w *interest.World) []byte { return fmt.Appendf(nil, "ticks=%d", ticks.Load()) },
		Restore: func(w *interest.World, state []byte) error {
			*restored = string(state)
			return nil
		},
	}
	return cfg
}

// worldPlayers dials n players into world name at url and keeps them
// walking.
type worldPlayer struct {
	c      *Client
	events []ConnectionEvent
	moves  []Move
}

func dialWorld(t *testing.T, ctx context.Context, s *Server, url, world string, n int) []*worldPlayer {
	t.Helper()
	var ps []*worldPlayer
	for i := range n {
		p := &worldPlayer{}
		tk, _ := s.Ticket(fmt.Sprintf("p%d", i), world, RolePlayer, time.Minute)
		c, err := Dial(ctx, url, tk, &ClientConfig{Logger: testLogger(t),
			OnConnection: func(e ConnectionEvent) { p.events = append(p.events, e) },
			OnMove:       func(m Move) { p.moves = append(p.moves, m) },
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		p.c = c
		ps = append(ps, p)
	}
	return ps
}

func playWorld(t *testing.T, ps []*worldPlayer, what string, d time.Duration, done func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !done(); time.Sleep(5 * time.Millisecond) {
		for i, p := range ps {
			now := time.Now()
			if err := p.c.Update(now); err != nil {
				t.Fatalf("%s: player %d: %v", what, i, err)
			}
			if is := p.c.Interest(); is != nil {
				if me, ok := is.Self(); ok && !me.Moving() {
					is.Move(interest.Vec{X: me.Pos.X + int32(now.UnixMilli()%60) - 30, Y: me.Pos.Y + int32(i*10) - 10}, 0)
				}
			}
			p.c.Flush(now)
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// TestWorldRestoredAfterCrash: a world's server dies; another restores
// the world from its last checkpoint; every player notices the silence,
// resumes there by itself (the standby the world named) with the
// credentials the first server gave it, into its own entity, and is told
// the frame the world went back to; the game gets its state back.
func TestWorldRestoredAfterCrash(t *testing.T) {
	a, relay, urlA := failoverServer(t, true)
	b, _, urlB := failoverServer(t, false)
	var ticks atomic.Int64
	var got string
	cfg := storeWorld(&ticks, &got)
	w, err := a.CreateWorld("w", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var dead atomic.Bool
	w.Feed(WorldFeed{MayTick: func() bool { return !dead.Load() }})
	w.SetStandby(urlB)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	ps := dialWorld(t, ctx, a, urlA, "w", 3)
	playWorld(t, ps, "playing on the first server", 10*time.Second, func() bool {
		for _, p := range ps {
			if len(p.c.credentials) < 2 || p.c.Standby() != urlB || p.c.Interest().Frame() < 10 {
				return false
			}
		}
		return true
	})
	cp, err := w.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := ReadCheckpointInfo(cp)
	if err != nil || info.World != "w" || info.Players != 3 {
		t.Fatalf("checkpoint %+v, %v", info, err)
	}
	var m strings.Builder
	a.writeMetrics(&m)
	if !strings.Contains(m.String(), "tongbu_world_checkpoint_seconds_count 1\n") ||
		!strings.Contains(m.String(), fmt.Sprintf("tongbu_world_entities{world=\"w\"} %d\n", w.Stats().Entities)) || w.Stats().Entities < 3 {
		t.Errorf("the checkpoint was not timed:\n%s", m.String())
	}
	self := make([]interest.ID, len(ps))
	for i, p := range ps {
		self[i] = p.c.Entity()
	}
	// Play on past the checkpoint, then the first server dies.
	playWorld(t, ps, "playing past the checkpoint", 5*time.Second, func() bool { return ps[0].c.Interest().Frame() > info.Frame+10 })
	relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1})
	dead.Store(true)
	t.Logf("killed at frame %d", ps[0].c.Interest().Frame())
	var got2 string
	cfg2 := storeWorld(new(atomic.Int64), &got2)
	if _, err := b.RestoreWorld(cfg2, cp); err != nil {
		t.Fatal(err)
	}
	// The game's state as the checkpoint took it: the ticks run by then.
	if n, err := strconv.Atoi(strings.TrimPrefix(got2, "ticks=")); err != nil || n < info.Frame-1 || int64(n) > ticks.Load() {
		t.Errorf("the game restored %q; the checkpoint was taken at frame %d, %d ticks ran in all", got2, info.Frame, ticks.Load())
	}
	playWorld(t, ps, "resuming on the standby", 20*time.Second, func() bool {
		for _, p := range ps {
			if len(p.events) == 0 || p.c.url != urlB || p.c.Interest().Frame() <= info.Frame {
				return false
			}
		}
		return true
	})
	t.Logf("resumed")
	for i, p := range ps {
		ev := p.events[len(p.events)-1]
		if ev.State != Resumed || ev.RestoredFrame != info.Frame {
			t.Errorf("player %d: events %+v, want Resumed at frame %d", i, p.events, info.Frame)
		}
		if p.c.Entity() != self[i] {
			t.Errorf("player %d: entity %d, was %d", i, p.c.Entity(), self[i])
		}
	}
	// A checkpoint that does not open is refused whole.
	for _, bad := range [][]byte{nil, []byte("tongbu-world\x00\x01"), cp[:len(cp)/2]} {
		if _, err := b.RestoreWorld(cfg2, bad); !errors.Is(err, ErrMalformed) {
			t.Errorf("a bad checkpoint: %v", err)
		}
	}
}

// remoteDest books standby places in a world of another server, with
// the state that gives each player its entity back there.
type remoteDest struct {
	w   *World
	url string
}

func (d remoteDest) Book(_ context.Context, player string, _ []byte, arrived func()) (Booking, error) {
	b, err := d.w.Reserve(player, RejoinState(), StandbyTTL, arrived)
	if err != nil {
		return b, err
	}
	if err := d.w.Hold(b.ID); err != nil {
		return b, err
	}
	b.URL, b.Standby, b.Seamless = d.url, true, true
	return b, nil
}

func (d remoteDest) Settle(_ context.Context, b Booking) (bool, error) { return d.w.Settle(b.ID), nil }

// TestWorldMovesWhole: a live world moves to another server while its
// players play: the new server holds it, every client connects there
// ahead and waits, the old server stops and checkpoints, the new one
// loads it and lets them all in at once. Each keeps its entity and what
// it knows, the world's frames go on, and the old world lets them go.
func TestWorldMovesWhole(t *testing.T) {
	a, _, urlA := failoverServer(t, false)
	b, _, urlB := failoverServer(t, false)
	var ticks atomic.Int64
	var got string
	cfg := storeWorld(&ticks, &got)
	cfg.Join = func(w *interest.World, player string) (interest.ID, error) {
		id, err := defaultJoin(w, player)
		me, _ := w.Logic(id)
		for i := range 5 { // NPCs near each player
			p := interest.Vec{X: me.Pos.X + int32(i*20) - 40, Y: me.Pos.Y + 30}
			w.Spawn(interest.NPC, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: "npc"})
		}
		return id, err
	}
	w, err := a.CreateWorld("w", cfg)
	if err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	w.Feed(WorldFeed{MayTick: func() bool { return !stop.Load() }})
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	ps := dialWorld(t, ctx, a, urlA, "w", 3)
	playWorld(t, ps, "playing on the first server", 10*time.Second, func() bool {
		for _, p := range ps {
			if p.c.Interest().Len() < 10 {
				return false
			}
		}
		return true
	})
	var got2 string
	nw, err := b.PrepareWorld("w", storeWorld(new(atomic.Int64), &got2), w.start)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var done []error
	for _, player := range w.Players() {
		if _, err := w.Standby(player, remoteDest{nw, urlB}, nil, func(err error) { mu.Lock(); done = append(done, err); mu.Unlock() }); err != nil {
			t.Fatal(err)
		}
	}
	playWorld(t, ps, "parking at the new server", 10*time.Second, func() bool { return nw.nParked.Load() == 3 })
	stop.Store(true)
	cp, err := w.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	known := make([][]interest.ID, len(ps))
	self := make([]interest.ID, len(ps))
	for i, p := range ps {
		known[i] = p.c.Interest().Known(nil)
		self[i] = p.c.Entity()
	}
	if err := nw.Release(ctx, cp); err != nil {
		t.Fatal(err)
	}
	playWorld(t, ps, "moving", 10*time.Second, func() bool {
		for _, p := range ps {
			if p.c.url != urlB {
				return false
			}
		}
		return true
	})
	frameAt := ps[0].c.Interest().Frame()
	for i, p := range ps {
		if len(p.moves) != 1 || p.moves[0].From != "w" || p.moves[0].To != "w" || p.c.Entity() != self[i] {
			t.Errorf("player %d: moves %+v, entity %d (was %d)", i, p.moves, p.c.Entity(), self[i])
		}
		now := p.c.Interest().Known(nil)
		for _, id := range known[i] {
			if !slices.Contains(now, id) {
				t.Errorf("player %d: entity %d known before the move is not after", i, id)
			}
		}
	}
	playWorld(t, ps, "playing on the new server", 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(done) == 3 && ps[0].c.Interest().Frame() > frameAt+20
	})
	for _, err := range done {
		if err != nil {
			t.Errorf("a standby ended with %v", err)
		}
	}
	if left := w.Players(); len(left) != 0 {
		t.Errorf("the old world holds %v", left)
	}
	if players := nw.Players(); len(players) != 3 || got2 == "" {
		t.Errorf("the new world holds %v, game state %q", players, got2)
	}
	// A held world takes no ordinary join.
	held, _ := b.PrepareWorld("h", cfg, time.Now())
	tk, _ := b.Ticket("x", "h", RolePlayer, time.Minute)
	if _, err := Dial(ctx, urlB, tk, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("a join of a held world: %v", err)
	}
	held.Close()
}

type tlogWriter struct{ t *testing.T }

func (w tlogWriter) Write(b []byte) (int, error) { w.t.Log(string(b)); return len(b), nil }

func testLogger(t *testing.T) *slog.Logger { return slog.New(slog.NewTextHandler(tlogWriter{t}, nil)) }

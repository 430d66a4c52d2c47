//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/memnet"
)

// harness is a server with no WebRTC, reached over an emulated network.
type harness struct {
	t   *testing.T
	s   *Server
	net *memnet.Network
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	cfg.Secret, cfg.NoWebRTC = testSecret, true
	if cfg.Workers == 0 {
		cfg.Workers = 1
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, s: s, net: memnet.New(1)}
}

// join connects player to target over a fresh pipe with link cfg and
// returns the client, or the error the server gave.
func (h *harness) join(player, target string, role Role, link memnet.LinkConfig) (*Client, error) {
	tk, err := h.s.Ticket(player, target, role, time.Minute)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.joinWith(tk, link)
}

func (h *harness) joinWith(ticket string, link memnet.LinkConfig) (*Client, error) {
	c, sc := h.net.Pipe(link, link)
	if err := h.s.Attach(sc, ticket); err != nil {
		c.Close()
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cl, err := NewClient(ctx, c)
	if err != nil {
		c.Close()
	}
	return cl, err
}

// pump runs c's game loop for d and returns the first error.
func pump(c *Client, d time.Duration) error {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			return err
		}
	}
	return nil
}

func (h *harness) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.s.Shutdown(ctx); err != nil {
		h.t.Errorf("shutdown: %v", err)
	}
}

// metricLine returns line when the metrics hold it, else "".
func (h *harness) metricLine(line string) string {
	var b strings.Builder
	h.s.writeMetrics(&b)
	if strings.Contains(b.String(), "\n"+line+"\n") {
		return line
	}
	return ""
}

func (h *harness) metric(name string) string {
	var b strings.Builder
	h.s.writeMetrics(&b)
	for _, line := range strings.Split(b.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}

// TestLockstepRoom plays a four-player room over a lossy emulated network
// through the engine: every client plays the same frames, and each frame
// holds what each player sent.
func TestLockstepRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		if _, err := h.s.CreateRoom("r", lockstep.Config{Players: 4}); err != nil {
			t.Fatal(err)
		}
		link := memnet.LinkConfig{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.05}
		var clients []*Client
		for i := range 4 {
			c, err := h.join(fmt.Sprint("p", i), "r", RolePlayer, link)
			if err != nil {
				t.Fatal(err)
			}
			if c.Mode() != Lockstep || c.Slot() != i || c.Target() != "r" {
				t.Fatalf("client %d: mode %v slot %d target %q", i, c.Mode(), c.Slot(), c.Target())
			}
			clients = append(clients, c)
		}
		played := make([][]lockstep.Frame, 4)
		start := time.Now()
		for now := start; now.Sub(start) < 10*time.Second; now = time.Now() {
			for i, c := range clients {
				if int(now.Sub(start)/(66*time.Millisecond))%3 == i%3 {
					c.Lockstep().Input(now, []byte{byte(i), byte(now.Sub(start) / time.Second)})
				}
				if err := c.Update(now); err != nil {
					t.Fatal(err)
				}
				played[i] = append(played[i], c.Lockstep().Advance(now).Frames...)
			}
			time.Sleep(16 * time.Millisecond)
		}
		n := len(played[0])
		for i := range played {
			n = min(n, len(played[i]))
		}
		if n < 100 {
			t.Fatalf("only %d frames played in 10 s at 15 Hz", n)
		}
		inputs := 0
		for f := range n {
			for i := 1; i < 4; i++ {
				if fmt.Sprint(played[i][f]) != fmt.Sprint(played[0][f]) {
					t.Fatalf("frame %d differs: client %d %v, client 0 %v", f, i, played[i][f], played[0][f])
				}
			}
			for slot, s := range played[0][f].Slots {
				for _, in := range s.Inputs {
					if in[0] != byte(slot) {
						t.Fatalf("frame %d slot %d holds input of player %d", f, slot, in[0])
					}
					inputs++
				}
			}
		}
		if inputs < n { // each player sends every third frame or so
			t.Fatalf("%d inputs in %d frames", inputs, n)
		}
		if got := h.metric("tongbu_connections"); got != "4" {
			t.Fatalf("tongbu_connections %s, want 4", got)
		}
		// Closing the clients releases their connections on the server.
		for _, c := range clients {
			c.Close()
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := h.metric("tongbu_connections"); got != "0" {
			t.Fatalf("tongbu_connections %s after the clients left, want 0", got)
		}
		if got := h.metric("tongbu_frames_cut_total"); got == "" || got == "0" {
			t.Fatalf("tongbu_frames_cut_total %q", got)
		}
		h.shutdown()
	})
}

// TestJoinRefused covers every way a join is refused, each with a clear
// error, and that a refusal holds nothing.
func TestJoinRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxConns: 3})
		h.s.CreateRoom("duo", lockstep.Config{Players: 2})
		h.s.CreateWorld("w", WorldConfig{Interest: interest.Config{Width: 4, Height: 4}})
		var keep []*Client
		for _, p := range []string{"a", "b"} {
			c, err := h.join(p, "duo", RolePlayer, memnet.LinkConfig{})
			if err != nil {
				t.Fatal(err)
			}
			keep = append(keep, c)
		}
		used, _ := h.s.Ticket("c", "w", RolePlayer, time.Minute)
		c, err := h.joinWith(used, memnet.LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		keep = append(keep, c)
		expired, _ := SignTicket(testSecret, Ticket{Player: "x", Target: "duo", Expires: time.Now().Add(-time.Second)})
		forged, _ := SignTicket([]byte("not the server's secret"), Ticket{Player: "x", Target: "duo", Expires: time.Now().Add(time.Minute)})
		far, _ := SignTicket(testSecret, Ticket{Player: "x", Target: "duo", Expires: time.Now().Add(48 * time.Hour)})
		tk := func(player, target string, role Role) string {
			s, _ := h.s.Ticket(player, target, role, time.Minute)
			return s
		}
		for _, tc := range []struct {
			name, ticket string
			want         string
		}{
			{"replayed", used, "already used"},
			{"expired", expired, "expired"},
			{"forged", forged, "bad signature"},
			{"too long-lived", far, "over the server's"},
			{"unknown target", tk("x", "nowhere", RolePlayer), "no room or world"},
			{"spectator in a world", tk("x", "w", RoleSpectator), "players only"},
			{"connection limit", tk("x", "w", RolePlayer), "full"},
		} {
			_, err := h.joinWith(tc.ticket, memnet.LinkConfig{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want it to say %q", tc.name, err, tc.want)
			}
		}
		keep[2].Close() // below the connection limit again
		time.Sleep(time.Second)
		_, err = h.join("c3", "duo", RolePlayer, memnet.LinkConfig{})
		if err == nil || !strings.Contains(err.Error(), "slots taken") {
			t.Errorf("third player in a two-player room: %v", err)
		}
		if got := h.metric("tongbu_connections"); got != "2" {
			t.Errorf("tongbu_connections %s after refusals, want 2", got)
		}
		var b strings.Builder
		h.s.writeMetrics(&b)
		for _, r := range []string{"replayed", "expired", "invalid", "not_found", "role", "full"} {
			if !strings.Contains(b.String(), fmt.Sprintf("tongbu_refused_total{reason=%q}", r)) {
				t.Errorf("no refusal counted as %q", r)
			}
		}
		for _, c := range keep {
			c.Close()
		}
		h.shutdown()
	})
}

// TestReconnectKeepsSlot: a player who connects again gets its slot back;
// the older connection is told it was replaced.
func TestReconnectKeepsSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		h.s.CreateRoom("r", lockstep.Config{Players: 3})
		a, _ := h.join("a", "r", RolePlayer, memnet.LinkConfig{})
		b, _ := h.join("b", "r", RolePlayer, memnet.LinkConfig{})
		b2, err := h.join("b", "r", RolePlayer, memnet.LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Slot() != 0 || b.Slot() != 1 || b2.Slot() != 1 {
			t.Fatalf("slots %d %d %d, want 0 1 1", a.Slot(), b.Slot(), b2.Slot())
		}
		err = pump(b, time.Second)
		var closed *ClosedError
		if !errors.As(err, &closed) || closed.Reason != byeNames[byeReplaced] {
			t.Fatalf("old connection: %v, want replaced", err)
		}
		if err := b2.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
		a.Close()
		b2.Close()
		h.shutdown()
	})
}

// TestShutdownTellsClients: a graceful shutdown closes every connection
// with its reason and refuses new ones.
func TestShutdownTellsClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		h.s.CreateRoom("r", lockstep.Config{Players: 2})
		h.s.CreateWorld("w", WorldConfig{Interest: interest.Config{Width: 4, Height: 4}})
		a, _ := h.join("a", "r", RolePlayer, memnet.LinkConfig{})
		b, err := h.join("b", "w", RolePlayer, memnet.LinkConfig{})
		if err != nil {
			t.Fatal(err)
		}
		go h.shutdown()
		for _, c := range []*Client{a, b} {
			var closed *ClosedError
			if err := pump(c, time.Second); !errors.As(err, &closed) || closed.Reason != byeNames[byeShutdown] {
				t.Fatalf("%v client after shutdown: %v", c.Mode(), err)
			}
		}
		if _, err := h.join("c", "r", RolePlayer, memnet.LinkConfig{}); !errors.Is(err, ErrServerClosed) {
			t.Fatalf("join after shutdown: %v", err)
		}
		if _, err := h.s.CreateRoom("r2", lockstep.Config{}); !errors.Is(err, ErrServerClosed) {
			t.Fatalf("room after shutdown: %v", err)
		}
		rec := httptest.NewRecorder()
		h.s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", HealthPath, nil))
		if rec.Code != 503 {
			t.Fatalf("health while shut down: %d", rec.Code)
		}
	})
}

// TestWorld: players joining an interest world through the engine see each
// other, and a hostile packet is counted and dropped without harming the
// others.
func TestWorld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		var ticks atomic.Int64
		_, err := h.s.CreateWorld("w", WorldConfig{
			Interest: interest.Config{Width: 8, Height: 8},
			Tick:     func(*interest.World, time.Time) { ticks.Add(1) },
		})
		if err != nil {
			t.Fatal(err)
		}
		link := memnet.LinkConfig{Latency: 30 * time.Millisecond}
		var cs []*Client
		for i := range 3 {
			c, err := h.join(fmt.Sprint("p", i), "w", RolePlayer, link)
			if err != nil {
				t.Fatal(err)
			}
			cs = append(cs, c)
		}
		for range 5 * 60 {
			now := time.Now()
			for _, c := range cs {
				if err := c.Update(now); err != nil {
					t.Fatal(err)
				}
				c.Interest().Advance(now)
			}
			time.Sleep(16 * time.Millisecond)
		}
		for i, c := range cs {
			for j, o := range cs {
				if _, ok := c.Interest().Entity(o.Entity()); !ok && i != j {
					t.Fatalf("client %d does not know player %d after 5 s", i, j)
				}
			}
		}
		if ticks.Load() < 70 {
			t.Fatalf("world ran its game tick %d times in 5 s", ticks.Load())
		}
		// A hostile client: garbage on the world's uplink.
		evil, err := h.join("evil", "w", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		evil.conn.SendUnreliable([]byte{5, 0xff, 0xff, 0xff})
		time.Sleep(200 * time.Millisecond)
		var b strings.Builder
		h.s.writeMetrics(&b)
		if !strings.Contains(b.String(), `tongbu_dropped_total{mode="interest",reason="malformed"} 1`) {
			t.Fatalf("the malformed packet was not counted:\n%s", b.String())
		}
		// Every tick is timed (synctest's clock stands still while the tick
		// runs: all in the first bucket).
		if !strings.Contains(b.String(), "# TYPE tongbu_world_tick_seconds histogram") ||
			!strings.Contains(b.String(), fmt.Sprintf("tongbu_world_tick_seconds_count %d", ticks.Load())) {
			t.Fatalf("the world's ticks (%d) are not in the tick histogram:\n%s", ticks.Load(), b.String())
		}
		for _, c := range cs {
			if err := c.Update(time.Now()); err != nil {
				t.Fatalf("an honest client was hurt: %v", err)
			}
		}
		evil.Close()
		for _, c := range cs {
			c.Close()
		}
		time.Sleep(time.Second)
		if w, _ := h.s.World("w"); w.Stats().Observers != 0 {
			t.Fatalf("%d observers after everyone left", w.Stats().Observers)
		}
		h.shutdown()
	})
}

// TestSpectatorAndRejoin: a spectator who joins mid-match and a player who
// crashes and rejoins both end up with the same frames as the others,
// streamed from frame 0.
func TestSpectatorAndRejoin(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		r, _ := h.s.CreateRoom("r", lockstep.Config{Players: 2})
		r.SetSpectatorDelay(time.Second)
		link := memnet.LinkConfig{Latency: 25 * time.Millisecond, Loss: 0.05}
		a, _ := h.join("a", "r", RolePlayer, link)
		b, _ := h.join("b", "r", RolePlayer, link)
		played := map[*Client][]lockstep.Frame{}
		run := func(d time.Duration, cs ...*Client) {
			for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
				now := time.Now()
				for i, c := range cs {
					if c.Role() == RolePlayer && int(now.UnixMilli()/100)%2 == i%2 {
						c.Lockstep().Input(now, []byte{byte(c.Slot()), byte(now.UnixMilli())})
					}
					if err := c.Update(now); err != nil {
						t.Fatal(err)
					}
					played[c] = append(played[c], c.Lockstep().Advance(now).Frames...)
				}
			}
		}
		run(5*time.Second, a, b)
		spec, err := h.join("watcher", "r", RoleSpectator, link)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Role() != RoleSpectator || spec.Slot() < 2 {
			t.Fatalf("spectator: role %v id %d", spec.Role(), spec.Slot())
		}
		b.Close() // a crash
		run(2*time.Second, a, spec)
		b2, err := h.join("b", "r", RolePlayer, link)
		if err != nil {
			t.Fatal(err)
		}
		if b2.Slot() != b.Slot() {
			t.Fatalf("rejoined in slot %d, was %d", b2.Slot(), b.Slot())
		}
		run(10*time.Second, a, b2, spec)
		for name, c := range map[string]*Client{"rejoined player": b2, "spectator": spec} {
			got, want := played[c], played[a]
			if len(got) < len(want)/2 || got[0].Number != 0 {
				t.Fatalf("%s played %d frames (from %d), the player %d", name, len(got), got[0].Number, len(want))
			}
			for i := range min(len(got), len(want)) {
				if fmt.Sprint(got[i]) != fmt.Sprint(want[i]) {
					t.Fatalf("%s: frame %d differs", name, i)
				}
			}
		}
		q := r.Quality()
		if q.Peers[b.Slot()].Reconnects < 1 {
			t.Fatalf("the quality report shows no reconnect: %+v", q.Peers[b.Slot()])
		}
		for _, c := range []*Client{a, b2, spec} {
			c.Close()
		}
		h.shutdown()
	})
}

// TestStarvedClientCatchesUp: a lockstep client that stops running for
// 10 s (a starved process, a tab the browser stopped) finds its inbox
// full and frames lost when it runs again; it gets them back, plays fast
// until it is back at the room's pace, keeps reporting hashes that agree,
// and is never dropped.
func TestStarvedClientCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{})
		defer h.shutdown()
		room, err := h.s.CreateRoom("r", lockstep.Config{Players: 3, HashEvery: 15})
		if err != nil {
			t.Fatal(err)
		}
		desyncs := 0
		room.OnEvent(func(e lockstep.Event) {
			if e.Kind == lockstep.EventDesync || e.Kind == lockstep.EventDispute {
				desyncs++
			}
		})
		link := memnet.LinkConfig{Latency: 20 * time.Millisecond, Jitter: 5 * time.Millisecond}
		var clients []*Client
		for i := range 3 {
			c, err := h.join(fmt.Sprint("p", i), "r", RolePlayer, link)
			if err != nil {
				t.Fatal(err)
			}
			clients = append(clients, c)
		}
		ran := make([]int, 3)
		start := time.Now()
		starved := func(at time.Duration) bool { return at >= 5*time.Second && at < 15*time.Second }
		var backAt time.Duration = -1
		for now := start; now.Sub(start) < 40*time.Second; now = time.Now() {
			at := now.Sub(start)
			for i, c := range clients {
				if i == 2 && starved(at) {
					continue // not run at all: no Update, no Advance
				}
				if err := c.Update(now); err != nil {
					t.Fatalf("client %d at %v: %v", i, at, err)
				}
				for _, f := range c.Lockstep().Advance(now).Frames {
					if f.Number != ran[i] {
						t.Fatalf("client %d played frame %d, want %d", i, f.Number, ran[i])
					}
					ran[i]++
					if f.Number%15 == 0 {
						c.Lockstep().ReportHash(f.Number, uint64(f.Number)*7)
					}
				}
			}
			if at >= 15*time.Second && backAt < 0 && ran[2] >= ran[0]-2 {
				backAt = at - 15*time.Second
			}
			time.Sleep(16 * time.Millisecond)
		}
		t.Logf("frames run %v; the starved client was back at the others' frame %v after it ran again; playout %+v",
			ran, backAt, clients[2].Lockstep().Playout())
		if backAt < 0 || backAt > 10*time.Second {
			t.Fatalf("the starved client did not catch up within 10 s (%v): ran %v", backAt, ran)
		}
		if desyncs != 0 {
			t.Fatalf("%d desyncs", desyncs)
		}
		if got := h.metric("tongbu_connections"); got != "3" {
			t.Fatalf("tongbu_connections %s, want 3: the starved client was dropped", got)
		}
	})
}

// TestRoomPhases: rooms created together start at phases spread over the
// frame period, none twice and no gap much wider than an even spread.
func TestRoomPhases(t *testing.T) {
	period := time.Second / 15
	for _, n := range []int{1, 2, 10, 200, 4000} {
		ph := make([]time.Duration, n)
		for k := range ph {
			ph[k] = roomPhase(uint64(k), period)
			if ph[k] < 0 || ph[k] >= period {
				t.Fatalf("room %d: phase %v outside [0, %v)", k, ph[k], period)
			}
		}
		slices.Sort(ph)
		gap := period - ph[n-1] + ph[0] // around the end of the period
		for i := 1; i < n; i++ {
			if ph[i] == ph[i-1] {
				t.Fatalf("%d rooms: two at phase %v", n, ph[i])
			}
			gap = max(gap, ph[i]-ph[i-1])
		}
		// The golden ratio's multiples leave gaps of at most about 2.62
		// times an even spread (the three-distance theorem).
		if n > 1 && gap > period*27/10/time.Duration(n) {
			t.Errorf("%d rooms: widest gap %v, an even spread's %v", n, gap, period/time.Duration(n))
		}
	}
}

//go:build !js

package engine

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// standbyKeeper is a standby's copy of a room, kept from its feed as a
// cluster keeps it.
type standbyKeeper struct {
	mu    sync.Mutex
	state RoomState
	seats map[string]SeatRecord
}

func (k *standbyKeeper) feed() RoomFeed {
	return RoomFeed{
		Frame: func(start time.Time, f lockstep.EncodedFrame) {
			k.mu.Lock()
			defer k.mu.Unlock()
			f.Full = append([]byte(nil), f.Full...)
			k.state.Start = start
			k.state.Frames = append(k.state.Frames, f)
		},
		Seat: func(s SeatRecord) {
			k.mu.Lock()
			defer k.mu.Unlock()
			k.seats[s.Player] = s
		},
	}
}

// take returns the state, less the newest lag frames (those the
// standby had not got when the room's server died).
func (k *standbyKeeper) take(lag int) RoomState {
	k.mu.Lock()
	defer k.mu.Unlock()
	st := k.state
	st.Frames = append([]lockstep.EncodedFrame(nil), st.Frames[:len(st.Frames)-lag]...)
	for _, s := range k.seats {
		st.Seats = append(st.Seats, s)
	}
	return st
}

// failoverServer starts a server; with relay, its WebRTC path goes
// through a relay the test can cut (the server's death, as its clients
// see it).
func failoverServer(t *testing.T, relayed bool) (*Server, *udpimpair.Relay, string) {
	t.Helper()
	cfg := Config{Secret: testSecret, UDPAddr: "127.0.0.1:0"}
	if relayed {
		cfg.PublicIPs = []string{"127.0.0.2"}
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var relay *udpimpair.Relay
	if relayed {
		port := s.UDPAddr().(*net.UDPAddr).AddrPort().Port()
		relay, err = udpimpair.New(fmt.Sprintf("127.0.0.2:%d", port), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port), udpimpair.Link{}, udpimpair.Link{}, 1)
		if err != nil {
			t.Fatal(err)
		}
	}
	web := httptest.NewServer(s.Handler())
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { s.Serve(ctx); close(served) }()
	t.Cleanup(func() {
		cancel()
		<-served
		web.Close()
		if relay != nil {
			relay.Close()
		}
	})
	return s, relay, web.URL
}

// player plays a lockstep client, sending an input with every frame it
// runs, and keeps every frame it ran.
type player struct {
	c      *Client
	frames []lockstep.Frame
	resume []ConnectionEvent
}

func (p *player) play(now time.Time) error {
	if err := p.c.Update(now); err != nil {
		return err
	}
	st := p.c.Lockstep().Advance(now)
	for _, f := range st.Frames {
		p.frames = append(p.frames, f)
		p.c.Lockstep().Input(now, []byte{byte(p.c.Slot()), byte(f.Number)})
	}
	return nil
}

// TestFailoverCarry: a room's server dies mid-match (its path goes
// silent, and it cuts no more); its standby, whose copy lacks the room's
// last frames, continues the match; each client notices the silence,
// resumes there by itself with the credentials the first server gave it,
// keeps its lockstep state and carries back the frames the standby
// lacked: every client runs one gapless sequence of frames, the same for
// all, and the match goes on.
func TestFailoverCarry(t *testing.T) {
	a, relay, urlA := failoverServer(t, true)
	b, _, urlB := failoverServer(t, false)
	cfg := lockstep.Config{Players: 2, Hz: 20}
	room, err := a.CreateRoom("duo", cfg)
	if err != nil {
		t.Fatal(err)
	}
	keep := &standbyKeeper{seats: map[string]SeatRecord{}}
	feed := keep.feed()
	var dead sync.Mutex
	killed := false
	feed.MayCut = func() bool { dead.Lock(); defer dead.Unlock(); return !killed }
	room.Feed(feed)
	room.SetStandby(urlB)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	players := make([]*player, 2)
	for i := range players {
		p := &player{}
		tk, _ := a.Ticket(fmt.Sprintf("p%d", i), "duo", RolePlayer, time.Minute)
		c, err := Dial(ctx, urlA, tk, &ClientConfig{OnConnection: func(e ConnectionEvent) { p.resume = append(p.resume, e) }})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		p.c = c
		players[i] = p
	}
	run := func(what string, d time.Duration, done func() bool) {
		t.Helper()
		for end := time.Now().Add(d); !done(); time.Sleep(5 * time.Millisecond) {
			for i, p := range players {
				if err := p.play(time.Now()); err != nil {
					t.Fatalf("%s: player %d: %v", what, i, err)
				}
			}
			if time.Now().After(end) {
				t.Fatalf("%s: not within %v", what, d)
			}
		}
	}
	run("playing on the first server", 10*time.Second, func() bool {
		return len(players[0].frames) > 40 && len(players[1].frames) > 40 && len(players[0].c.credentials) > 1
	})
	if players[0].c.standby != urlB {
		t.Fatalf("client told standby %q, want %q", players[0].c.standby, urlB)
	}
	// The first server dies: silent to its clients, cutting no more.
	relay.SetLinks(udpimpair.Link{Loss: 1}, udpimpair.Link{Loss: 1})
	dead.Lock()
	killed = true
	dead.Unlock()
	time.Sleep(100 * time.Millisecond) // frames under way arrive, or not
	cutCh := make(chan int, 1)
	room.Do(func(l *lockstep.Room) { cutCh <- l.NextFrame() })
	cutA := <-cutCh
	const lag = 3
	st := keep.take(lag)
	restored, err := b.RestoreRoom("duo", cfg, st)
	if err != nil {
		t.Fatal(err)
	}
	lostAt := time.Now()
	run("playing on the standby", 15*time.Second, func() bool {
		return len(players[0].frames) > cutA+40 && len(players[1].frames) > cutA+40
	})
	t.Logf("the first server cut %d frames, the standby had %d; back after %v", cutA, len(st.Frames), time.Since(lostAt).Round(time.Millisecond))
	for i, p := range players {
		if len(p.resume) != 1 || p.resume[0].State != Resumed {
			t.Fatalf("player %d connection events %+v, want one Resumed", i, p.resume)
		}
		for n, f := range p.frames {
			if f.Number != n {
				t.Fatalf("player %d ran frame %d as its %dth", i, f.Number, n)
			}
		}
	}
	for n := range min(len(players[0].frames), len(players[1].frames)) {
		if a, b := fmt.Sprint(players[0].frames[n]), fmt.Sprint(players[1].frames[n]); a != b {
			t.Fatalf("frame %d: %s, other player %s", n, a, b)
		}
	}
	type look struct {
		stats    lockstep.RoomStats
		restored int
	}
	looks := make(chan look, 1)
	restored.Do(func(l *lockstep.Room) { looks <- look{l.Stats(), l.Restored()} })
	lk := <-looks
	stats := lk.stats
	if lk.restored < cutA {
		t.Errorf("the standby continued from frame %d; the clients held %d", lk.restored, cutA)
	}
	// Inputs reach the standby's frames: the players are back, not made up.
	last := players[0].frames[len(players[0].frames)-1]
	for slot, s := range last.Slots {
		if s.MadeUp {
			t.Errorf("frame %d: slot %d made up on the standby", last.Number, slot)
		}
	}
	// Inputs aimed at frames the standby owed and cut at once are late,
	// and packets that came before a client's carry are from a player
	// not back yet: nothing else is dropped.
	got := stats.Dropped
	got[lockstep.DropLate], got[lockstep.DropAway] = 0, 0
	if got != [len(got)]uint64{} {
		t.Errorf("the standby dropped %v", stats.Dropped)
	}
}

// TestAgreed: a restored room takes, past its log, the frames its
// clients' carries agree on: each frame while every carry that holds it
// holds it alike, none from the first they disagree on.
func TestAgreed(t *testing.T) {
	fr := func(n int, b byte) lockstep.EncodedFrame {
		return lockstep.EncodedFrame{Number: n, Full: []byte{b}, FullBits: 8}
	}
	carryOf := func(frames ...lockstep.EncodedFrame) *carry {
		c := &carry{frames: frames}
		if len(frames) > 0 {
			c.have = frames[len(frames)-1].Number + 1
		}
		return c
	}
	for _, tc := range []struct {
		name    string
		carries map[int]*carry
		want    int
	}{
		{"none", map[int]*carry{0: {}, 1: {}}, 0},
		{"one client holds more", map[int]*carry{0: carryOf(fr(10, 1), fr(11, 2)), 1: carryOf(fr(10, 1))}, 2},
		{"all alike", map[int]*carry{0: carryOf(fr(10, 1), fr(11, 2)), 1: carryOf(fr(10, 1), fr(11, 2))}, 2},
		{"disagree on the second", map[int]*carry{0: carryOf(fr(10, 1), fr(11, 2)), 1: carryOf(fr(10, 1), fr(11, 3))}, 1},
		{"disagree on the first", map[int]*carry{0: carryOf(fr(10, 1)), 1: carryOf(fr(10, 9), fr(11, 2))}, 0},
		{"a gap", map[int]*carry{0: carryOf(fr(11, 1))}, 0},
	} {
		if got := agreed(tc.carries, 10); len(got) != tc.want {
			t.Errorf("%s: %d frames agreed, want %d", tc.name, len(got), tc.want)
		}
	}
}

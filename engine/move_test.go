//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// twoServers is a pair of servers reached over one emulated network:
// clients dial them as "mem://a" and "mem://b" (ClientConfig.Connect), so
// that a player can move from one to the other.
type twoServers struct {
	t      *testing.T
	a, b   *harness
	events chan string // what the worlds' hooks saw, in order
	dial   map[string]error
	mu     sync.Mutex
}

func newTwoServers(t *testing.T) *twoServers {
	ts := &twoServers{t: t, a: newHarness(t, Config{}), events: make(chan string, 64), dial: map[string]error{}}
	ts.b = &harness{t: t, net: ts.a.net}
	s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	ts.b.s = s
	t.Cleanup(ts.close)
	return ts
}

// world creates a world on h that reports its joins, arrivals and leaves.
func (ts *twoServers) world(h *harness, name string, max int) *World {
	w, err := h.s.CreateWorld(name, WorldConfig{
		Interest:   interest.Config{Width: 8, Height: 8},
		MaxPlayers: max,
		Join: func(w *interest.World, player string) (interest.ID, error) {
			ts.events <- "join " + name + " " + player
			return defaultJoin(w, player)
		},
		Arrive: func(w *interest.World, player string, state []byte) (interest.ID, error) {
			ts.events <- fmt.Sprintf("arrive %s %s %s", name, player, state)
			return defaultJoin(w, player)
		},
		Leave: func(w *interest.World, player string, id interest.ID) {
			ts.events <- "leave " + name + " " + player
			w.Despawn(id)
		},
	})
	if err != nil {
		ts.t.Fatal(err)
	}
	return w
}

// config is the clients' configuration: they reach the servers over the
// emulated network; a URL set in dial fails with its error.
func (ts *twoServers) config(moves *[]Move) *ClientConfig {
	return &ClientConfig{
		Connect: func(_ context.Context, url, ticket string) (transport.Conn, error) {
			ts.mu.Lock()
			err := ts.dial[url]
			ts.mu.Unlock()
			if err != nil {
				return nil, err
			}
			h := map[string]*harness{"mem://a": ts.a, "mem://b": ts.b}[url]
			if h == nil {
				return nil, fmt.Errorf("no server at %s", url)
			}
			link := memnet.LinkConfig{Latency: 20 * time.Millisecond}
			c, sc := h.net.Pipe(link, link)
			if err := h.s.Attach(sc, ticket); err != nil {
				c.Close()
				return nil, err
			}
			return c, nil
		},
		OnMove: func(m Move) { *moves = append(*moves, m) },
	}
}

func (ts *twoServers) expect(want ...string) {
	ts.t.Helper()
	for _, w := range want {
		select {
		case got := <-ts.events:
			if got != w {
				ts.t.Fatalf("event %q, want %q", got, w)
			}
		case <-time.After(time.Minute):
			ts.t.Fatalf("no event, want %q", w)
		}
	}
	select {
	case got := <-ts.events:
		ts.t.Fatalf("unexpected event %q", got)
	default:
	}
}

func (ts *twoServers) close() {
	ts.a.shutdown()
	ts.b.shutdown()
}

// remote is a destination on the other server, as package cluster makes
// one: the booking names the server's URL. drop loses the arrival
// notice; silent makes Settle fail as an unreachable node's would.
type remote struct {
	w      *World
	url    string
	drop   bool
	silent bool
	booked chan struct{} // closed when Book may answer; nil: at once
}

func (d *remote) Book(ctx context.Context, player string, state []byte, arrived func()) (Booking, error) {
	if d.booked != nil {
		<-d.booked
	}
	if d.drop {
		arrived = nil
	}
	b, err := d.w.Reserve(player, state, 0, arrived)
	b.URL = d.url
	return b, err
}

func (d *remote) Settle(_ context.Context, b Booking) (bool, error) {
	if d.silent {
		return false, errors.New("no answer")
	}
	return d.w.Settle(b.ID), nil
}

// run updates c for d, failing on an error.
func run(t *testing.T, c *Client, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(16 * time.Millisecond) {
		if err := c.Update(time.Now()); err != nil {
			t.Fatal(err)
		}
		c.Interest().Advance(time.Now())
	}
}

// startMove starts a transfer and returns what done will say.
func startMove(t *testing.T, w *World, player string, to Destination, state string) chan error {
	t.Helper()
	done := make(chan error, 1)
	if err := w.Transfer(player, to, []byte(state), func(err error) { done <- err }); err != nil {
		t.Fatal(err)
	}
	return done
}

func wantLoad(t *testing.T, w *World, players, booked int) {
	t.Helper()
	if p, b := w.Load(); p != players || b != booked {
		t.Fatalf("world %s: %d players and %d booked, want %d and %d", w.Name(), p, b, players, booked)
	}
}

// TestTransfer moves a player between worlds of one server and of two:
// the new world gets the state, the old one lets the player go only once
// it has arrived, and the client follows by itself.
func TestTransfer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remote bool
		drop   bool // the arrival notice is lost: the close of the old connection settles it
	}{{"same server", false, false}, {"other server", true, false}, {"notice lost", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ts := newTwoServers(t)
				field := ts.world(ts.a, "field", 0)
				dh := ts.a
				if tc.remote {
					dh = ts.b
				}
				cave := ts.world(dh, "cave", 10)
				var to Destination = cave.Destination()
				if tc.remote {
					to = &remote{w: cave, url: "mem://b", drop: tc.drop}
				}
				var moves []Move
				tk, _ := ts.a.s.Ticket("ann", "field", RolePlayer, time.Minute)
				c, err := Dial(context.Background(), "mem://a", tk, ts.config(&moves))
				if err != nil {
					t.Fatal(err)
				}
				ts.expect("join field ann")
				run(t, c, time.Second)

				done := startMove(t, field, "ann", to, "hp=7")
				run(t, c, 2*time.Second)
				if err := <-done; err != nil {
					t.Fatalf("transfer: %v", err)
				}
				ts.expect("arrive cave ann hp=7", "leave field ann")
				url := "mem://a"
				if tc.remote {
					url = "mem://b"
				}
				if len(moves) != 1 || moves[0] != (Move{From: "field", To: "cave", URL: url}) || c.Target() != "cave" {
					t.Fatalf("moves %+v, target %q", moves, c.Target())
				}
				wantLoad(t, field, 0, 0)
				wantLoad(t, cave, 1, 0)
				if got := cave.Players(); len(got) != 1 || got[0] != "ann" || len(field.Players()) != 0 {
					t.Fatalf("players: cave %v, field %v", got, field.Players())
				}
				// The client plays on in the new world: it sees itself.
				run(t, c, time.Second)
				if _, ok := c.Interest().Self(); !ok {
					t.Fatal("the client does not see its entity in the new world")
				}
				c.Close()
				time.Sleep(time.Second)
				ts.expect("leave cave ann")
				if tc.remote {
					if got := ts.a.metricLine(`tongbu_transfers_total{outcome="moved"} 1`); got == "" {
						t.Fatal("the transfer is not counted")
					}
				}
			})
		})
	}
}

// TestTransferStays: whatever goes wrong on the way, the player stays
// where it was, its client with it, and the place booked is given up.
func TestTransferStays(t *testing.T) {
	for _, tc := range []struct {
		name    string
		full    bool // the destination has no room
		nodial  bool // the client cannot reach the destination
		silent  bool // and the destination does not answer: given up after settleGiveUp
		leaving bool // the client leaves while the place is being booked
		want    string
	}{
		{name: "full", full: true, want: "full"},
		{name: "unreachable", nodial: true, want: "did not arrive"},
		{name: "silent", nodial: true, silent: true, want: "did not arrive"},
		{name: "client leaves", leaving: true, want: "did not arrive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ts := newTwoServers(t)
				field := ts.world(ts.a, "field", 0)
				cave := ts.world(ts.b, "cave", 1)
				to := &remote{w: cave, url: "mem://b", silent: tc.silent}
				var moves []Move
				cfg := ts.config(&moves)
				if tc.full {
					tk, _ := ts.b.s.Ticket("bob", "cave", RolePlayer, time.Minute)
					if _, err := Dial(context.Background(), "mem://b", tk, cfg); err != nil {
						t.Fatal(err)
					}
					ts.expect("join cave bob")
				}
				if tc.nodial {
					ts.dial["mem://b"] = errors.New("UDP blocked")
				}
				if tc.leaving {
					to.booked = make(chan struct{})
				}
				tk, _ := ts.a.s.Ticket("ann", "field", RolePlayer, time.Minute)
				c, err := Dial(context.Background(), "mem://a", tk, cfg)
				if err != nil {
					t.Fatal(err)
				}
				ts.expect("join field ann")
				done := startMove(t, field, "ann", to, "hp=7")
				if tc.leaving {
					run(t, c, 100*time.Millisecond)
					c.Close()
					time.Sleep(time.Second)
					close(to.booked)
				} else {
					for end := time.Now().Add(time.Minute); len(done) == 0 && time.Now().Before(end); {
						run(t, c, 100*time.Millisecond)
					}
				}
				err = <-done
				if !errors.Is(err, ErrTransfer) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("transfer: %v, want ErrTransfer (%s)", err, tc.want)
				}
				if tc.leaving {
					ts.expect("leave field ann")
					wantLoad(t, field, 0, 0)
				} else {
					ts.expect()
					wantLoad(t, field, 1, 0)
					if len(moves) != 0 || c.Target() != "field" {
						t.Fatalf("moves %+v, target %q", moves, c.Target())
					}
					// Its commands count again: it walks.
					before, _ := c.Interest().Self()
					c.Interest().Move(interest.Vec{X: before.Pos.X + 500, Y: before.Pos.Y}, 32)
					run(t, c, 2*time.Second)
					at := make(chan interest.Vec, 1)
					field.Do(func(w *interest.World) { l, _ := w.Logic(c.Entity()); at <- l.Pos })
					if pos := <-at; pos == before.Pos {
						t.Fatalf("the player stayed at %v: its commands are still ignored", pos)
					}
				}
				if tc.full {
					wantLoad(t, cave, 1, 0)
				} else {
					wantLoad(t, cave, 0, 0)
				}
				if got := ts.a.metricLine(`tongbu_transfers_total{outcome="stayed"} 1`); got == "" {
					t.Fatal("the transfer is not counted")
				}
			})
		})
	}
}

// TestTransferHostile: a client that says it failed a move it was never
// told of, or says it in garbage, is counted and dropped; a second
// transfer of a player already on its way is refused; a player unknown
// to the world cannot be transferred.
func TestTransferHostile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTwoServers(t)
		field := ts.world(ts.a, "field", 0)
		cave := ts.world(ts.a, "cave", 0)
		var moves []Move
		tk, _ := ts.a.s.Ticket("ann", "field", RolePlayer, time.Minute)
		c, err := Dial(context.Background(), "mem://a", tk, ts.config(&moves))
		if err != nil {
			t.Fatal(err)
		}
		ts.expect("join field ann")
		c.conn.SendReliable(appendMoveFail(nil, "never told"))
		c.conn.SendReliable([]byte{kindEngine | typeMoveFail<<kindBits, 0xff})
		run(t, c, time.Second)
		if ts.a.metricLine(`tongbu_dropped_total{mode="engine",reason="unexpected"} 1`) == "" ||
			ts.a.metricLine(`tongbu_dropped_total{mode="engine",reason="malformed"} 1`) == "" {
			t.Fatal("the hostile messages are not counted")
		}
		if err := <-startMove(t, field, "nobody", cave.Destination(), ""); !errors.Is(err, ErrTransfer) {
			t.Fatalf("transfer of an unknown player: %v", err)
		}
		slow := &remote{w: cave, booked: make(chan struct{})}
		first := startMove(t, field, "ann", slow, "")
		if err := <-startMove(t, field, "ann", cave.Destination(), ""); !errors.Is(err, ErrTransfer) {
			t.Fatalf("second transfer: %v", err)
		}
		close(slow.booked)
		run(t, c, time.Second)
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		ts.expect("arrive cave ann ", "leave field ann")
		c.Close()
	})
}

func FuzzMoveMessages(f *testing.F) {
	f.Add(appendMove(nil, &move{world: "cave", url: "https://b.example", ticket: "t"}))
	f.Add(appendMove(nil, &move{world: "wild#1", url: "https://c.example", ticket: "t", seamless: true, standby: true}))
	f.Add(appendMoveFail(nil, "no"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if m, err := readMove(msg); err == nil {
			if got, err := readMove(appendMove(nil, m)); err != nil || *got != *m {
				t.Fatalf("move %+v does not round-trip: %+v %v", m, got, err)
			}
		}
		if text, err := readMoveFail(msg); err == nil {
			if got, err := readMoveFail(appendMoveFail(nil, text)); err != nil || got != text {
				t.Fatalf("move failure %q does not round-trip: %q %v", text, got, err)
			}
		}
	})
}

// TestMoveWithoutStandbyBit: a move as senders wrote it before the
// standby bit (it ends after seamless) reads as no standby; the bit
// round-trips.
func TestMoveWithoutStandbyBit(t *testing.T) {
	for _, m := range []move{
		{world: "cave", url: "", ticket: "t"},
		{world: "wild#1", url: "https://c.example", ticket: "tt", seamless: true},
		{world: "wild#1", url: "https://c.example", ticket: "tt", seamless: true, standby: true},
	} {
		w := codec.NewWriter(nil)
		w.WriteBits(kindEngine, kindBits)
		w.WriteBits(typeMove, typeBits)
		w.WriteString(m.world, MaxNameLen)
		w.WriteString(m.url, maxMoveURL)
		w.WriteString(m.ticket, maxMoveTicket)
		w.WriteBool(m.seamless)
		old, err := readMove(w.Bytes())
		if err != nil || old.standby || old.seamless != m.seamless || old.ticket != m.ticket {
			t.Fatalf("an older move %+v reads as %+v, %v", m, old, err)
		}
		if got, err := readMove(appendMove(nil, &m)); err != nil || *got != m {
			t.Fatalf("move %+v reads back as %+v, %v", m, got, err)
		}
	}
}

// holding is a destination on the other server that holds standby places
// (World.Hold), as the next cell of a map does; held gets each booking.
type holding struct {
	remote
	held chan uint64
}

func (d *holding) Book(ctx context.Context, player string, state []byte, arrived func()) (Booking, error) {
	b, err := d.w.Reserve(player, state, StandbyTTL, arrived)
	if err != nil {
		return b, err
	}
	if err := d.w.Hold(b.ID); err != nil {
		return Booking{}, err
	}
	b.URL, b.Standby = d.url, true
	d.held <- b.ID
	return b, nil
}

// TestStandby: a player with a standby place next door plays on where it
// is while its client waits, connected, at the destination; when the
// destination admits it, the client switches at once, with no new
// connection. A standby given up closes the waiting connection and
// leaves the player where it was; Transfer waits for a standby to end.
func TestStandby(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTwoServers(t)
		west := ts.world(ts.a, "west", 0)
		east := ts.world(ts.b, "east", 10)
		to := &holding{remote: remote{w: east, url: "mem://b"}, held: make(chan uint64, 4)}
		var moves []Move
		cfg := ts.config(&moves)
		dials := 0
		connect := cfg.Connect
		cfg.Connect = func(ctx context.Context, url, ticket string) (transport.Conn, error) {
			dials++
			return connect(ctx, url, ticket)
		}
		tk, _ := ts.a.s.Ticket("ann", "west", RolePlayer, time.Minute)
		c, err := Dial(context.Background(), "mem://a", tk, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ts.expect("join west ann")
		me := c.Entity()

		// Given up: the waiting connection closes, ann stays.
		done := make(chan error, 1)
		cancel, err := west.Standby("ann", to, []byte("hp=7"), func(err error) { done <- err })
		if err != nil {
			t.Fatal(err)
		}
		<-to.held
		run(t, c, time.Second)
		wantLoad(t, east, 0, 1)
		if dials != 2 || len(moves) != 0 || c.Target() != "west" {
			t.Fatalf("standby: %d dials, moves %v, target %s", dials, moves, c.Target())
		}
		// She plays on meanwhile: her commands count.
		if err := c.Interest().Move(interest.Vec{X: 4200, Y: 4096}, 32); err != nil {
			t.Fatal(err)
		}
		run(t, c, time.Second)
		logic := make(chan interest.Logic, 1)
		west.Do(func(w *interest.World) { lg, _ := w.Logic(me); logic <- lg })
		run(t, c, 100*time.Millisecond)
		if lg := <-logic; lg.Dest.X != 4200 {
			t.Fatalf("ann's move was not taken while on standby: dest %v", lg.Dest)
		}
		refused := startMove(t, west, "ann", west.Destination(), "")
		run(t, c, 100*time.Millisecond)
		if err := <-refused; !errors.Is(err, ErrTransfer) {
			t.Fatalf("a transfer during a standby: %v, want ErrTransfer", err)
		}
		cancel()
		run(t, c, time.Second)
		if err := <-done; !errors.Is(err, ErrTransfer) {
			t.Fatalf("a standby given up ends with %v, want ErrTransfer", err)
		}
		wantLoad(t, east, 0, 0)
		wantLoad(t, west, 1, 0)
		if len(moves) != 0 || c.Target() != "west" {
			t.Fatalf("after the standby was given up: moves %v, target %s", moves, c.Target())
		}
		ts.expect() // no arrival, no leave

		// Admitted: the client switches to the waiting connection.
		if _, err := west.Standby("ann", to, []byte("hp=8"), func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		bk := <-to.held
		run(t, c, time.Second)
		if dials != 3 {
			t.Fatalf("%d dials, want 3", dials)
		}
		east.Do(func(*interest.World) {
			if err := east.Admit(bk); err != nil {
				t.Error(err)
			}
		})
		run(t, c, time.Second)
		if err := <-done; err != nil {
			t.Fatalf("standby: %v", err)
		}
		ts.expect("arrive east ann hp=8", "leave west ann")
		if dials != 3 || len(moves) != 1 || moves[0] != (Move{From: "west", To: "east", URL: "mem://b"}) {
			t.Fatalf("after admission: %d dials, moves %+v", dials, moves)
		}
		wantLoad(t, west, 0, 0)
		wantLoad(t, east, 1, 0)
		if _, ok := c.Interest().Self(); !ok {
			t.Fatal("the client does not see its entity in the new world")
		}
		c.Close()
	})
}

// TestOrphanedPlayerClosed: a player whose entity the game despawns (or a
// cell it was handed to lost) is told and closed, not left with nothing
// to see; the other players play on.
func TestOrphanedPlayerClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts := newTwoServers(t)
		field := ts.world(ts.a, "field", 0)
		var moves []Move
		dial := func(player string) *Client {
			tk, _ := ts.a.s.Ticket(player, "field", RolePlayer, time.Minute)
			c, err := Dial(context.Background(), "mem://a", tk, ts.config(&moves))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		ann, bob := dial("ann"), dial("bob")
		defer bob.Close()
		ts.expect("join field ann", "join field bob")
		id := ann.Entity()
		field.Do(func(w *interest.World) { w.Despawn(id) })
		var err error
		for range 200 {
			if err = ann.Update(time.Now()); err != nil {
				break
			}
			bob.Update(time.Now())
			time.Sleep(16 * time.Millisecond)
		}
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("ann's client: %v, want a close that matches ErrClosed", err)
		}
		ts.expect("leave field ann")
		wantLoad(t, field, 1, 0)
		run(t, bob, time.Second)
		if _, ok := bob.Interest().Self(); !ok {
			t.Fatal("bob does not see himself")
		}
	})
}

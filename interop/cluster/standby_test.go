//go:build !js

package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

// duelConfig is the rooms' configuration in these tests.
var duelConfig = lockstep.Config{Players: 2, Hz: 20}

// roomConfig is a duel's configuration from its request's config:
// duelConfig, strict when it says {"strict": true}.
func roomConfig(raw json.RawMessage) lockstep.Config {
	cfg := duelConfig
	var o struct {
		Strict     bool  `json:"strict"`
		StrictWait int64 `json:"strict_wait_ms"`
	}
	if len(raw) > 0 && json.Unmarshal(raw, &o) == nil && o.Strict {
		cfg.Strict, cfg.StrictWait = true, time.Duration(o.StrictWait)*time.Millisecond
	}
	return cfg
}

// addRoomNode starts node id, which takes rooms and stands by for the
// rooms of others.
func (c *worldCluster) addRoomNode(id string) *worldNode {
	t := c.t
	t.Helper()
	nc, err := nats.Connect(c.nats)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := engine.NewServer(engine.Config{Secret: secret, NoWebRTC: true, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n := &worldNode{id: id, url: "http://" + id + ".test:8080", nc: nc, srv: srv}
	host := func(req cluster.RoomRequest) (map[string]string, error) {
		if _, err := srv.CreateRoom(req.Room, roomConfig(req.Config)); err != nil {
			return nil, err
		}
		tickets := map[string]string{}
		for _, p := range req.Players {
			tickets[p], _ = srv.Ticket(p, req.Room, engine.RolePlayer, time.Minute)
		}
		return tickets, nil
	}
	if n.node, err = cluster.Join(nc, cluster.NodeInfo{ID: id, URL: n.url, Capacity: 10}, host, fast); err != nil {
		t.Fatal(err)
	}
	err = n.node.ServeStandbys(srv, func(room string, raw json.RawMessage, st engine.RoomState) (*engine.Room, error) {
		return srv.RestoreRoom(room, roomConfig(raw), st)
	})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.nodes[n.url] = n
	c.mu.Unlock()
	t.Cleanup(func() { c.kill(n) })
	return n
}

// duelist plays a lockstep client: an input with every frame it runs,
// and every frame it ran kept.
type duelist struct {
	c      *engine.Client
	frames []lockstep.Frame
	gap    time.Duration // the longest time between two new frames
	last   time.Time
	waited []int // the last slots its strict room said it waited for
	// clock: it sends an input every frame period of its own, as a game
	// does, rather than one for each frame it runs (a strict room stops
	// sending frames while it waits).
	clock     bool
	nextInput time.Time
}

func (d *duelist) play(now time.Time) error {
	if err := d.c.Update(now); err != nil {
		return err
	}
	st := d.c.Lockstep().Advance(now)
	if len(st.WaitingFor) > 0 {
		d.waited = st.WaitingFor
	}
	for _, f := range st.Frames {
		d.frames = append(d.frames, f)
		if !d.clock {
			d.c.Lockstep().Input(now, []byte{byte(d.c.Slot()), byte(f.Number)})
		}
	}
	if d.clock && !now.Before(d.nextInput) {
		d.c.Lockstep().Input(now, []byte{byte(d.c.Slot()), byte(len(d.frames))})
		d.nextInput = now.Add(d.c.Lockstep().Config().Period())
	}
	if len(st.Frames) > 0 && !st.CatchingUp {
		if !d.last.IsZero() {
			d.gap = max(d.gap, now.Sub(d.last))
		}
		d.last = now
	}
	return nil
}

// startDuel places a duel on the cluster and plays its two clients until
// they ran frames and the room has its standby; it returns the players
// and the node holding the room.
func startDuel(t *testing.T, c *worldCluster, nodes ...*worldNode) ([]*duelist, *worldNode) {
	t.Helper()
	return startDuelWith(t, c, nil, nodes...)
}

// startDuelWith is startDuel for a room of the given request config
// (roomConfig).
func startDuelWith(t *testing.T, c *worldCluster, config json.RawMessage, nodes ...*worldNode) ([]*duelist, *worldNode) {
	t.Helper()
	waitFor(t, "every node seeing the others", func() bool { return len(alive(nodes[0].node.Directory())) == len(nodes) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pl, err := cluster.CreateRoom(ctx, nodes[0].nc, cluster.RoomRequest{Room: "duel", Players: []string{"ann", "bob"}, Config: config}, fast)
	if err != nil {
		t.Fatal(err)
	}
	var primary *worldNode
	for _, n := range nodes {
		if n.id == pl.Node {
			primary = n
		}
	}
	ds := []*duelist{}
	for _, p := range []string{"ann", "bob"} {
		cl, err := engine.Dial(ctx, pl.URL, pl.Tickets[p], c.client(nil))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cl.Close() })
		ds = append(ds, &duelist{c: cl})
	}
	playDuel(t, "the match under way, with a standby", ds, func() bool {
		return len(ds[0].frames) > 30 && len(ds[1].frames) > 30 && primary.node.Standbys().Rooms == 1
	})
	return ds, primary
}

// playDuel plays the duelists until cond holds (15 s at most).
func playDuel(t *testing.T, what string, ds []*duelist, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		for i, d := range ds {
			if err := d.play(time.Now()); err != nil {
				t.Fatalf("%s: player %d: %v", what, i, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 15 s", what)
		}
	}
}

// sameMatch checks that every duelist ran one gapless sequence of frames
// and that they ran the same frames.
func sameMatch(t *testing.T, ds []*duelist) {
	t.Helper()
	for i, d := range ds {
		for n, f := range d.frames {
			if f.Number != n {
				t.Fatalf("player %d ran frame %d as its %dth", i, f.Number, n)
			}
		}
	}
	for n := range min(len(ds[0].frames), len(ds[1].frames)) {
		if a, b := fmt.Sprint(ds[0].frames[n]), fmt.Sprint(ds[1].frames[n]); a != b {
			t.Fatalf("frame %d: %s, the other player %s", n, a, b)
		}
	}
}

// crash crashes primary, one of two nodes a and b, and returns the other:
// the node leaves NATS at once (its room's lease is gone, so it cuts no
// more), and its players hear nothing from it.
func crash(c *worldCluster, primary, a, b *worldNode) (standby *worldNode) {
	standby = a
	if primary == a {
		standby = b
	}
	primary.nc.Close()
	c.mu.Lock()
	primary.dead = true
	c.mu.Unlock()
	return standby
}

// TestStandbyTakesOverACrashedNode: the node holding a match loses its
// NATS connection and falls silent (as a crashed process does to the
// cluster and to its players); the standby node takes the room over, the
// clients follow it there by themselves, and every frame of the match is
// the same for both players, with no gap and none cut twice.
func TestStandbyTakesOverACrashedNode(t *testing.T) {
	c := newWorldCluster(t)
	a, b := c.addRoomNode("a"), c.addRoomNode("b")
	ds, primary := startDuel(t, c, a, b)
	standby := crash(c, primary, a, b)
	crashedAt, ran := time.Now(), len(ds[0].frames)
	playDuel(t, "the match going on on the standby", ds, func() bool {
		return len(ds[0].frames) > ran+40 && len(ds[1].frames) > ran+40
	})
	t.Logf("the match went on after %v; longest stall %v / %v", time.Since(crashedAt).Round(time.Millisecond), ds[0].gap, ds[1].gap)
	sameMatch(t, ds)
	if st := standby.node.Standbys(); st.TakenOver != 1 {
		t.Fatalf("standby stats %+v, want one room taken over", st)
	}
	if got, ok := standby.node.Directory().Locate("duel"); !ok || got.ID != standby.id {
		t.Errorf("the directory places the duel on %+v", got)
	}
	for i, d := range ds {
		if d.gap > 3*time.Second {
			t.Errorf("player %d went %v without a frame", i, d.gap)
		}
	}
}

// TestDrainHandsTheMatchOver: a node drained for a deploy hands its match
// to the standby while the players play: the clients move over their
// open connections, and the match goes on with a stall of a few frames.
func TestDrainHandsTheMatchOver(t *testing.T) {
	c := newWorldCluster(t)
	a, b := c.addRoomNode("a"), c.addRoomNode("b")
	ds, primary := startDuel(t, c, a, b)
	standby := a
	if primary == a {
		standby = b
	}
	for _, d := range ds {
		d.gap = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ran := len(ds[0].frames)
	type drained struct {
		handed int
		err    error
	}
	done := make(chan drained, 1)
	go func() { // the players play while their node drains
		n, err := primary.node.Drain(ctx)
		done <- drained{n, err}
	}()
	var d *drained
	playDuel(t, "the drain", ds, func() bool {
		select {
		case r := <-done:
			d = &r
		default:
		}
		return d != nil
	})
	if d.err != nil || d.handed != 1 {
		t.Fatalf("drain handed %d rooms over: %v", d.handed, d.err)
	}
	playDuel(t, "the match going on on the standby", ds, func() bool {
		return len(ds[0].frames) > ran+40 && len(ds[1].frames) > ran+40
	})
	t.Logf("longest stall %v / %v", ds[0].gap, ds[1].gap)
	sameMatch(t, ds)
	if st := standby.node.Standbys(); st.TakenOver != 1 {
		t.Fatalf("standby stats %+v", st)
	}
	if st := primary.node.Standbys(); st.HandedOff != 1 {
		t.Fatalf("primary stats %+v", st)
	}
	for i, d := range ds {
		if d.gap > time.Second {
			t.Errorf("player %d went %v without a frame", i, d.gap)
		}
	}
}

// TestStrictRoomTakenOver: a strict duel (every frame waits for both
// players' inputs) survives its node's crash as a free-running one does:
// the standby takes it over, strict, and both players run one gapless
// match. Then one player's client stops: the standby's room waits for
// it, the other client is told whom it waits for (that player alone),
// and after StrictWait the match plays on without it.
func TestStrictRoomTakenOver(t *testing.T) {
	c := newWorldCluster(t)
	a, b := c.addRoomNode("a"), c.addRoomNode("b")
	ds, primary := startDuelWith(t, c, json.RawMessage(`{"strict": true, "strict_wait_ms": 1500}`), a, b)
	for _, d := range ds {
		d.clock = true
	}
	standby := crash(c, primary, a, b)
	ran := len(ds[0].frames)
	playDuel(t, "the strict match going on on the standby", ds, func() bool {
		return len(ds[0].frames) > ran+40 && len(ds[1].frames) > ran+40
	})
	sameMatch(t, ds)
	if st := standby.node.Standbys(); st.TakenOver != 1 {
		t.Fatalf("standby stats %+v, want one room taken over", st)
	}
	r, ok := standby.srv.Room("duel")
	if !ok || !r.Config().Strict {
		t.Fatalf("the standby's room %v is not strict", ok)
	}
	// Bob's client stops (a frozen tab: no packets at all): Ann's client
	// hears that the room waits for him, and him alone, and after
	// StrictWait the match goes on without him.
	ds[0].waited = nil
	stopped := len(ds[0].frames)
	playDuel(t, "ann told the room waits for bob", ds[:1], func() bool { return ds[0].waited != nil })
	if !slices.Equal(ds[0].waited, []int{1}) {
		t.Fatalf("ann's client waits for %v, want bob's slot 1 alone", ds[0].waited)
	}
	if held := len(ds[0].frames) - stopped; held > 6 {
		t.Fatalf("ann ran %d frames before the room waited", held)
	}
	playDuel(t, "the match going on without bob", ds[:1], func() bool { return len(ds[0].frames) > stopped+40 })
	sameMatch(t, ds) // bob's frames end where he stopped
}

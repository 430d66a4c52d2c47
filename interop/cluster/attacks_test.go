//go:build !js

package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/seal"
	"github.com/tongbu/tongbu/matchmaker"
)

// The standing attacks of issue 57 on a NATS server with no permissions
// at all (anyone may publish and subscribe anywhere), so that the
// cluster's sealing is shown to hold on its own. Each attacker is a NATS
// client without the cluster's secret, or, where it says so, a process
// of the cluster speaking for another.

// attacker is a NATS client of the test's server.
func attacker(t *testing.T, wc *worldCluster) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(wc.nats)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// insider returns a sender sealed with the cluster's secret as role id:
// a process of the cluster that speaks for another.
func insider(t *testing.T, role seal.Role, id string) *seal.Sender {
	t.Helper()
	k, err := seal.NewKeys(clusterSecret)
	if err != nil {
		t.Fatal(err)
	}
	s, err := k.NewSender(role, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// unanswered reports whether a request on subject gets no answer within
// d.
func unanswered(nc *nats.Conn, subject string, data []byte, d time.Duration) bool {
	_, err := nc.Request(subject, data, d)
	return errors.Is(err, nats.ErrTimeout)
}

// TestAttackForgedBooking: a booking or a room asked for any player,
// unsealed or sealed with another cluster's secret, is answered with
// nothing (no ticket), makes no room, and is counted; a kick, likewise.
func TestAttackForgedBooking(t *testing.T) {
	wc := newWorldCluster(t)
	a := wc.add("a", 100)
	if _, err := cluster.CreateWorld(t.Context(), a.nc, cluster.WorldRequest{World: "field", Cap: 10}, fast); err != nil {
		t.Fatal(err)
	}
	mallory := attacker(t, wc)
	otherKeys, _ := seal.NewKeys([]byte("another cluster's secret, 32 by"))
	other, _ := otherKeys.NewSender(seal.RoleClient, "c-mallory")
	book := []byte(`{"op":"book","world":"field","player":"victim","ttl_ms":60000}`)
	room := []byte(`{"room":"stolen","players":["victim","mallory"]}`)
	for _, tc := range []struct {
		name, subject string
		data          []byte
	}{
		{"a booking", "tongbu.cluster.world.a", book},
		{"a booking sealed with another secret", "tongbu.cluster.world.a", other.Seal("tongbu.cluster.world.a", book, time.Now())},
		{"a room request", "tongbu.cluster.create", room},
		{"a room request to the node", "tongbu.cluster.create.a", room},
		{"a room request sealed with another secret", "tongbu.cluster.create", other.Seal("tongbu.cluster.create", room, time.Now())},
		{"a world request", "tongbu.cluster.worlds.create", []byte(`{"world":"mine","cap":100000}`)},
		{"a kick", "tongbu.cluster.kick.a", []byte(`{"player":"victim"}`)},
	} {
		if !unanswered(mallory, tc.subject, tc.data, 300*time.Millisecond) {
			t.Errorf("%s was answered", tc.name)
		}
	}
	if got := a.node.Dropped()["forged"]; got < 7 {
		t.Errorf("%d forged messages counted, want 7 or more", got)
	}
	if len(a.node.Rooms()) != 0 || len(a.node.Worlds()) != 1 {
		t.Errorf("rooms %v, worlds %v after the forged requests", a.node.Rooms(), a.node.Worlds())
	}
	w, _ := a.srv.World("field")
	if p, b := w.Load(); p+b != 0 {
		t.Errorf("the field holds %d players and %d bookings", p, b)
	}
	// The honest lobby books as ever.
	lobby := attacker(t, wc) // a connection like any; its sealing is the cluster's
	d, err := cluster.Watch(lobby, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, "the lobby to see the field", func() bool { _, ok := d.LocateWorld("field"); return ok })
	if p, err := cluster.JoinWorld(t.Context(), lobby, d, cluster.JoinRequest{World: "field", Player: "ann"}, fast); err != nil || p.Tickets["ann"] == "" {
		t.Fatalf("an honest booking: %v", err)
	}
}

// TestAttackSniffedAssignment: a client subscribed to every subject while
// players are matched sees no room ticket: assignments travel encrypted.
func TestAttackSniffedAssignment(t *testing.T) {
	wc := newWorldCluster(t)
	mallory := attacker(t, wc)
	var mu sync.Mutex
	var seen [][]byte
	sub, err := mallory.Subscribe(">", func(m *nats.Msg) {
		mu.Lock()
		seen = append(seen, append([]byte(m.Subject+" "), m.Data...))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	mallory.Flush()

	tickets := &roomHost{}
	nc := attacker(t, wc)
	n, err := cluster.Join(nc, cluster.NodeInfo{ID: "eu-1", URL: "http://eu-1.test", Capacity: 10}, tickets.create, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Leave()
	mo := &matchmaker.Options{Heartbeat: 50 * time.Millisecond, Interval: 50 * time.Millisecond, Secret: clusterSecret, Cluster: fast}
	svc, err := matchmaker.Serve(attacker(t, wc), matchmaker.Config{Modes: []matchmaker.Mode{{Name: "duel", Teams: 2, TeamSize: 1}}}, mo)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	q, err := matchmaker.NewQueue(attacker(t, wc), mo)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var ws []*matchmaker.Wait
	for _, p := range []string{"ann", "bob"} {
		w, err := q.Submit(matchmaker.Ticket{Players: []matchmaker.Player{{ID: p, Rating: matchmaker.NewRating()}}, Mode: "duel"})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var stolen []string
	for _, w := range ws {
		as, err := w.Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range as.Tickets {
			stolen = append(stolen, tk)
		}
	}
	mallory.Flush()
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 10 {
		t.Fatalf("the sniffer saw only %d messages", len(seen))
	}
	for _, tk := range stolen {
		for _, m := range seen {
			if bytes.Contains(m, []byte(tk)) {
				t.Fatalf("a room ticket in the clear on NATS: %.80q", m)
			}
		}
	}
	for _, m := range seen {
		if bytes.Contains(m, []byte(`"tickets"`)) || bytes.Contains(m, []byte(`"players"`)) {
			t.Fatalf("a cluster message in the clear: %.80q", m)
		}
	}
}

// roomHost makes no room; it signs stand-in tickets, unique per player
// and room, for the sniffer to look for.
type roomHost struct{}

func (*roomHost) create(req cluster.RoomRequest) (map[string]string, error) {
	out := map[string]string{}
	for _, p := range req.Players {
		tk, err := engine.SignTicket(secret, engine.Ticket{Player: p, Target: req.Room, Expires: time.Now().Add(time.Minute)})
		if err != nil {
			return nil, err
		}
		out[p] = tk
	}
	return out, nil
}

// TestAttackForgedHeartbeat: a heartbeat that lists another node's world
// at the attacker's URL (from a node id that sorts first, which would
// make the holder close its copy), or names the holder with a new
// instance (which would report it restarted and its worlds lost),
// unsealed or sealed by another node of the cluster, closes no world,
// lists nothing at the attacker's URL and reports no node lost.
func TestAttackForgedHeartbeat(t *testing.T) {
	wc := newWorldCluster(t)
	nodes := map[string]*worldNode{}
	for _, id := range []string{"a", "b"} {
		nodes[id] = wc.add(id, 100)
	}
	p, err := cluster.CreateWorld(t.Context(), nodes["b"].nc, cluster.WorldRequest{World: "x", Cap: 5}, fast)
	if err != nil {
		t.Fatal(err)
	}
	holder := nodes[p.Node]
	other := nodes[map[string]string{"a": "b", "b": "a"}[p.Node]]
	lobby := attacker(t, wc)
	var lossMu sync.Mutex
	var losses []cluster.Loss
	opts := *fast
	opts.OnLoss = func(l cluster.Loss) { lossMu.Lock(); losses = append(losses, l); lossMu.Unlock() }
	d, err := cluster.Watch(lobby, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, "the lobby to see x", func() bool { w, ok := d.LocateWorld("x"); return ok && w.Node == holder.id })

	mallory := attacker(t, wc)
	hb := func(id string, instance uint64) []byte {
		return fmt.Appendf(nil, `{"id":%q,"instance":%d,"url":"http://mallory.test","capacity":10,"rooms":0,"gen":0,"interval_ms":25,"players":100,"worlds":[{"name":"x","players":3,"cap":5}]}`, id, instance)
	}
	fromOther := insider(t, seal.RoleNode, other.id) // the other node's key, speaking for another
	for range 40 {                                   // a second of them, at the interval the victims use
		mallory.Publish("tongbu.cluster.ev.hb", hb("0", 1))        // a node that sorts first holds x, says the forger
		mallory.Publish("tongbu.cluster.ev.hb", hb(holder.id, 99)) // the holder restarted, says the forger
		mallory.Publish("tongbu.cluster.ev.hb", fromOther.Seal("tongbu.cluster.ev.hb", hb("0", fromOther.Peer().Instance), time.Now()))
		time.Sleep(25 * time.Millisecond)
	}
	if _, ok := holder.srv.World("x"); !ok {
		t.Fatal("the holder closed its world x for a forged heartbeat")
	}
	for _, dir := range []*cluster.Directory{d, holder.node.Directory(), other.node.Directory()} {
		if w, ok := dir.LocateWorld("x"); !ok || w.Node != holder.id || strings.Contains(w.URL, "mallory") {
			t.Fatalf("a directory lists x as %+v", w)
		}
		for _, n := range dir.Nodes() {
			if strings.Contains(n.URL, "mallory") || n.ID == "0" {
				t.Fatalf("a directory lists node %+v", n)
			}
		}
	}
	lossMu.Lock()
	defer lossMu.Unlock()
	if len(losses) != 0 {
		t.Fatalf("losses reported: %+v", losses)
	}
	if dr := d.Dropped(); dr["forged"] < 80 || dr["refused"] < 40 {
		t.Fatalf("the lobby's directory dropped %v, want 80 forged and 40 refused", dr)
	}
}

// TestAttackForgedGhosts: border messages for a cell, unsealed or sealed
// by a node that does not serve the neighbour cell, with 500 entities
// near the border and one handed over, put no entity in the cell; the
// real neighbour's ghosts still come.
func TestAttackForgedGhosts(t *testing.T) {
	wc := newWorldCluster(t)
	a, b := wc.add("a", 100), wc.add("b", 100)
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now()}
	west, err := a.node.ServeCell(m, 0, engine.WorldConfig{MaxPlayers: 10})
	if err != nil {
		t.Fatal(err)
	}
	east, err := b.node.ServeCell(m, 1, engine.WorldConfig{MaxPlayers: 10})
	if err != nil {
		t.Fatal(err)
	}
	wolf := onWorker(east, func(w *interest.World) interest.ID {
		id, _ := w.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 4300, Y: 2048}, Life: 100}, interest.Display{Name: "wolf"})
		return id
	})
	waitFor(t, "the cells in the directory", func() bool {
		_, w := a.node.Directory().LocateWorld(cluster.CellName("wild", 0))
		_, e := a.node.Directory().LocateWorld(cluster.CellName("wild", 1))
		return w && e
	})
	waitFor(t, "the wolf's ghost in the west", func() bool {
		return onWorker(west, func(w *interest.World) bool { _, ok := w.Logic(wolf); return ok })
	})

	// The forger's border message: a world of its own cut as the map is,
	// 500 NPCs by the border (mirrored) and one inside the west cell
	// (handed over), written as cell 1 writes to cell 0.
	ic := m.Interest
	ic.IDStride, ic.IDOffset = 2, 1
	fw, err := interest.NewWorld(ic, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var forged []interest.ID
	for i := range 501 {
		id, err := fw.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: int32(4100 + i), Y: int32(1000 + 4*i)}, Life: 100}, interest.Display{Name: "forged"})
		if err != nil {
			t.Fatal(err)
		}
		if id != wolf { // the forger's IDs are the east cell's: one is the wolf's
			forged = append(forged, id)
		}
	}
	handed, _ := fw.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 3000, Y: 2048}, Life: 100}, interest.Display{Name: "forged"})
	forged = append(forged, handed)
	border, err := fw.NewBorder(m.Rect(1), m.Rect(0))
	if err != nil {
		t.Fatal(err)
	}
	fw.Tick(time.Now().Add(time.Second))
	msg, _ := border.Write(nil)
	body := append([]byte{0}, msg...) // a border message (SPEC.md §11.2)
	mallory := attacker(t, wc)
	mallet := insider(t, seal.RoleNode, "mallet") // a node, but not cell 1's
	subject := "tongbu.cluster.cell.wild.0.1"
	for range 20 {
		mallory.Publish(subject, body)
		mallory.Publish(subject, mallet.Seal(subject, body, time.Now()))
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if n := onWorker(west, func(w *interest.World) int {
		n := 0
		for _, id := range forged {
			if _, ok := w.Logic(id); ok {
				n++
			}
		}
		return n
	}); n != 0 {
		t.Fatalf("%d forged entities in the west cell", n)
	}
	if !onWorker(west, func(w *interest.World) bool { _, ok := w.Logic(wolf); return ok }) {
		t.Fatal("the real ghost is gone")
	}
	if dr := a.node.Dropped(); dr["forged"] < 20 || dr["refused"] < 20 {
		t.Fatalf("the west node dropped %v, want 20 forged and 20 refused", dr)
	}
}

// TestAttackFakeServices: 50 Service heartbeats from the attacker (and
// one sealed by a queue, speaking as a Service) win no pool: the queue
// sends its tickets to the real Service only, which matches them.
func TestAttackFakeServices(t *testing.T) {
	wc := newWorldCluster(t)
	n, err := cluster.Join(attacker(t, wc), cluster.NodeInfo{ID: "eu-1", URL: "http://eu-1.test", Capacity: 10}, (&roomHost{}).create, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Leave()
	mo := &matchmaker.Options{Heartbeat: 50 * time.Millisecond, Interval: 50 * time.Millisecond, Secret: clusterSecret, Cluster: fast}
	mo.ID = "real"
	svc, err := matchmaker.Serve(attacker(t, wc), matchmaker.Config{Modes: []matchmaker.Mode{{Name: "duel", Teams: 2, TeamSize: 1}}}, mo)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	qo := *mo
	qo.ID = ""
	q, err := matchmaker.NewQueue(attacker(t, wc), &qo)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	mallory := attacker(t, wc)
	asQueue := insider(t, seal.RoleQueue, "q-mallory")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			for i := range 50 {
				mallory.Publish("tongbu.mm.hb", fmt.Appendf(nil, `{"id":"fake-%d","instance":%d,"interval_ms":50}`, i, i+1))
			}
			mallory.Publish("tongbu.mm.hb", asQueue.Seal("tongbu.mm.hb", []byte(`{"id":"fake-q","instance":1,"interval_ms":50}`), time.Now()))
			select {
			case <-stop:
				return
			case <-time.After(40 * time.Millisecond):
			}
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if got := q.Services(); len(got) != 1 || got[0] != "real" {
		t.Fatalf("the queue sends tickets to %v", got)
	}
	var ws []*matchmaker.Wait
	for _, p := range []string{"ann", "bob", "cy", "dee"} {
		w, err := q.Submit(matchmaker.Ticket{Players: []matchmaker.Player{{ID: p, Rating: matchmaker.NewRating()}}, Mode: "duel"})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, w := range ws {
		a, err := w.Await(ctx)
		if err != nil || !strings.HasPrefix(a.Match, "real-") {
			t.Fatalf("an honest ticket: %+v, %v", a, err)
		}
	}
	if got := len(n.Rooms()); got != 2 {
		t.Fatalf("%d rooms placed for two matches", got)
	}
}

// TestAttackReplay: a captured message of the cluster, sent again, is
// refused: at once (a replay), and once it is older than MaxSkew (stale)
// by a process that never saw it.
func TestAttackReplay(t *testing.T) {
	wc := newWorldCluster(t)
	mallory := attacker(t, wc)
	captured := make(chan []byte, 64)
	sub, err := mallory.Subscribe("tongbu.cluster.ev.hb", func(m *nats.Msg) {
		select {
		case captured <- append([]byte(nil), m.Data...):
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	mallory.Flush()
	a := wc.add("a", 100)
	lobby := attacker(t, wc)
	opts := *fast
	opts.MaxSkew = time.Second
	d, err := cluster.Watch(lobby, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitFor(t, "the lobby to see a", func() bool { return len(d.Nodes()) == 1 })
	var hb []byte
	for len(captured) > 0 { // the newest: one the lobby took
		hb = <-captured
	}
	if hb == nil {
		hb = <-captured
	}
	replayed := d.Dropped()["replayed"]
	for range 10 {
		mallory.Publish("tongbu.cluster.ev.hb", hb)
	}
	mallory.Flush()
	waitFor(t, "the replays counted", func() bool { return d.Dropped()["replayed"] >= replayed+10 })
	// A process that starts later, after the message's time plus MaxSkew,
	// refuses it as stale.
	time.Sleep(1200 * time.Millisecond)
	late, err := cluster.Watch(attacker(t, wc), &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer late.Close()
	mallory.Publish("tongbu.cluster.ev.hb", hb)
	mallory.Flush()
	waitFor(t, "the stale heartbeat counted", func() bool { return late.Dropped()["stale"] >= 1 })
	a.node.Leave()
}

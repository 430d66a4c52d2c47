//go:build !js

// Package matchmaker_test runs matchmaking Services and queues over a
// real NATS server, with cluster nodes to place the matches on.
package matchmaker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/internal/seal"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/matchmaker"
)

// fast: heartbeats every 50 ms, a Service dead after 10 missed.
func fast() *matchmaker.Options {
	return &matchmaker.Options{Heartbeat: 50 * time.Millisecond, Misses: 10, Interval: 50 * time.Millisecond,
		RequestTimeout: 2 * time.Second, ClaimTimeout: 3 * time.Second,
		Cluster: &cluster.Options{Heartbeat: 50 * time.Millisecond, Misses: 10, Secret: clusterSecret}}
}

// clusterSecret seals the messages of the test's cluster and matchmaking.
var clusterSecret = []byte("interop-matchmaker-secret-0123456789")

var modes = []matchmaker.Mode{
	{Name: "duel", Teams: 2, TeamSize: 1},
	{Name: "5v5", Teams: 2, TeamSize: 5},
}

// host is a cluster node's host that records the rooms and signs fake
// tickets.
type host struct {
	mu    sync.Mutex
	rooms map[string]cluster.RoomRequest
}

func (h *host) create(req cluster.RoomRequest) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rooms[req.Room] = req
	t := map[string]string{}
	for _, p := range req.Players {
		t[p] = "ticket:" + req.Room + ":" + p
	}
	return t, nil
}

// node joins a cluster node of region serving builds.
func node(t *testing.T, s *server.Server, id, region string, builds ...string) *host {
	t.Helper()
	nc := natstest.Conn(t, s)
	h := &host{rooms: map[string]cluster.RoomRequest{}}
	n, err := cluster.Join(nc, cluster.NodeInfo{ID: id, URL: "http://" + id + ".test", Capacity: 1000, Region: region, Builds: builds},
		h.create, fast().Cluster)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Leave() })
	return h
}

// service starts a matchmaking Service on its own connection.
func service(t *testing.T, s *server.Server, id string) (*matchmaker.Service, *nats.Conn) {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	o := fast()
	o.ID = id
	svc, err := matchmaker.Serve(nc, matchmaker.Config{Modes: modes}, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(); nc.Close() })
	return svc, nc
}

func queue(t *testing.T, s *server.Server) *matchmaker.Queue {
	t.Helper()
	q, err := matchmaker.NewQueue(natstest.Conn(t, s), fast())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { q.Close() })
	return q
}

func solo(id string, mu float64, mode, build string, rtt map[string]int) matchmaker.Ticket {
	return matchmaker.Ticket{Players: []matchmaker.Player{{ID: id, Rating: matchmaker.Rating{Mu: mu, Sigma: 2}}}, Mode: mode, Build: build, RTT: rtt}
}

func await(t *testing.T, ws ...*matchmaker.Wait) []matchmaker.Assignment {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	out := make([]matchmaker.Assignment, len(ws))
	for i, w := range ws {
		a, err := w.Await(ctx)
		if err != nil {
			t.Fatalf("ticket %d (%s): %v", i, w.ID(), err)
		}
		out[i] = a
	}
	return out
}

func submit(t *testing.T, q *matchmaker.Queue, tk matchmaker.Ticket) *matchmaker.Wait {
	t.Helper()
	w, err := q.Submit(tk)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestMatchesPlacedNearThePlayers: two Services and two queues; every
// player gets a room ticket for a node in the region whose worst round
// trip is the shortest, with its opponent of close skill.
func TestMatchesPlacedNearThePlayers(t *testing.T) {
	s := natstest.Server(t)
	hosts := map[string]*host{"eu-1": node(t, s, "eu-1", "eu"), "us-1": node(t, s, "us-1", "us"), "as-1": node(t, s, "as-1", "as")}
	service(t, s, "mm-a")
	service(t, s, "mm-b")
	qs := []*matchmaker.Queue{queue(t, s), queue(t, s)}
	near := map[string]map[string]int{
		"eu": {"eu": 20, "us": 90, "as": 200},
		"us": {"eu": 90, "us": 25, "as": 150},
		"as": {"eu": 200, "us": 150, "as": 30},
	}
	var ws []*matchmaker.Wait
	var where []string
	for i := range 24 {
		region := []string{"eu", "us", "as"}[i%3]
		mu := 10 + float64(i/6)*10 // four skill bands of six
		ws = append(ws, submit(t, qs[i%2], solo(fmt.Sprint("p", i), mu, "duel", "", near[region])))
		where = append(where, region)
	}
	as := await(t, ws...)
	rooms := map[string][]int{}
	for i, a := range as {
		if a.Region != where[i] || a.Node != where[i]+"-1" || a.URL != "http://"+where[i]+"-1.test" {
			t.Errorf("player %d of %s placed in %s on %s (%s)", i, where[i], a.Region, a.Node, a.URL)
		}
		p := fmt.Sprint("p", i)
		if a.Tickets[p] != "ticket:"+a.Room+":"+p {
			t.Errorf("player %d's room ticket %q", i, a.Tickets[p])
		}
		rooms[a.Room] = append(rooms[a.Room], i)
	}
	for room, ps := range rooms {
		if len(ps) != 2 || ps[0]/6 != ps[1]/6 {
			t.Errorf("room %s holds players %v: want two of one skill band", room, ps)
		}
	}
	n := 0
	for _, h := range hosts {
		h.mu.Lock()
		n += len(h.rooms)
		h.mu.Unlock()
	}
	if n != 12 {
		t.Errorf("%d rooms created, want 12", n)
	}
}

// TestServiceDeathLosesNoTicket: the Service that holds the tickets dies
// (its connection cut, no goodbye); the queue sends them to another,
// which matches them, each once.
func TestServiceDeathLosesNoTicket(t *testing.T) {
	s := natstest.Server(t)
	node(t, s, "eu-1", "eu")
	svcs := map[string]*nats.Conn{}
	for _, id := range []string{"mm-a", "mm-b", "mm-c"} {
		_, nc := service(t, s, id)
		svcs[id] = nc
	}
	q := queue(t, s)
	for deadline := time.Now().Add(10 * time.Second); len(q.Services()) != 3; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the queue hears Services %v", q.Services())
		}
	}
	// Ten players far apart in skill: they wait, held by one Service.
	var ws []*matchmaker.Wait
	for i := range 10 {
		ws = append(ws, submit(t, q, solo(fmt.Sprint("far", i), float64(i)*100, "duel", "", nil)))
	}
	var holder string
	for deadline := time.Now().Add(5 * time.Second); holder == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, w := range ws {
			if h := w.Service(); h != "" {
				holder = h
			}
		}
	}
	if holder == "" {
		t.Fatal("no Service holds the tickets")
	}
	svcs[holder].Close() // dies
	// Partners for each arrive; every pair is matched by the survivors.
	for i := range 10 {
		ws = append(ws, submit(t, q, solo(fmt.Sprint("near", i), float64(i)*100, "duel", "", nil)))
	}
	as := await(t, ws...)
	seen := map[string]bool{}
	for i, a := range as {
		if seen[a.Ticket] {
			t.Errorf("ticket %s assigned twice", a.Ticket)
		}
		seen[a.Ticket] = true
		if strings.HasPrefix(a.Match, holder+"-") {
			t.Errorf("ticket %d matched by the dead Service: %q", i, a.Match)
		}
	}
}

// TestBuildSwitch: builds 1.4 and 1.5 never meet until the operator opens
// the switch; then they do, on a node that serves both.
func TestBuildSwitch(t *testing.T) {
	s := natstest.Server(t)
	node(t, s, "old", "eu", "1.4")
	both := node(t, s, "both", "eu", "1.4", "1.5")
	service(t, s, "mm-a")
	service(t, s, "mm-b")
	q := queue(t, s)
	live := submit(t, q, solo("live", 25, "duel", "1.4", nil))
	preview := submit(t, q, solo("preview", 25, "duel", "1.5", nil))
	select {
	case <-live.Done():
		t.Fatal("matched with the switch closed")
	case <-preview.Done():
		t.Fatal("matched with the switch closed")
	case <-time.After(time.Second):
	}
	if err := matchmaker.SetSwitches(natstest.Conn(t, s), [][2]string{{"1.4", "1.5"}}, fast()); err != nil {
		t.Fatal(err)
	}
	as := await(t, live, preview)
	if as[0].Room != as[1].Room || as[0].Node != "both" {
		t.Fatalf("assignments %+v", as)
	}
	both.mu.Lock()
	req := both.rooms[as[0].Room]
	both.mu.Unlock()
	if !slices.Equal(req.Builds, []string{"1.4", "1.5"}) {
		t.Errorf("room request builds %v", req.Builds)
	}
}

// TestBackfillCancelAndTimeout: a running room's open seat is filled
// through its queue's seat func; a canceled ticket ends with ErrCanceled;
// a bad one is refused.
func TestBackfillCancelAndTimeout(t *testing.T) {
	s := natstest.Server(t)
	node(t, s, "eu-1", "eu")
	service(t, s, "mm-a")
	q := queue(t, s)
	seated := make(chan []string, 1)
	bf, err := q.Backfill(matchmaker.Ticket{Mode: "duel", Backfill: &matchmaker.Backfill{Room: "running", Node: "eu-1", URL: "http://eu-1.test", Region: "eu",
		Teams: [][]matchmaker.Rating{{{Mu: 30, Sigma: 2}}, {}}, Open: []int{0, 1}}},
		func(players []string) (map[string]string, error) {
			seated <- players
			return map[string]string{players[0]: "seat-ticket"}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	joiner := submit(t, q, solo("joiner", 29, "duel", "", map[string]int{"eu": 30}))
	as := await(t, bf, joiner)
	if got := <-seated; !slices.Equal(got, []string{"joiner"}) {
		t.Errorf("seated %v", got)
	}
	if as[1].Room != "running" || as[1].Tickets["joiner"] != "seat-ticket" || as[1].Team != 1 || as[1].URL != "http://eu-1.test" {
		t.Errorf("joiner's assignment %+v", as[1])
	}

	w := submit(t, q, solo("alone", 25, "duel", "", nil))
	time.Sleep(200 * time.Millisecond)
	w.Cancel()
	if _, err := w.Await(t.Context()); !errors.Is(err, matchmaker.ErrCanceled) {
		t.Errorf("canceled: %v", err)
	}
	// A mode no Service knows is refused by the Service.
	if _, err := submit(t, q, solo("x", 25, "tennis", "", nil)).Await(t.Context()); !errors.Is(err, matchmaker.ErrTicket) {
		t.Errorf("a ticket of an unknown mode: %v", err)
	}
	if _, err := q.Submit(matchmaker.Ticket{Mode: "duel"}); !errors.Is(err, matchmaker.ErrTicket) {
		t.Errorf("a ticket of no players: %v", err)
	}
}

// TestClaimsGrantEachTicketOnce speaks the protocol by hand as a Service
// that claims two tickets and dies before it places them: the queue grants
// the tickets to its first match only, takes them back once the Service is
// declared dead, sends them to a live Service, which matches them, and
// refuses the dead Service's late assignment.
func TestClaimsGrantEachTicketOnce(t *testing.T) {
	s := natstest.Server(t)
	node(t, s, "eu-1", "eu")
	// The fake Service, sealed as a Service of the cluster: it holds
	// whatever is sent to it.
	c := speaker(t, s, "fake")
	inst := c.Peer().Instance
	sub, err := c.Subscribe("tongbu.mm.submit.fake", func(m *seal.Msg) { m.Respond(fmt.Appendf(nil, `{"instance": %d}`, inst)) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	beat := make(chan struct{})
	go func() {
		for {
			c.Publish("tongbu.mm.hb", fmt.Appendf(nil, `{"id": "fake", "instance": %d, "interval_ms": 50}`, inst))
			select {
			case <-beat:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	o := fast()
	o.ClaimTimeout = time.Second
	q, err := matchmaker.NewQueue(natstest.Conn(t, s), o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	a := submit(t, q, solo("ann", 25, "duel", "", nil))
	b := submit(t, q, solo("bo", 25, "duel", "", nil))
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("still waiting for %s", what)
			}
		}
	}
	waitFor("the fake Service to hold both", func() bool { return a.Service() == "fake" && b.Service() == "fake" })
	ask := func(op string) map[string][]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		msg, err := c.Request(ctx, "tongbu.mm.q."+queueID(a), []byte(op), nil)
		if err != nil {
			t.Fatal(err)
		}
		var rep map[string][]string
		json.Unmarshal(msg.Data, &rep)
		return rep
	}
	claim := func(match string) string {
		return fmt.Sprintf(`{"op": "claim", "service": "fake", "instance": %d, "claims": [{"match": %q, "tickets": [%q, %q]}]}`, inst, match, a.ID(), b.ID())
	}
	if rep := ask(claim("m1")); !slices.Equal(rep["granted"], []string{"m1"}) {
		t.Fatalf("first claim: %v", rep)
	}
	if rep := ask(claim("m2")); len(rep["granted"]) != 0 {
		t.Fatalf("a second match was granted the same tickets: %v", rep)
	}
	// The fake Service dies; a real one comes. The claim ends with the
	// fake, and the real one matches them.
	close(beat)
	service(t, s, "real")
	as := await(t, a, b)
	if !strings.HasPrefix(as[0].Match, "real-") || as[0].Match != as[1].Match {
		t.Fatalf("assignments %+v", as)
	}
	late := fmt.Sprintf(`{"op": "assign", "service": "fake", "instance": %d, "assign": [{"ticket": %q, "match": "m1", "room": "m1"}]}`, inst, a.ID())
	if rep := ask(late); !slices.Equal(rep["refused"], []string{a.ID()}) {
		t.Fatalf("the dead Service's late assignment: %v", rep)
	}
}

// speaker speaks the matchmaking protocol by hand, sealed as the
// cluster's Service id would seal it.
func speaker(t *testing.T, s *server.Server, id string) *seal.Conn {
	t.Helper()
	keys, err := seal.NewKeys(clusterSecret)
	if err != nil {
		t.Fatal(err)
	}
	c, err := seal.NewConn(natstest.Conn(t, s), keys, seal.RoleService, id, seal.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// queueID is the queue's id, the start of its tickets' ids.
func queueID(w *matchmaker.Wait) string {
	id, _, _ := strings.Cut(w.ID(), "-")
	return id
}

// TestForgottenTicketSentAgain: a Service (spoken by hand) that took a
// ticket and forgot it gets it again from its queue after Refresh, with
// its place in line.
func TestForgottenTicketSentAgain(t *testing.T) {
	s := natstest.Server(t)
	c := speaker(t, s, "forgetful")
	inst := c.Peer().Instance
	got := make(chan matchmaker.Ticket, 10)
	sub, err := c.Subscribe("tongbu.mm.submit.forgetful", func(m *seal.Msg) {
		var req struct{ Tickets []matchmaker.Ticket }
		json.Unmarshal(m.Data, &req)
		for _, tk := range req.Tickets {
			got <- tk
		}
		m.Respond(fmt.Appendf(nil, `{"instance": %d}`, inst)) // held, says it, and forgets
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			c.Publish("tongbu.mm.hb", fmt.Appendf(nil, `{"id": "forgetful", "instance": %d, "interval_ms": 50}`, inst))
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	o := fast()
	o.Refresh = 300 * time.Millisecond
	q, err := matchmaker.NewQueue(natstest.Conn(t, s), o)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	w := submit(t, q, solo("ann", 25, "duel", "", nil))
	var first time.Time
	for i := range 2 {
		select {
		case tk := <-got:
			if tk.ID != w.ID() {
				t.Fatalf("submitted %s, want %s", tk.ID, w.ID())
			}
			if i == 0 {
				first = tk.Since
			} else if !tk.Since.Equal(first) {
				t.Errorf("sent again with since %v, first %v: its place in line lost", tk.Since, first)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("submission %d did not come", i+1)
		}
	}
}

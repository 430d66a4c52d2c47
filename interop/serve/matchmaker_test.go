//go:build !js

package serve_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/matchmaker"
)

// startMatchmaker starts `tongbu matchmaker` with config file cfg as
// Service id of the cluster whose secret is secret, and waits for it to
// say it is matching.
func startMatchmaker(t *testing.T, natsURL, secret, cfg, id string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(tongbuBinary(t), append([]string{"matchmaker", "-nats", natsURL, "-config", cfg, "-id", id}, args...)...)
	cmd.Env = append(os.Environ(), "TONGBU_CLUSTER_SECRET="+secret)
	return startProc(t, cmd, "matchmaker "+id, func(line string) (string, bool) {
		return "", strings.HasPrefix(line, "tongbu matchmaker: "+id+" matching")
	})
}

// TestMatchmakerProcesses runs three `tongbu matchmaker` processes and two
// `tongbu serve` nodes in two regions on one NATS server. Players queue
// from the test; the matchmaker that holds their pool is killed (SIGKILL)
// while they wait; the others match every one of them, once, on the node
// of their region, and the room tickets let them in, but for a client of
// another build.
func TestMatchmakerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts five processes")
	}
	const secret = "a-cluster-secret-of-16-bytes-or-more"
	ns := natstest.Server(t)
	nodes := map[string]*serveProc{}
	for _, region := range []string{"eu", "us"} {
		nodes[region] = startServeWith(t, secret, region, "-nats", ns.ClientURL(), "-node", region+"-1",
			"-capacity", "50", "-heartbeat", "100ms", "-region", region, "-builds", "1.4")
	}
	cfg := filepath.Join(t.TempDir(), "mm.json")
	if err := os.WriteFile(cfg, []byte(`{"heartbeat": "100ms", "modes": [{"name": "duel", "teams": 2, "team_size": 1,
		"room": {"players": 2, "hz": 20}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	mms := map[string]*serveProc{}
	for _, id := range []string{"mm-1", "mm-2", "mm-3"} {
		mms[id] = startMatchmaker(t, ns.ClientURL(), secret, cfg, id)
	}
	q, err := matchmaker.NewQueue(natstest.Conn(t, ns), &matchmaker.Options{Misses: 5, RequestTimeout: 2 * time.Second, Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	rtt := map[string]map[string]int{"eu": {"eu": 20, "us": 110}, "us": {"eu": 110, "us": 20}}
	ticket := func(name string, mu float64, region string) *matchmaker.Wait {
		w, err := q.Submit(matchmaker.Ticket{Players: []matchmaker.Player{{ID: name, Rating: matchmaker.Rating{Mu: mu, Sigma: 2}}},
			Mode: "duel", Build: "1.4", RTT: rtt[region]})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	// Twenty players of skills far apart wait: no two can meet yet.
	var ws []*matchmaker.Wait
	var regions []string
	for i := range 20 {
		region := []string{"eu", "us"}[i%2]
		ws = append(ws, ticket(fmt.Sprint("a", i), float64(i)*1000, region))
		regions = append(regions, region)
	}
	holder := ""
	waitUntil(t, "a matchmaker to hold the tickets", func() bool {
		holder = ws[0].Service()
		return holder != ""
	})
	if err := mms[holder].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Each finds its partner among players who come after the kill.
	for i := range 20 {
		ws = append(ws, ticket(fmt.Sprint("b", i), float64(i)*1000, regions[i]))
		regions = append(regions, regions[i])
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rooms := map[string][]string{}
	var first matchmaker.Assignment
	for i, w := range ws {
		a, err := w.Await(ctx)
		if err != nil {
			t.Fatalf("ticket %d: %v", i, err)
		}
		if strings.HasPrefix(a.Match, holder+"-") {
			t.Errorf("ticket %d matched by the killed matchmaker", i)
		}
		if a.Region != regions[i] || a.URL != nodes[regions[i]].url {
			t.Errorf("ticket %d of %s placed in %s at %s", i, regions[i], a.Region, a.URL)
		}
		player := w.Ticket().Players[0].ID
		rooms[a.Room] = append(rooms[a.Room], player)
		if i == 0 {
			first = a
		}
	}
	if len(rooms) != 20 {
		t.Errorf("%d rooms for 40 players", len(rooms))
	}
	for room, ps := range rooms {
		if len(ps) != 2 || ps[0][1:] != ps[1][1:] {
			t.Errorf("room %s holds %v", room, ps)
		}
	}

	// The room ticket lets its player in with the build the node serves;
	// a client of another build is told so.
	player := ws[0].Ticket().Players[0].ID
	_, err = engine.Dial(ctx, first.URL, first.Tickets[player], &engine.ClientConfig{IncludeLoopback: true, Build: "1.3"})
	if !errors.Is(err, engine.ErrBuild) || !strings.Contains(err.Error(), `"1.3"`) || !strings.Contains(err.Error(), `"1.4"`) {
		t.Fatalf("a client of build 1.3: %v, want ErrBuild naming 1.3 and 1.4", err)
	}
	c, err := engine.Dial(ctx, first.URL, first.Tickets[player], &engine.ClientConfig{IncludeLoopback: true, Build: "1.4"})
	if err != nil {
		t.Fatalf("dial %s: %v", first.URL, err)
	}
	if c.Target() != first.Room || c.LockstepConfig().Players != 2 {
		t.Errorf("joined %s with %d players", c.Target(), c.LockstepConfig().Players)
	}
	c.Close()
}

// TestServeRunsAMatchmaker: a `tongbu serve` whose config has a
// "matchmaker" matches players beside its node and places their match on
// it.
func TestServeRunsAMatchmaker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	ns := natstest.Server(t)
	cfg := filepath.Join(t.TempDir(), "serve.json")
	if err := os.WriteFile(cfg, []byte(`{"cluster": {"region": "eu"}, "builds": ["1.4"],
		"matchmaker": {"id": "beside", "heartbeat": "100ms", "modes": [{"name": "duel", "teams": 2, "team_size": 1, "room": {"players": 2}}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "a-cluster-secret-of-16-bytes-or-more"
	node := startServeWith(t, secret, "eu", "-config", cfg, "-nats", ns.ClientURL(), "-node", "eu-1", "-heartbeat", "100ms")
	q, err := matchmaker.NewQueue(natstest.Conn(t, ns), &matchmaker.Options{Secret: []byte(secret)})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	var ws []*matchmaker.Wait
	for _, p := range []string{"ann", "bo"} {
		w, err := q.Submit(matchmaker.Ticket{Players: []matchmaker.Player{{ID: p, Rating: matchmaker.NewRating()}}, Mode: "duel", Build: "1.4", RTT: map[string]int{"eu": 30}})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for _, w := range ws {
		a, err := w.Await(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if a.URL != node.url || a.Region != "eu" || !strings.HasPrefix(a.Match, "beside-") || len(a.Tickets) != 1 {
			t.Errorf("assignment %+v", a)
		}
	}
}

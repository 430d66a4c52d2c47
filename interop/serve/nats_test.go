//go:build !js

package serve_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/matchmaker"
	"github.com/tongbu/tongbu/natsbus"
)

// natsWithSample starts a NATS server on examples/serve/nats.conf (on a
// random loopback port), with the users' passwords of pw.
func natsWithSample(t *testing.T, pw map[string]string) *server.Server {
	t.Helper()
	for role, p := range pw {
		t.Setenv("TONGBU_NATS_"+strings.ToUpper(role)+"_PASSWORD", p)
	}
	opts, err := server.ProcessConfigFile(filepath.Join("..", "..", "examples", "serve", "nats.conf"))
	if err != nil {
		t.Fatal(err)
	}
	opts.Host, opts.Port, opts.NoLog, opts.NoSigs = "127.0.0.1", -1, true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// denials collects the permission violations NATS reports to a client.
type denials struct {
	mu   sync.Mutex
	errs []string
}

func (d *denials) handler(_ *nats.Conn, _ *nats.Subscription, err error) {
	d.mu.Lock()
	d.errs = append(d.errs, err.Error())
	d.mu.Unlock()
}

func (d *denials) saw(s string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, e := range d.errs {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// TestServeNATSPermissions runs a cluster on the sample NATS config of
// examples/serve (one account, a user a role with its subjects): a node
// and a matchmaker connect as their users, a lobby as its own, and the
// cluster works (a match made, placed and joined; a world joined; a
// kick), while a client with no user is refused, a lobby cannot publish
// a node's heartbeat or a Service's, nor read the tickets queues submit,
// and a node cannot speak as a matchmaker.
func TestServeNATSPermissions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	pw := map[string]string{"node": "node-pw-0123", "matchmaker": "mm-pw-0123", "lobby": "lobby-pw-0123"}
	ns := natsWithSample(t, pw)
	url := ns.ClientURL()
	const secret = "the-permissions-test-cluster-secret"
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.json")
	if err := os.WriteFile(cfg, []byte(`{"worlds": [{"name": "field", "width": 16, "height": 16, "cap": 10}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TONGBU_NATS_PASSWORD", pw["node"])
	node := startServeWith(t, secret, "node", "-config", cfg, "-nats", url, "-nats-user", "node", "-node", "eu-1", "-heartbeat", "100ms", "-capacity", "10")
	mmCfg := filepath.Join(dir, "mm.json")
	if err := os.WriteFile(mmCfg, []byte(`{"heartbeat": "100ms", "modes": [{"name": "duel", "teams": 2, "team_size": 1, "room": {"players": 2}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TONGBU_NATS_PASSWORD", pw["matchmaker"])
	mm := startMatchmaker(t, url, secret, mmCfg, "mm-1", "-nats-user", "matchmaker")

	if nc, err := nats.Connect(url); err == nil {
		nc.Close()
		t.Fatal("a client with no user was let in")
	}
	connect := func(role string, d *denials) *nats.Conn {
		t.Helper()
		opts, err := natsbus.Auth{User: role, Password: pw[role]}.Options()
		if err != nil {
			t.Fatal(err)
		}
		nc, err := nats.Connect(url, append(opts, nats.ErrorHandler(d.handler))...)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		t.Cleanup(nc.Close)
		return nc
	}
	var lobbyDenied, nodeDenied, mmDenied denials
	lobby := connect("lobby", &lobbyDenied)
	copts := &cluster.Options{Heartbeat: 100 * time.Millisecond, Secret: []byte(secret)}
	d, err := cluster.Watch(lobby, copts)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	waitUntil(t, "the node and its world", func() bool { _, ok := d.LocateWorld("field"); return ok })

	// A match, made by the matchmaker, placed on the node, joined.
	q, err := matchmaker.NewQueue(lobby, &matchmaker.Options{Secret: []byte(secret), Misses: 10})
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
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	a, err := ws[0].Await(ctx)
	if err != nil {
		t.Fatalf("a match under the sample's permissions: %v", err)
	}
	c, err := engine.Dial(ctx, a.URL, a.Tickets["ann"], &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		t.Fatalf("joining the match: %v", err)
	}
	defer c.Close()
	// A world, its place booked by the lobby, joined.
	p, err := cluster.JoinWorld(ctx, lobby, d, cluster.JoinRequest{World: "field", Player: "cy"}, copts)
	if err != nil {
		t.Fatalf("booking a world place under the sample's permissions: %v", err)
	}
	wc, err := engine.Dial(ctx, p.URL, p.Tickets["cy"], &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		t.Fatalf("joining the world: %v", err)
	}
	defer wc.Close()
	if n, err := cluster.Kick(ctx, lobby, d, "cy", "testing", copts); err != nil || n != 1 {
		t.Fatalf("a kick under the sample's permissions: %d, %v", n, err)
	}

	// What each role may not do.
	nodeNC := connect("node", &nodeDenied)
	mmNC := connect("matchmaker", &mmDenied)
	heard := make(chan string, 16)
	for _, l := range []struct {
		nc      *nats.Conn
		subject string
	}{{nodeNC, "tongbu.cluster.ev.hb"}, {mmNC, "tongbu.mm.hb"}} {
		sub, err := l.nc.Subscribe(l.subject, func(m *nats.Msg) {
			if strings.Contains(string(m.Data), "forged") {
				heard <- m.Subject
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		l.nc.Flush()
	}
	lobby.Publish("tongbu.cluster.ev.hb", []byte("forged node heartbeat"))
	lobby.Publish("tongbu.mm.hb", []byte("forged Service heartbeat"))
	nodeNC.Publish("tongbu.mm.hb", []byte("forged Service heartbeat"))
	mmNC.Publish("tongbu.cluster.ev.hb", []byte("forged node heartbeat"))
	sniff, _ := lobby.Subscribe("tongbu.mm.submit.*", func(*nats.Msg) {})
	for _, nc := range []*nats.Conn{lobby, nodeNC, mmNC} {
		nc.Flush()
	}
	select {
	case s := <-heard:
		t.Fatalf("a forbidden publish reached %s", s)
	case <-time.After(500 * time.Millisecond):
	}
	sniff.Unsubscribe()
	for _, want := range []struct {
		d    *denials
		what string
	}{
		{&lobbyDenied, `Publish to "tongbu.cluster.ev.hb"`},
		{&lobbyDenied, `Publish to "tongbu.mm.hb"`},
		{&lobbyDenied, `Subscription to "tongbu.mm.submit.*"`},
		{&nodeDenied, `Publish to "tongbu.mm.hb"`},
		{&mmDenied, `Publish to "tongbu.cluster.ev.hb"`},
	} {
		if !want.d.saw(want.what) {
			t.Errorf("no permission violation for %s", want.what)
		}
	}
	// A lobby user that publishes what the cluster's secret did not seal
	// (a room request it may send, but forged) gets nothing, and the node
	// counts it on its /metrics.
	if _, err := lobby.Request("tongbu.cluster.create", []byte(`{"room":"forged","players":["mallory"]}`), 300*time.Millisecond); err == nil {
		t.Fatal("an unsealed room request was answered")
	}
	waitUntil(t, "the node to count the forged request", func() bool {
		resp, err := http.Get(node.url + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, `tongbu_cluster_messages_dropped_total{reason="forged"} `); ok && v != "0" {
				return true
			}
		}
		return false
	})

	// The sample gives each process every subject it uses: neither was
	// refused one.
	for _, p := range []*serveProc{node, mm} {
		if strings.Contains(p.stderr.String(), "Permissions Violation") {
			t.Errorf("%s was refused a subject under the sample config:\n%s", p.id, p.stderr.String())
		}
	}
}

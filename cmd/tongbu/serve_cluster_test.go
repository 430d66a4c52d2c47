//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func TestServeClusterConfig(t *testing.T) {
	var cfg serveConfig
	dec := json.NewDecoder(strings.NewReader(`{"cluster":{"nats":"nats://127.0.0.1:4222","node":"eu-1",
		"public_url":"https://eu-1.example","capacity":50,"heartbeat":"500ms","prefix":"game"}}`))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cf := clusterFlags(fs)
	if err := fs.Parse([]string{"-capacity", "7"}); err != nil {
		t.Fatal(err)
	}
	if err := cf.apply(&cfg.Cluster); err != nil || cfg.Cluster.Capacity != 7 || cfg.Cluster.Node != "eu-1" || cfg.Cluster.Heartbeat != "500ms" {
		t.Fatalf("%+v, %v", cfg.Cluster, err)
	}
	bad := clusterConfig{Heartbeat: "often"}
	if err := cf.apply(&bad); err == nil {
		t.Fatal("a bad heartbeat accepted")
	}
	var none clusterConfig
	if err := clusterFlags(flag.NewFlagSet("x", flag.ContinueOnError)).apply(&none); err != nil || none.Capacity != 100 || none.NATS != "" {
		t.Fatalf("defaults %+v, %v", none, err)
	}
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true, MaxRooms: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	every := &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}
	if _, err := joinCluster(context.Background(), srv, &worlds{srv: srv}, &clusterConfig{NATS: "nats://127.0.0.1:1", Capacity: 1}, []byte("0123456789abcdef"), nil, every, false, "", slog.Default()); err == nil || !strings.Contains(err.Error(), "-public-url") {
		t.Fatalf("no public URL on every interface: %v", err)
	}
	local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8443}
	for _, tt := range []struct {
		configured string
		addr       net.Addr
		secure     bool
		acme, want string
	}{
		{"https://eu-1.game.example", every, true, "", "https://eu-1.game.example"},
		{"", local, false, "", "http://127.0.0.1:8443"},
		{"", local, true, "", "https://127.0.0.1:8443"},
		{"", every, true, "eu-1.game.example", "https://eu-1.game.example:8080"},
		{"", &net.TCPAddr{IP: net.IPv6unspecified, Port: 443}, true, "eu-1.game.example", "https://eu-1.game.example"},
	} {
		if got, err := nodeURL(tt.configured, tt.addr, tt.secure, tt.acme); err != nil || got != tt.want {
			t.Errorf("nodeURL(%q, %v, %v, %q) = %q, %v; want %q", tt.configured, tt.addr, tt.secure, tt.acme, got, err, tt.want)
		}
	}
	if got := sanitizeID("game.host:8080"); got != "game_host_8080" {
		t.Fatalf("sanitizeID = %q", got)
	}

	host := roomHost(srv)
	for _, c := range []string{`{"players":`, `{"players":2,"colour":"red"}`, `{"fill":"sometimes"}`} {
		if _, err := host(cluster.RoomRequest{Room: "r", Config: json.RawMessage(c)}); err == nil {
			t.Fatalf("config %s accepted", c)
		}
	}
	tickets, err := host(cluster.RoomRequest{Room: "duel", Players: []string{"p1", "p2"}, Config: json.RawMessage(`{"players":2,"hz":30,"late":"next"}`)})
	if err != nil || len(tickets) != 2 {
		t.Fatalf("%v, %v", tickets, err)
	}
	if r, ok := srv.Room("duel"); !ok || r.Config().Hz != 30 || r.Config().Late != lockstep.LateNextFrame {
		t.Fatal("room duel not created as configured")
	}
	if tk, err := engine.ParseTicket([]byte("0123456789abcdef"), tickets["p2"], time.Now()); err != nil || tk.Target != "duel" {
		t.Fatalf("ticket %+v, %v", tk, err)
	}
	if _, err := host(cluster.RoomRequest{Room: "duel"}); err == nil {
		t.Fatal("a second room named duel")
	}
	if _, err := host(cluster.RoomRequest{Room: "two"}); err != nil {
		t.Fatal(err)
	}
	if _, err := host(cluster.RoomRequest{Room: "three"}); !errors.Is(err, cluster.ErrFull) {
		t.Fatalf("over MaxRooms: %v", err)
	}
}

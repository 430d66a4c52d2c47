//go:build !js

package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
)

func TestTicketCommand(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "a-secret-of-at-least-16-bytes")
	var out, errb bytes.Buffer
	if code := run([]string{"ticket", "-player", "p1", "-target", "room-1", "-ttl", "1m"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	tk, err := engine.ParseTicket([]byte("a-secret-of-at-least-16-bytes"), strings.TrimSpace(out.String()), time.Now())
	if err != nil || tk.Player != "p1" || tk.Target != "room-1" || tk.Role != engine.RolePlayer {
		t.Fatalf("ticket %+v, %v", tk, err)
	}
	t.Setenv("TONGBU_SECRET", "")
	if code := run([]string{"ticket", "-player", "p", "-target", "t"}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "no ticket secret") {
		t.Fatalf("no secret: exit %d, %s", code, errb.String())
	}
}

func TestServeConfig(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	var cfg serveConfig
	if err := json.Unmarshal([]byte(`{"rooms":[{"name":"duel","players":2,"hz":30,"fill":"repeat","late":"next","start":"all"},
		{"name":"turns","players":4,"strict":true,"strict_wait":"30s"}],
		"worlds":[{"name":"field","width":8,"height":8}]}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 2); err != nil {
		t.Fatal(err)
	}
	r, ok := srv.Room("duel")
	if !ok || r.Config().Players != 2 || r.Config().Hz != 30 || r.Config().Start != lockstep.StartAllPlayers {
		t.Fatalf("room duel: %v %+v", ok, r)
	}
	if r, ok := srv.Room("turns"); !ok || !r.Config().Strict || r.Config().StrictWait != 30*time.Second {
		t.Fatalf("room turns: %v %+v", ok, r)
	}
	if _, ok := srv.Room("room-2"); !ok {
		t.Fatal("room-2 missing")
	}
	if w, ok := srv.World("field"); !ok || w.Config().Width != 8 {
		t.Fatal("world field missing")
	}
	cfg.Rooms[0].Name, cfg.Rooms[0].Fill = "other", "sometimes"
	if err := createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0); err == nil || !strings.Contains(err.Error(), "fill") {
		t.Fatalf("bad fill: %v", err)
	}
	cfg.Rooms[0].Fill, cfg.Rooms[0].Start = "", "later"
	if err := createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0); err == nil || !strings.Contains(err.Error(), "start") {
		t.Fatalf("bad start: %v", err)
	}
	cfg.Rooms[0].Start, cfg.Rooms[0].StrictWait = "", "10s"
	if err := createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0); err == nil || !strings.Contains(err.Error(), "strict_wait") {
		t.Fatalf("a strict wait in a room that is not strict: %v", err)
	}
}

// TestStandingRoom: a room of tongbu serve's config that closes for being
// empty is replaced by a fresh one of the same name; one closed for other
// reasons is not.
func TestStandingRoom(t *testing.T) {
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true, RoomIdleTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(t.Context())
	go srv.Serve(t.Context())
	if err := standingRoom(srv, "duel", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		t.Fatal(err)
	}
	first, _ := srv.Room("duel")
	deadline := time.Now().Add(10 * time.Second)
	for {
		if r, ok := srv.Room("duel"); ok && r != first {
			if r.Config().Players != 2 || r.Config().Hz != 30 {
				t.Fatalf("the fresh room's config %+v", r.Config())
			}
			r.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no fresh room 10 s after the first stood empty")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, ok := srv.Room("duel"); ok {
		t.Fatal("a room closed by hand came back")
	}
}

// TestServeConfigSamples: every sample in examples/serve loads, and
// creates its rooms and worlds; serve -h shows the format and one default
// per flag.
func TestServeConfigSamples(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "serve", "*.json"))
	if err != nil || len(files) < 3 {
		t.Fatalf("samples %v: %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			cfg, err := loadServeConfig(f)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Shutdown(t.Context())
			if err := createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0); err != nil {
				t.Fatal(err)
			}
			for name := range cfg.names(0) {
				if cfg.Cluster.NATS != "" && slices.ContainsFunc(cfg.Worlds, func(w worldConfig) bool { return w.Name == name }) {
					continue // placed on the cluster once joined
				}
				_, room := srv.Room(name)
				_, world := srv.World(name)
				if !room && !world {
					t.Fatalf("%s: %q not created", f, name)
				}
			}
			cf := clusterFlags(flag.NewFlagSet("x", flag.ContinueOnError))
			if err := cf.apply(&cfg.Cluster); err != nil {
				t.Fatal(err)
			}
		})
	}
	var out, errb bytes.Buffer
	run([]string{"serve", "-h"}, &out, &errb)
	help := out.String() + errb.String()
	if !strings.Contains(help, `"rooms": [{"name"`) || strings.Contains(help, "(default -1)") {
		t.Fatalf("serve -h:\n%s", help)
	}
}

// TestTicketChecksTarget: with the serve config, a ticket for a target it
// does not name is signed with a warning, or refused with -strict.
func TestTicketChecksTarget(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "0123456789abcdef0123")
	cfg := filepath.Join("..", "..", "examples", "serve", "relay.json")
	for _, tt := range []struct {
		args []string
		code int
		warn bool
	}{
		{[]string{"-target", "duel-1"}, 0, false},
		{[]string{"-target", "nosuch"}, 0, true},
		{[]string{"-target", "nosuch", "-strict"}, 2, false},
		{[]string{"-target", "room-3", "-rooms", "3"}, 0, false},
		// -rooms alone names room-1..room-N.
		{[]string{"-config", "", "-target", "room-2", "-rooms", "2", "-strict"}, 0, false},
		{[]string{"-config", "", "-target", "room-9", "-rooms", "2", "-strict"}, 2, false},
		{[]string{"-config", "", "-target", "room-9", "-rooms", "2"}, 0, true},
	} {
		var out, errb bytes.Buffer
		code := run(append([]string{"ticket", "-player", "p", "-config", cfg}, tt.args...), &out, &errb)
		if code != tt.code || strings.Contains(errb.String(), "warning") != tt.warn || (code == 0) != (out.Len() > 0) {
			t.Fatalf("%v: exit %d, stdout %q, stderr %q", tt.args, code, out.String(), errb.String())
		}
	}
}

// TestConfigErrorsSayWhere: a config that does not decode is reported
// with the line and column of the fault.
func TestConfigErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{"{\n  \"http\": \":8080\",\n  \"udp\": 3478\n  \"rooms\": []\n}\n", "line 4, column 4"},
		{"{\n  \"rooms\": [\n    {\"name\": \"a\", \"players\": \"two\"}\n  ]\n}\n", "line 3, column 35"},
		{"{\"nosuchkey\": 1}", "unknown field"},
	} {
		path := filepath.Join(t.TempDir(), "c.json")
		os.WriteFile(path, []byte(tc.json), 0o600)
		if _, err := loadServeConfig(path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// TestSecretSaysWhere: a short secret is reported as the variable or the
// file the user set, not the Go field.
func TestSecretSaysWhere(t *testing.T) {
	t.Setenv("TONGBU_SECRET", "short")
	if _, err := readSecret(""); err == nil || !strings.Contains(err.Error(), "TONGBU_SECRET holds 5 bytes") {
		t.Errorf("a short TONGBU_SECRET: %v", err)
	}
	path := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(path, []byte("tiny\n"), 0o600)
	if _, err := readSecret(path); err == nil || !strings.Contains(err.Error(), path+" holds 4 bytes") {
		t.Errorf("a short secret file: %v", err)
	}
}

// TestServeClientNetworks: the HTTP bounds' keys of the config file.
func TestServeClientNetworks(t *testing.T) {
	for _, tc := range []struct {
		json, err string
		proxies   []string
	}{
		{`{"trusted_proxies":["127.0.0.1","10.0.0.0/8","2001:db8::1/48"],"ipv6_prefix":56}`, "", []string{"127.0.0.1/32", "10.0.0.0/8", "2001:db8::/48"}},
		{`{"trusted_proxies":["proxy.local"]}`, "neither a network", nil},
		{`{"ipv4_prefix":33}`, "want 1-32", nil},
	} {
		var cfg serveConfig
		if err := json.Unmarshal([]byte(tc.json), &cfg); err != nil {
			t.Fatal(err)
		}
		n, err := cfg.clientNetworks()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %q", tc.json, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.json, err)
		}
		var got []string
		for _, p := range n.TrustedProxies {
			got = append(got, p.String())
		}
		if strings.Join(got, " ") != strings.Join(tc.proxies, " ") || n.IPv6Prefix != 56 {
			t.Errorf("%s: proxies %v, ipv6 /%d", tc.json, got, n.IPv6Prefix)
		}
	}
}

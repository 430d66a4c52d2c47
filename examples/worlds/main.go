//go:build !js

// Command worlds is a world that spans processes: two world processes
// ("nodes") and a lobby on one NATS server. The field is one seamless map
// cut into two cells, the west simulated by one node and the east by the
// other: a player near the border sees across it, and walking over it
// hands the player to the other process without a loading screen. A
// portal in the field leads to the town, a map of lines (copies of 4
// players each, placed on whichever node has room; a new line opens when
// they are full), and the town's portal leads back. The lobby books each
// player's first place, owns the guilds that every world process reads
// over the replica (package replica: a player's guild tag is in its name), and
// runs bots that cross the border and take the portals. The browser view
// shows the world and the server the player is on.
//
// Everything on this machine, the NATS server in the launcher's process:
//
//	go run ./examples/worlds
//
// Or each process by itself, on a NATS server of your own:
//
//	export TONGBU_SECRET=some-secret-of-16-bytes-or-more
//	go run ./examples/worlds -role node -id a -cells 0 -http 127.0.0.1:8081 -nats nats://127.0.0.1:4222 -start 2026-11-27T00:00:00Z
//	go run ./examples/worlds -role node -id b -cells 1 -http 127.0.0.1:8082 -nats nats://127.0.0.1:4222 -start 2026-11-27T00:00:00Z
//	go run ./examples/worlds -role lobby -http localhost:8080 -nats nats://127.0.0.1:4222
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tongbu/tongbu/examples/worlds/game"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/wasm"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("worlds", flag.ContinueOnError)
	fs.SetOutput(stderr)
	role := fs.String("role", "all", "all: NATS, two nodes and the lobby; node: one world process; lobby: the page, tickets, guilds and bots")
	natsURL := fs.String("nats", "", "the NATS server (role all: empty starts one in this process)")
	httpAddr := fs.String("http", "", "HTTP address (lobby default localhost:8080; node default 127.0.0.1:0)")
	id := fs.String("id", "a", "node: its name in the cluster")
	cells := fs.String("cells", "", "node: the field's cells it simulates, such as 0 or 0,1 (none: town lines only)")
	udp := fs.String("udp", "127.0.0.1:0", "node: its WebRTC UDP address")
	start := fs.String("start", "", "node: the field's frame 0, RFC 3339, the same on every node (default: midnight UTC today)")
	bots := fs.Int("bots", 6, "lobby: bot players")
	assets := fs.String("assets", "", "lobby: directory for the browser client (default: the user cache directory)")
	noWeb := fs.Bool("no-web", false, "lobby: serve no page (no browser client is built)")
	verbose := fs.Bool("v", false, "log the moves and the cluster's decisions")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	fail := func(err error) int {
		fmt.Fprintln(stderr, "worlds:", err)
		return 1
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()

	switch *role {
	case "node":
		secret := []byte(os.Getenv("TONGBU_SECRET"))
		if len(secret) < 16 {
			return fail(fmt.Errorf("node: set TONGBU_SECRET to the cluster's secret, 16 bytes or more"))
		}
		t0 := game.DefaultStart(time.Now())
		if *start != "" {
			var err error
			if t0, err = time.Parse(time.RFC3339Nano, *start); err != nil {
				return fail(fmt.Errorf("-start: %v", err))
			}
		}
		var cs []int
		for s := range strings.SplitSeq(*cells, ",") {
			if s = strings.TrimSpace(s); s != "" {
				i, err := strconv.Atoi(s)
				if err != nil {
					return fail(fmt.Errorf("-cells: %v", err))
				}
				cs = append(cs, i)
			}
		}
		n, err := startNode(nodeConfig{ID: *id, NATS: firstOf(*natsURL, "nats://127.0.0.1:4222"), HTTP: firstOf(*httpAddr, "127.0.0.1:0"),
			UDP: *udp, Cells: cs, Start: t0, Secret: secret, Origins: []string{"*"}, Players: 1000, Log: log})
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(stdout, "worlds: node %s at %s, cells %v\n", *id, n.url, cs)
		<-ctx.Done()
		n.drain() // its worlds go on on the other nodes
		n.Close()
		return 0
	case "lobby":
		secret := []byte(os.Getenv("TONGBU_SECRET"))
		if len(secret) < 16 {
			return fail(fmt.Errorf("lobby: set TONGBU_SECRET to the cluster's secret, 16 bytes or more"))
		}
		l, err := lobbyProcess(ctx, lobbyConfig{NATS: firstOf(*natsURL, "nats://127.0.0.1:4222"), HTTP: firstOf(*httpAddr, "localhost:8080"),
			Bots: *bots, Secret: secret, Log: log}, *assets, *noWeb, stdout)
		if err != nil {
			return fail(err)
		}
		<-ctx.Done()
		l.Close()
		return 0
	case "all":
	default:
		return fail(fmt.Errorf("-role %q: want all, node or lobby", *role))
	}

	// Everything: NATS here, the two nodes as child processes, the lobby here.
	url := *natsURL
	if url == "" {
		ns, err := natstest.Start()
		if err != nil {
			return fail(err)
		}
		defer ns.Shutdown()
		url = ns.ClientURL()
	}
	secret := make([]byte, 32)
	rand.Read(secret)
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	t0 := time.Now().UTC().Format(time.RFC3339Nano)
	var children []*exec.Cmd
	for i, nodeID := range []string{"a", "b"} {
		args := []string{"-role", "node", "-id", nodeID, "-cells", strconv.Itoa(i), "-nats", url, "-start", t0}
		if *verbose {
			args = append(args, "-v")
		}
		cmd := exec.Command(self, args...)
		cmd.Env = append(os.Environ(), "TONGBU_SECRET="+hex.EncodeToString(secret))
		cmd.Stdout, cmd.Stderr = stdout, stderr
		if err := cmd.Start(); err != nil {
			return fail(err)
		}
		children = append(children, cmd)
	}
	defer func() {
		for _, c := range children {
			c.Process.Signal(syscall.SIGTERM)
			c.Wait()
		}
	}()
	l, err := lobbyProcess(ctx, lobbyConfig{NATS: url, HTTP: firstOf(*httpAddr, "localhost:8080"), Bots: *bots,
		Secret: []byte(hex.EncodeToString(secret)), Log: log}, *assets, *noWeb, stdout)
	if err != nil {
		return fail(err)
	}
	fmt.Fprintln(stdout, "worlds: NATS at", url, "(Ctrl-C stops everything)")
	<-ctx.Done()
	l.Close()
	return 0
}

// lobbyProcess builds the browser client (unless noWeb) and starts the
// lobby.
func lobbyProcess(ctx context.Context, cfg lobbyConfig, assets string, noWeb bool, stdout io.Writer) (*lobby, error) {
	if !noWeb {
		if assets == "" {
			dir, err := os.UserCacheDir()
			if err != nil {
				dir = os.TempDir()
			}
			assets = filepath.Join(dir, "tongbu", "worlds")
		}
		fmt.Fprintf(stdout, "worlds: building the browser client into %s (the first build compiles Ebiten: a minute or more)\n", assets)
		if err := wasm.Build(ctx, assets, "worlds.wasm", "github.com/tongbu/tongbu/examples/worlds/web"); err != nil {
			return nil, err
		}
		cfg.Assets = assets
	}
	l, err := startLobby(cfg)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stdout, "worlds: lobby with %d bots; open %s/ in a browser\n", cfg.Bots, l.url)
	return l, nil
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

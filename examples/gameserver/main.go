//go:build !js

// Command gameserver is the tutorial's game server (docs/tutorial.md):
// what a game adds around tongbu to make a game of it. Players sign up and
// log in (accounts with hashed passwords, in a JSON file), ask for a match
// with the round trip their client measured, and the matchmaker pairs them
// by rating; each match is a duel in a world of its own, where a skill's
// hit is judged against what the caster saw (lag compensation), and the
// winner's and loser's new ratings are stored when it ends.
//
//	go run ./examples/gameserver            # the server: http://127.0.0.1:8080, UDP 3478
//	go run ./examples/gameserver -bots 4    # with bots who sign up, queue and duel
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/transport"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.HTTP, "http", "127.0.0.1:8080", "the lobby's and the signaling's HTTP address")
	flag.StringVar(&cfg.UDP, "udp", "127.0.0.1:3478", "the game's UDP address (\":3478\" on a host players reach)")
	flag.StringVar(&cfg.Accounts, "accounts", filepath.Join(os.TempDir(), "tongbu-gameserver-accounts.json"), "the accounts file")
	flag.IntVar(&cfg.Bots, "bots", 0, "bot players who sign up and duel, in pairs, until stopped")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, cfg, log, os.Stdout); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("gameserver", "err", err)
		os.Exit(1)
	}
}

// config is the game server's.
type config struct {
	HTTP, UDP string
	Accounts  string
	Bots      int
	rounds    int // PBKDF2's (0: the default; tests take fewer)
}

// gameServer is the running server: the engine for the matches, the
// lobby in front of it.
type gameServer struct {
	srv   *engine.Server
	lobby *lobby
	url   string
}

// run serves until ctx ends, with cfg.Bots bots playing.
func run(ctx context.Context, cfg config, log *slog.Logger, out io.Writer) error {
	g, err := start(ctx, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "lobby and game server at", g.url)
	var wg sync.WaitGroup
	for i := range cfg.Bots {
		wg.Go(func() { botLoop(ctx, g.url, fmt.Sprintf("bot-%d", i+1), out) })
	}
	<-ctx.Done()
	wg.Wait()
	return ctx.Err()
}

// TUTORIAL:start
// start opens the accounts, the engine and the lobby, and serves them on
// one HTTP address until ctx ends.
func start(ctx context.Context, cfg config, log *slog.Logger) (*gameServer, error) {
	acc, err := openAccounts(cfg.Accounts, cfg.rounds)
	if err != nil {
		return nil, err
	}
	m, err := newMatcher()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return nil, err
	}
	secret := make([]byte, 32) // signs the match tickets; a cluster's nodes share it
	rand.Read(secret)
	srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: cfg.UDP, Logger: log})
	if err != nil {
		ln.Close()
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	l := &lobby{srv: srv, accounts: acc, url: url, log: log, m: m, waiting: map[string]chan assignment{}}
	mux := http.NewServeMux()
	mux.Handle("/", srv.Handler())                             // signaling, the ping, /healthz, /metrics
	mux.Handle("/api/", http.StripPrefix("/api", l.handler())) // the lobby
	hs := engine.HTTPServer("", mux)
	go hs.Serve(transport.NewListener(ln, transport.ListenerConfig{}))
	go srv.Serve(ctx)
	go l.run(ctx)
	go func() {
		<-ctx.Done()
		hs.Close()
	}()
	return &gameServer{srv: srv, lobby: l, url: url}, nil
}

// TUTORIAL:end

// botLoop plays duels as name until ctx ends, printing each result.
func botLoop(ctx context.Context, url, name string, out io.Writer) {
	p := &player{lobby: url + "/api", node: url, name: name, http: &http.Client{}}
	say := func(format string, args ...any) {
		if ctx.Err() == nil { // not the errors of stopping
			fmt.Fprintf(out, format, args...)
		}
	}
	for ctx.Err() == nil {
		if err := p.signIn(ctx, name+"-password"); err != nil {
			say("%s: %v\n", name, err)
			sleep(ctx, 5*time.Second)
			continue
		}
		for ctx.Err() == nil {
			a, err := p.findMatch(ctx)
			if err != nil {
				say("%s: no match: %v\n", name, err)
				sleep(ctx, time.Second)
				continue
			}
			st, err := p.fight(ctx, a)
			if err != nil {
				say("%s: %v\n", name, err)
				continue
			}
			pr, err := p.me(ctx)
			if err != nil {
				say("%s: %v\n", name, err)
				break // log in again
			}
			say("%s vs %v: %d casts, life %d; now %d-%d, rating %.1f (sigma %.2f)\n",
				name, a.Opponents, st.Casts, st.Life, pr.Wins, pr.Losses, pr.Rating.Mu, pr.Rating.Sigma)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

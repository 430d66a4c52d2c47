//go:build !js

package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// serveCommand runs tongbu as a stand-alone relay: the rooms and worlds of
// a config file, tickets signed with the secret in $TONGBU_SECRET or a
// file, until SIGINT or SIGTERM.
func serveCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "JSON file with rooms, worlds and addresses (the format is below)")
	httpAddr := fs.String("http", "", "HTTP address (signaling, health, metrics); default :8080")
	udp := fs.String("udp", "3478", "UDP port, or host:port, for every WebRTC peer (0: any free port)")
	tcp := fs.String("tcp", "", "TCP port, or host:port, of WebRTC over TCP for players whose network blocks UDP (443 gets through most firewalls; empty: none)")
	stack := fs.String("stack", "", "WebRTC implementation: lean (one socket, no goroutine per peer; the default) or pion")
	publicIP := fs.String("public-ip", "", "comma-separated addresses to advertise (behind a 1:1 NAT)")
	secretFile := fs.String("secret-file", "", "file holding the ticket secret (default $TONGBU_SECRET)")
	rooms := fs.Int("rooms", 0, "also create this many lockstep rooms room-1..room-N with default settings (10 players, 15 Hz)")
	loopback := fs.Bool("loopback", false, "offer loopback candidates too (local tests and demos)")
	huge := fs.Bool("hugepages", true, "ask Linux for transparent huge pages for the heap (Linux; where the system's mode is madvise, a large world ticks about a tenth faster)")
	metricsAddr := fs.String("metrics-addr", "", "serve /metrics on this address (a private one) instead of -http's; the token, if any, in $TONGBU_METRICS_TOKEN")
	peerMetrics := fs.Bool("peer-metrics", false, "add per-player gauges, labelled with room names, to /metrics")
	builds := fs.String("builds", "", "comma-separated game builds served (1.4.2,1.5.0); a client of another is refused (default: any)")
	origins := fs.String("origins", "", "comma-separated browser origins allowed besides the server's own (https://game.example; *: any)")
	tf := newTLSFlags(fs)
	roomIdle := fs.Duration("room-idle", 10*time.Minute, "start a fresh match in a room empty this long, freeing the old one's memory (0: never)")
	drainFor := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM (or POST /drain on -metrics-addr), hand every room to its standby node and wait for the matches without one to end, this long at most, before exiting (0: exit at once)")
	cf := clusterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: tongbu serve [flags]\n\nServes lockstep rooms and interest worlds, tickets signed with $TONGBU_SECRET.\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), serveConfigFormat)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 { // flags after it would be ignored without a word
		fmt.Fprintf(stderr, "tongbu serve: unexpected argument %q (every setting is a flag: tongbu serve -h)\n", fs.Arg(0))
		return 2
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var cfg serveConfig
	if *cfgPath != "" {
		var err error
		cfg, err = loadServeConfig(*cfgPath)
		if err != nil {
			fmt.Fprintf(stderr, "tongbu serve: config %s: %v\n", *cfgPath, err)
			return 2
		}
	}
	cfg.HTTP = firstNonEmpty(*httpAddr, cfg.HTTP, ":8080")
	if set["udp"] {
		cfg.UDP = portSpec(*udp)
	} else if cfg.UDP == "" {
		cfg.UDP = "3478"
	}
	udpAddr := string(cfg.UDP)
	if !strings.Contains(udpAddr, ":") {
		udpAddr = ":" + udpAddr
	}
	if set["tcp"] {
		cfg.TCP = portSpec(*tcp)
	}
	tcpAddr := string(cfg.TCP)
	if tcpAddr != "" && !strings.Contains(tcpAddr, ":") {
		tcpAddr = ":" + tcpAddr
	}
	cfg.Stack = firstNonEmpty(*stack, cfg.Stack, "lean")
	st, err := transport.ParseStack(cfg.Stack)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	if *builds != "" {
		cfg.Builds = strings.Split(*builds, ",")
	}
	if *publicIP != "" {
		cfg.PublicIPs = strings.Split(*publicIP, ",")
	}
	if *origins != "" {
		cfg.Origins = strings.Split(*origins, ",")
	}
	cfg.Loopback = cfg.Loopback || *loopback
	if err := tf.apply(&cfg.TLS, &cfg.ACME); err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	if err := cf.apply(&cfg.Cluster); err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	secret, err := readSecret(*secretFile)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	nets, err := cfg.clientNetworks()
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	tlsCfg, acmeHTTP, err := serverTLS(cfg.TLS, cfg.ACME, log)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	srv, err := engine.NewServer(engine.Config{
		ClientNetworks: nets,
		Secret:         secret, UDPAddr: udpAddr, TCPAddr: tcpAddr, Sockets: cfg.Sockets, PublicIPs: cfg.PublicIPs, Stack: st,
		AllowedOrigins: cfg.Origins, MaxConns: cfg.MaxConns, MaxRooms: cfg.MaxRooms, Logger: log,
		IncludeLoopback: cfg.Loopback,
		MetricsToken:    os.Getenv("TONGBU_METRICS_TOKEN"), SeparateMetrics: *metricsAddr != "", PeerMetrics: *peerMetrics,
		RoomIdleTimeout: *roomIdle, Builds: cfg.Builds,
	})
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 1
	}
	// SIGTERM from here on drains: a deploy may stop a node that is still
	// joining its cluster, whose players and rooms are on their way.
	sig, stopSig := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSig()
	if *huge {
		defer keepHugePages(log)()
	}
	ws := &worlds{srv: srv, log: log, maps: map[string]*worldConfig{}}
	if err := createFromConfig(srv, ws, &cfg, *rooms); err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 2
	}
	drainReq := make(chan struct{}, 1)
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 1
	}
	handler, leave := srv.Handler(), func() { drainServer(srv, *drainFor, log) }
	if cfg.Cluster.NATS != "" {
		acmeHost := ""
		if cfg.ACME.on() {
			acmeHost = cfg.ACME.Domains[0]
		}
		cl, err := joinCluster(sig, srv, ws, &cfg.Cluster, secret, cfg.Builds, ln.Addr(), tlsCfg != nil, acmeHost, log)
		if err != nil {
			ln.Close()
			srv.Shutdown(context.Background())
			fmt.Fprintln(stderr, "tongbu serve:", err)
			return 1
		}
		startCells, err := serveCells(cl.node, cfg.Cells, log)
		if err != nil {
			cl.leave()
			ln.Close()
			srv.Shutdown(context.Background())
			fmt.Fprintln(stderr, "tongbu serve:", err)
			return 1
		}
		go func() { // the others' heartbeats first, so that names placed already are seen
			hb := cl.opts.Heartbeat
			if hb <= 0 {
				hb = time.Second
			}
			time.Sleep(2 * hb)
			startCells()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := placeFromConfig(ctx, cl, &cfg, log); err != nil {
				log.Error("cluster: the config's worlds", "err", err)
			}
		}()
		if cfg.Matchmaker != nil {
			if err := cl.serveMatchmaker(cfg.Matchmaker, log); err != nil {
				cl.leave()
				ln.Close()
				srv.Shutdown(context.Background())
				fmt.Fprintln(stderr, "tongbu serve:", err)
				return 2
			}
		}
		cl.drainTimeout = *drainFor
		handler, leave = cl.handler(handler), cl.leave
		fmt.Fprintf(stdout, "tongbu serve: cluster node %s at %s (NATS %s); status at %s\n", cl.node.Info().ID, cl.node.Info().URL, cfg.Cluster.NATS, clusterStatusPath)
	}
	// Every TCP listener the server opens is bounded per client network
	// and in all (transport.NewListener): signaling's, the metrics', the
	// ACME challenges'. The ICE-TCP port bounds its own (engine).
	lc := transport.ListenerConfig{PerNetwork: transport.DefaultConnsPerAddr, MaxConns: cfg.MaxHTTPConns, ConnRate: cfg.HTTPConnRate, Networks: nets}
	metricsAt := engine.MetricsPath
	if *metricsAddr != "" {
		mln, err := listenBounded(*metricsAddr, lc)
		if err != nil {
			ln.Close()
			leave()
			srv.Shutdown(context.Background())
			fmt.Fprintln(stderr, "tongbu serve: metrics:", err)
			return 1
		}
		mux := http.NewServeMux()
		mux.Handle(engine.MetricsPath, srv.MetricsHandler())
		mux.Handle(drainPath, drainHandler(os.Getenv("TONGBU_METRICS_TOKEN"), drainReq))
		ms := engine.HTTPServer("", mux)
		go ms.Serve(mln)
		defer ms.Close()
		metricsAt = "http://" + mln.Addr().String() + engine.MetricsPath
	}
	scheme := "http"
	if tlsCfg != nil {
		scheme = "https"
	}
	ctx, stopACME := context.WithCancel(context.Background())
	defer stopACME()
	challenges, err := serveACMEHTTP(ctx, cfg.ACME.HTTP, acmeHTTP, acmeListener(lc))
	if err != nil {
		ln.Close()
		leave()
		srv.Shutdown(context.Background())
		fmt.Fprintln(stderr, "tongbu serve:", err)
		return 1
	}
	if challenges != "" {
		fmt.Fprintf(stdout, "tongbu serve: ACME http-01 challenges at http://%s\n", challenges)
	}
	paths := fmt.Sprintf("UDP %s", srv.UDPAddr())
	if a := srv.TCPAddr(); a != nil {
		paths += fmt.Sprintf(", TCP %s", a)
	}
	fmt.Fprintf(stdout, "tongbu serve: %s://%s (%s); metrics at %s\n", scheme, ln.Addr(), paths, metricsAt)
	return runServerWith(sig, srv, handler, transport.NewListener(ln, lc), tlsCfg, stderr, leave, drainReq)
}

// acmeListener bounds the ACME http-01 listener more tightly than
// signaling's: it answers the authority's few validation requests and
// redirects a browser that came over http, so a client network may hold
// 8 connections and all of them 256.
func acmeListener(lc transport.ListenerConfig) transport.ListenerConfig {
	lc.PerNetwork, lc.MaxConns = 8, 256
	return lc
}

// listenBounded listens on addr behind transport.NewListener's bounds.
func listenBounded(addr string, lc transport.ListenerConfig) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return transport.NewListener(ln, lc), nil
}

// runServerWith serves h on ln (a transport.NewListener), over TLS when
// tlsCfg is not nil, until sig is done (SIGINT or SIGTERM) or drain is
// asked; then it calls leave (if not nil) before it shuts srv down
// gracefully.
func runServerWith(sig context.Context, srv *engine.Server, h http.Handler, ln net.Listener, tlsCfg *tls.Config, stderr io.Writer, leave func(), drain <-chan struct{}) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-sig.Done():
		case <-drain:
		}
		if leave != nil {
			leave()
		}
		cancel()
	}()
	hs := engine.HTTPServer("", h)
	if tlsCfg != nil {
		hs.TLSConfig = tlsCfg
		go hs.ServeTLS(ln, "", "")
	} else {
		go hs.Serve(ln)
	}
	err := srv.Serve(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu:", err)
		return 1
	}
	return 0
}

func createFromConfig(srv *engine.Server, ws *worlds, cfg *serveConfig, extraRooms int) error {
	for _, r := range cfg.Rooms {
		lc, err := r.lockstep()
		if err != nil {
			return err
		}
		if err := standingRoom(srv, r.Name, lc); err != nil {
			return err
		}
	}
	for i := 1; i <= extraRooms; i++ {
		if err := standingRoom(srv, fmt.Sprintf("room-%d", i), lockstep.Config{}); err != nil {
			return err
		}
	}
	inCluster := cfg.Cluster.NATS != ""
	if cfg.Matchmaker != nil {
		if !inCluster {
			return fmt.Errorf("matchmaker: places matches on a cluster: set cluster.nats")
		}
		if _, _, err := cfg.Matchmaker.config(nil); err != nil {
			return err
		}
	}
	for i := range cfg.Maps {
		m := &cfg.Maps[i]
		if m.Map == "" || m.Name != "" {
			return fmt.Errorf("maps: each names its map (\"map\"), not a world")
		}
		if m.Cap == 0 {
			m.Cap = defaultLineCap
		}
		if err := m.check(inCluster); err != nil {
			return err
		}
		ws.maps[m.Map] = m
	}
	for i := range cfg.Cells {
		if _, err := cfg.Cells[i].cellMap(inCluster); err != nil {
			return err
		}
	}
	for i := range cfg.Worlds {
		w := &cfg.Worlds[i]
		if w.Map != "" || w.Lines != 0 {
			return fmt.Errorf("world %q: map and lines belong in \"maps\"", w.Name)
		}
		if err := w.check(inCluster); err != nil {
			return err
		}
		if inCluster {
			continue // placed on the cluster once joined
		}
		if _, err := srv.CreateWorld(w.Name, ws.engineConfig(w)); err != nil {
			return err
		}
	}
	return nil
}

// standingRoom creates a room that is always there to join: when it
// closes for being empty (engine.Config.RoomIdleTimeout), which frees its
// match's memory, a fresh one of the same name takes its place.
func standingRoom(srv *engine.Server, name string, cfg lockstep.Config) error {
	r, err := srv.CreateRoom(name, cfg)
	if err != nil {
		return err
	}
	r.OnClose(func(idle bool) {
		if idle {
			standingRoom(srv, name, cfg) // fails only when the server is closing
		}
	})
	return nil
}

// readSecret reads the ticket secret from path, or $TONGBU_SECRET.
func readSecret(path string) ([]byte, error) {
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		s := strings.TrimSpace(string(b))
		if len(s) < minSecret {
			return nil, fmt.Errorf("%s holds %d bytes: a ticket secret needs at least %d", path, len(s), minSecret)
		}
		return []byte(s), nil
	}
	if s := os.Getenv("TONGBU_SECRET"); s != "" {
		if len(s) < minSecret {
			return nil, fmt.Errorf("TONGBU_SECRET holds %d bytes: a ticket secret needs at least %d", len(s), minSecret)
		}
		return []byte(s), nil
	}
	return nil, fmt.Errorf("no ticket secret: set TONGBU_SECRET or pass -secret-file (at least %d bytes)", minSecret)
}

// minSecret is the shortest ticket secret the engine takes
// (engine.Config.Secret).
const minSecret = 16

// ticketCommand prints a ticket, for a game server not written in Go to
// copy the format from, and for trying `tongbu serve` by hand.
func ticketCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ticket", flag.ContinueOnError)
	fs.SetOutput(stderr)
	secretFile := fs.String("secret-file", "", "file holding the ticket secret (default $TONGBU_SECRET)")
	player := fs.String("player", "", "player id")
	target := fs.String("target", "", "room or world name")
	spectator := fs.Bool("spectator", false, "a spectator's ticket")
	ttl := fs.Duration("ttl", 10*time.Minute, "validity")
	cfgPath := fs.String("config", "", "the serve config: warn when it names no such target")
	rooms := fs.Int("rooms", 0, "as serve's -rooms: room-1..room-N exist too (and, without -config, the only ones)")
	strict := fs.Bool("strict", false, "with -config or -rooms: refuse, rather than warn, a target they do not name")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tongbu ticket: unexpected argument %q (tongbu ticket -h)\n", fs.Arg(0))
		return 2
	}
	if *cfgPath != "" || *rooms > 0 {
		var cfg serveConfig
		where := fmt.Sprintf("-rooms %d", *rooms)
		if *cfgPath != "" {
			var err error
			if cfg, err = loadServeConfig(*cfgPath); err != nil {
				fmt.Fprintf(stderr, "tongbu ticket: config %s: %v\n", *cfgPath, err)
				return 2
			}
			where = *cfgPath
			if *rooms > 0 {
				where += fmt.Sprintf(" with -rooms %d", *rooms)
			}
		}
		if !cfg.names(*rooms)[*target] {
			if *strict {
				fmt.Fprintf(stderr, "tongbu ticket: %s names no room or world %q\n", where, *target)
				return 2
			}
			fmt.Fprintf(stderr, "tongbu ticket: warning: %s names no room or world %q (signed anyway)\n", where, *target)
		}
	}
	secret, err := readSecret(*secretFile)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu ticket:", err)
		return 2
	}
	role := engine.RolePlayer
	if *spectator {
		role = engine.RoleSpectator
	}
	t, err := engine.SignTicket(secret, engine.Ticket{Player: *player, Target: *target, Role: role, Expires: time.Now().Add(*ttl)})
	if err != nil {
		fmt.Fprintln(stderr, "tongbu ticket:", err)
		return 2
	}
	fmt.Fprintln(stdout, t)
	return 0
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

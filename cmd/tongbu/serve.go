//go:build !js

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// serveConfig is the file `tongbu serve -config` reads (JSON). Flags
// override its addresses.
type serveConfig struct {
	HTTP      string   `json:"http"`       // HTTP address, default ":8080"
	UDP       portSpec `json:"udp"`        // UDP port or host:port, default 3478
	TCP       portSpec `json:"tcp"`        // ICE-TCP port or host:port, default none
	Stack     string   `json:"stack"`      // "lean" (default) or "pion"
	Sockets   int      `json:"sockets"`    // UDP sockets on the port, default one a core
	PublicIPs []string `json:"public_ips"` // addresses to advertise behind a 1:1 NAT
	Origins   []string `json:"origins"`    // browser origins allowed ("*" for any)
	MaxConns  int      `json:"max_conns"`
	MaxRooms  int      `json:"max_rooms"`
	// The HTTP side's bounds (signaling, pages): see transport.ClientNetworks.
	TrustedProxies []string      `json:"trusted_proxies"` // networks of reverse proxies in front (their X-Forwarded-For is taken)
	IPv4Prefix     int           `json:"ipv4_prefix"`     // bits of an IPv4 address that name one client (default 32)
	IPv6Prefix     int           `json:"ipv6_prefix"`     // bits of an IPv6 address that name one client (default 64)
	MaxHTTPConns   int           `json:"max_http_conns"`  // HTTP connections open at once (default 2048)
	HTTPConnRate   int           `json:"http_conn_rate"`  // new HTTP connections a client network may open a second (default 8, after twice as many)
	BoundLoopback  bool          `json:"bound_loopback"`  // count loopback clients like any other (players through a local tunnel); default: unbounded
	Loopback       bool          `json:"loopback"`        // offer loopback candidates (local tests and demos)
	TLS            tlsConfig     `json:"tls"`             // serve HTTPS with a certificate from files (tls.go)
	ACME           acmeConfig    `json:"acme"`            // or with certificates from an ACME authority
	Rooms          []roomConfig  `json:"rooms"`
	Worlds         []worldConfig `json:"worlds"` // serve_worlds.go
	// Maps are maps whose lines (copies, each capped) the cluster places
	// on its nodes: "cluster" only.
	Maps []worldConfig `json:"maps"`
	// Cells are maps cut into cells, each simulated by a node
	// (serve_cells.go).
	Cells []cellsConfig `json:"cells"`
	// Cluster joins several serve processes through NATS (serve_cluster.go).
	Cluster clusterConfig `json:"cluster"`
	// Builds are the game builds this server serves (engine.Config.Builds);
	// empty: any.
	Builds []string `json:"builds"`
	// Matchmaker runs a matchmaking Service beside the node (cluster
	// only; matchmaker.go).
	Matchmaker *matchmakerConfig `json:"matchmaker"`
}

// serveConfigFormat is the config file's format, as serve -h shows it.
// examples/serve holds complete files.
const serveConfigFormat = `
The -config file (JSON; unknown keys are refused; samples in examples/serve):

  {
    "http": ":8080",                   HTTP address: signaling, /healthz, /metrics
    "udp": 3478,                       UDP port (or "host:port") of every WebRTC peer
    "tcp": 443,                        TCP port (or "host:port") for players whose network blocks UDP (default: none)
    "stack": "lean",                   WebRTC implementation: lean (default) or pion
    "sockets": 8,                      UDP sockets on the port, each with its own reader and writer (default: one a core; Linux)
    "public_ips": ["203.0.113.10"],    addresses to advertise behind a 1:1 NAT
    "origins": ["https://game.example"],  other browser origins allowed ("*": any; pages this server serves need none)
    "max_conns": 10000, "max_rooms": 10000,
    "trusted_proxies": ["127.0.0.1/32"],  reverse proxies in front: each player is bounded by the address they name
    "ipv4_prefix": 32, "ipv6_prefix": 64, bits of an address that name one client (an IPv6 host has a /64)
    "max_http_conns": 2048,            HTTP connections open at once (the longest idle makes room)
    "http_conn_rate": 8,               new HTTP connections a client network may open a second
    "bound_loopback": false,           bound loopback clients like any other (default: unbounded, for local bots)
    "loopback": false,                 offer loopback candidates (local tests)
    "tls": {"cert": "fullchain.pem", "key": "privkey.pem"},   serve HTTPS (files reloaded when renewed)
    "acme": {"domains": ["eu-1.game.example"], "email": "ops@game.example",
             "cache": "/var/lib/tongbu/acme", "http": ":80"},  or HTTPS with Let's Encrypt certificates
    "rooms": [{"name": "duel-1", "players": 2, "hz": 30,
               "fill": "idle|repeat|absent", "late": "drop|next",
               "start": "first|all|created"}],  frame 0 when the first player arrives (default),
                                       when all have, or when the room is made
    "worlds": [{"name": "field", "region_size": 1024, "width": 64, "height": 64, "hz": 16,
                "cap": 0,              players at most (0: no cap)
                "npcs": 0,             NPCs wandering the world (spawned once: they move with it)
                "portals": [{"x": 0, "y": 0, "w": 2048, "h": 2048, "to": "cave", "at": [4096, 4096]}]}],
                                       a player who walks into the rectangle goes to world "to"
                                       (or to a line of map "map"), arriving at "at"
    "maps": [{"map": "town", "lines": 2, "cap": 500, "width": 32, "height": 32}],
                                       cluster only: lines town~1, town~2 at start, each of 500
                                       players; a new one opens when all are full
    "cells": [{"map": "wild", "cols": 2, "rows": 1, "width": 64, "height": 64, "hz": 16,
               "start": "2026-01-01T00:00:00Z", "cap": 1000, "serve": [0]}],
                                       cluster only: map wild cut into worlds wild#0 and wild#1,
                                       this node simulating wild#0 (another node's config
                                       serves [1]); players walk across with no loading
    "builds": ["1.4.2", "1.4.3"],      the game builds served: a client of another is refused (default: any)
    "cluster": {"nats": "tls://nats.internal:4222", "node": "eu-1",
                "nats_creds": "/etc/tongbu/node.creds",  or "nats_nkey": seed file, or "nats_user" with
                                       $TONGBU_NATS_PASSWORD; "nats_ca", "nats_cert", "nats_key": TLS
                "secret_file": "/etc/tongbu/cluster.key",  seals every cluster message (default
                                       $TONGBU_CLUSTER_SECRET, else the ticket secret)
                "public_url": "https://eu-1.game.example", "capacity": 100,
                "players": 5000,       world players the cluster may place here
                "region": "eu-west",   where the node runs: matches are placed near their players
                "no_standby": false,   true: rooms here get no standby node (they end with this one)
                "checkpoint_every": "2s", "checkpoint_replicas": 1,  worlds' checkpoints in JetStream
                "heartbeat": "1s", "prefix": "tongbu.cluster"},
    "matchmaker": {"modes": [{"name": "5v5", "teams": 2, "team_size": 5,
                              "room": {"players": 10, "hz": 30}}]}
                                       cluster only: match players here too (tongbu matchmaker -h)
  }
`

// portSpec is an address of the config ("udp", "tcp"): a port (a JSON
// number or string) or a "host:port".
type portSpec string

func (u *portSpec) UnmarshalJSON(b []byte) error {
	var n int
	if err := json.Unmarshal(b, &n); err == nil {
		*u = portSpec(strconv.Itoa(n))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a port or \"host:port\", got %s", b)
	}
	*u = portSpec(s)
	return nil
}

// loadServeConfig reads a config file, refusing unknown keys.
func loadServeConfig(path string) (serveConfig, error) {
	var cfg serveConfig
	b, err := os.ReadFile(path)
	if err != nil {
		return cfg, err
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	err = dec.Decode(&cfg)
	return cfg, jsonWhere(b, err)
}

// jsonWhere adds to a JSON decoding error the line and column it
// happened at, when the error knows its offset.
func jsonWhere(b []byte, err error) error {
	var off int64 = -1
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		off = syn.Offset
	case errors.As(err, &typ):
		off = typ.Offset
	}
	if off < 0 || off > int64(len(b)) {
		return err
	}
	line := 1 + strings.Count(string(b[:off]), "\n")
	col := int(off) - strings.LastIndex(string(b[:off]), "\n")
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// names returns the rooms and worlds a config (and -rooms N) creates.
func (c *serveConfig) names(extraRooms int) map[string]bool {
	m := map[string]bool{}
	for _, r := range c.Rooms {
		m[r.Name] = true
	}
	for _, w := range c.Worlds {
		m[w.Name] = true
	}
	for i := 1; i <= extraRooms; i++ {
		m[fmt.Sprintf("room-%d", i)] = true
	}
	return m
}

// roomConfig is a lockstep room of the config file, and the configuration
// a cluster's create request carries.
type roomConfig struct {
	Name    string `json:"name"`
	Players int    `json:"players"`
	Hz      int    `json:"hz"`
	Fill    string `json:"fill"`  // idle, repeat or absent
	Late    string `json:"late"`  // drop or next
	Start   string `json:"start"` // first, all or created
	// Strict makes it wait for every player's input (lockstep.Config.Strict),
	// for at most StrictWait (a duration such as "10s").
	Strict     bool   `json:"strict"`
	StrictWait string `json:"strict_wait"`
}

// lockstep returns the room's lockstep configuration.
func (r roomConfig) lockstep() (lockstep.Config, error) {
	lc := lockstep.Config{Players: r.Players, Hz: r.Hz}
	switch r.Fill {
	case "", "idle":
	case "repeat":
		lc.Fill = lockstep.FillRepeat
	case "absent":
		lc.Fill = lockstep.FillAbsent
	default:
		return lc, fmt.Errorf("room %q: fill %q: want idle, repeat or absent", r.Name, r.Fill)
	}
	switch r.Late {
	case "", "drop":
	case "next":
		lc.Late = lockstep.LateNextFrame
	default:
		return lc, fmt.Errorf("room %q: late %q: want drop or next", r.Name, r.Late)
	}
	switch r.Start {
	case "", "first":
	case "all":
		lc.Start = lockstep.StartAllPlayers
	case "created":
		lc.Start = lockstep.StartAtOnce
	default:
		return lc, fmt.Errorf("room %q: start %q: want first, all or created", r.Name, r.Start)
	}
	lc.Strict = r.Strict
	if r.StrictWait != "" {
		d, err := time.ParseDuration(r.StrictWait)
		if err != nil || !r.Strict {
			return lc, fmt.Errorf("room %q: strict_wait %q: want a duration such as \"10s\", in a strict room", r.Name, r.StrictWait)
		}
		lc.StrictWait = d
	}
	return lc, nil
}

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
		cl, err := joinCluster(srv, ws, &cfg.Cluster, secret, cfg.Builds, ln.Addr(), tlsCfg != nil, acmeHost, log)
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

// clientNetworks is the config's transport.ClientNetworks.
func (c *serveConfig) clientNetworks() (transport.ClientNetworks, error) {
	n := transport.ClientNetworks{IPv4Prefix: c.IPv4Prefix, IPv6Prefix: c.IPv6Prefix, BoundLoopback: c.BoundLoopback}
	if c.IPv4Prefix < 0 || c.IPv4Prefix > 32 || c.IPv6Prefix < 0 || c.IPv6Prefix > 128 {
		return n, fmt.Errorf("ipv4_prefix %d, ipv6_prefix %d: want 1-32 and 1-128", c.IPv4Prefix, c.IPv6Prefix)
	}
	for _, s := range c.TrustedProxies {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			a, aerr := netip.ParseAddr(s)
			if aerr != nil {
				return n, fmt.Errorf("trusted_proxies: %q is neither a network (10.0.0.0/8) nor an address", s)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		n.TrustedProxies = append(n.TrustedProxies, p.Masked())
	}
	return n, nil
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

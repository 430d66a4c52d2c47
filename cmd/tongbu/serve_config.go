//go:build !js

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"time"

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

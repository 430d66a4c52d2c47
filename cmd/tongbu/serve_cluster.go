//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/matchmaker"
)

// clusterConfig is the "cluster" object of the serve config: several serve
// processes that share one NATS server place rooms on whichever has
// capacity (package cluster).
type clusterConfig struct {
	NATS      string `json:"nats"`       // NATS URL; empty: no cluster
	Node      string `json:"node"`       // node id, default the host name and HTTP port
	PublicURL string `json:"public_url"` // the URL clients dial, default http(s)://<HTTP address>, or the first ACME domain
	Capacity  int    `json:"capacity"`   // rooms placed here at most, default 100
	Players   int    `json:"players"`    // world players placed here at most, default 5000
	Heartbeat string `json:"heartbeat"`  // heartbeat interval (Go duration), default 1s
	Prefix    string `json:"prefix"`     // subject prefix, default tongbu.cluster
	Region    string `json:"region"`     // where the node runs, for matches placed near their players
	// NoStandby: the rooms placed here get no standby on another node
	// (they end with the node, as a match does on a single server), and
	// the node stands by for no other's.
	NoStandby bool `json:"no_standby"`
	// CheckpointEvery (Go duration, default 2s; "-1s": none) and
	// CheckpointReplicas (default 1; 3 on a NATS cluster of three): the
	// worlds' checkpoints in the NATS server's JetStream, from which a
	// crashed node's worlds come back on their heirs.
	CheckpointEvery    string `json:"checkpoint_every"`
	CheckpointReplicas int    `json:"checkpoint_replicas"`
	// How the node proves itself to NATS, and the cluster's secret
	// (natsauth.go).
	natsAuth
}

// clusterStatusPath serves the node's directory as JSON: the nodes, their
// rooms and the rooms lost.
const clusterStatusPath = "/cluster"

// defaultTicketTTL is how long the tickets of a placed room are valid when
// the request does not say.
const defaultTicketTTL = 10 * time.Minute

type clusterFlagSet struct {
	nats, node, url, heartbeat, region, checkpointEvery *string
	capacity, players, checkpointReplicas               *int
	standby                                             *bool
	auth                                                *natsAuthFlags
}

func clusterFlags(fs *flag.FlagSet) *clusterFlagSet {
	return &clusterFlagSet{
		nats:               fs.String("nats", "", "NATS URL: join the serve processes that share it (rooms placed where there is capacity)"),
		node:               fs.String("node", "", "cluster node id (default: host name and HTTP port)"),
		url:                fs.String("public-url", "", "the URL clients dial for rooms placed here (default http(s)://<-http address>, or https://<first -acme-domains name>)"),
		capacity:           fs.Int("capacity", 0, "rooms the cluster may place here (default 100)"),
		players:            fs.Int("players", 0, "world players the cluster may place here, summed over the worlds' caps (default 5000)"),
		heartbeat:          fs.String("heartbeat", "", "cluster heartbeat interval (default 1s)"),
		region:             fs.String("region", "", "the region the node runs in (matches are placed near their players)"),
		standby:            fs.Bool("standby", true, "give every room placed here a standby on another node, which goes on with its match if this process dies or drains (and stand by for the others' rooms)"),
		checkpointEvery:    fs.String("checkpoint-every", "", "how often each world placed here writes its checkpoint to the NATS server's JetStream (default 2s; -1s: never)"),
		checkpointReplicas: fs.Int("checkpoint-replicas", 0, "replicas of the checkpoint bucket (default 1; 3 on a NATS cluster of three)"),
		auth:               newNATSAuthFlags(fs),
	}
}

// apply lets the flags override the config file.
func (f *clusterFlagSet) apply(c *clusterConfig) error {
	c.NATS = firstNonEmpty(*f.nats, c.NATS)
	c.Node = firstNonEmpty(*f.node, c.Node)
	c.PublicURL = firstNonEmpty(*f.url, c.PublicURL)
	c.Heartbeat = firstNonEmpty(*f.heartbeat, c.Heartbeat)
	c.Region = firstNonEmpty(*f.region, c.Region)
	c.CheckpointEvery = firstNonEmpty(*f.checkpointEvery, c.CheckpointEvery)
	if *f.checkpointReplicas > 0 {
		c.CheckpointReplicas = *f.checkpointReplicas
	}
	f.auth.apply(&c.natsAuth)
	if !*f.standby {
		c.NoStandby = true
	}
	if *f.capacity > 0 {
		c.Capacity = *f.capacity
	}
	if c.Capacity == 0 {
		c.Capacity = 100
	}
	if *f.players > 0 {
		c.Players = *f.players
	}
	if c.Players == 0 {
		c.Players = 5000
	}
	if c.CheckpointReplicas < 0 || c.CheckpointReplicas > 5 {
		return fmt.Errorf("cluster checkpoint replicas %d: 1 to 5 (JetStream's bound)", c.CheckpointReplicas)
	}
	if c.Heartbeat != "" {
		if _, err := time.ParseDuration(c.Heartbeat); err != nil {
			return fmt.Errorf("cluster heartbeat %q: %v", c.Heartbeat, err)
		}
	}
	return nil
}

// clusterNode is this process's membership of the cluster.
type clusterNode struct {
	srv  *engine.Server
	nc   *nats.Conn
	node *cluster.Node
	opts *cluster.Options
	mm   *matchmaker.Service // nil: no matchmaker here

	drainTimeout time.Duration // -drain-timeout
}

// serveMatchmaker starts a matchmaking Service of c beside the node.
func (c *clusterNode) serveMatchmaker(mc *matchmakerConfig, log *slog.Logger) error {
	cfg, opts, err := mc.config(log)
	if err != nil {
		return err
	}
	opts.Cluster = c.opts
	if c.mm, err = matchmaker.Serve(c.nc, cfg, opts); err != nil {
		return err
	}
	mm := c.mm
	c.srv.AddMetrics(func(w io.Writer) {
		cluster.WriteSealMetrics(w, "tongbu_matchmaker", "Matchmaking", mm.Opened(), mm.Dropped())
	})
	log.Info("matchmaker: serving beside the node", "id", c.mm.ID(), "modes", len(cfg.Modes))
	return nil
}

// joinCluster connects to NATS and joins the cluster as the node serving
// on addr (over https when secure, with a certificate for acmeHost when
// not empty): rooms placed here are created on srv with tickets it signs.
// The cluster's messages are sealed with the cluster's secret (the
// ticket secret when none is given).
func joinCluster(ctx context.Context, srv *engine.Server, ws *worlds, c *clusterConfig, ticketSecret []byte, builds []string, addr net.Addr, secure bool, acmeHost string, log *slog.Logger) (*clusterNode, error) {
	info := cluster.NodeInfo{ID: c.Node, URL: c.PublicURL, Capacity: c.Capacity, Players: c.Players, Region: c.Region, Builds: builds}
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return nil, err
	}
	if info.URL, err = nodeURL(c.PublicURL, addr, secure, acmeHost); err != nil {
		return nil, err
	}
	if info.ID == "" {
		h, _ := os.Hostname()
		info.ID = sanitizeID(h + "-" + port)
	}
	secret, err := c.secret(ticketSecret)
	if err != nil {
		return nil, err
	}
	opts := &cluster.Options{Prefix: c.Prefix, Logger: log, Secret: secret}
	if c.Heartbeat != "" {
		opts.Heartbeat, _ = time.ParseDuration(c.Heartbeat)
	}
	if c.CheckpointEvery != "" {
		d, err := time.ParseDuration(c.CheckpointEvery)
		if err != nil {
			return nil, fmt.Errorf("cluster: checkpoint_every: %w", err)
		}
		opts.CheckpointEvery = d
	}
	opts.CheckpointReplicas = c.CheckpointReplicas
	nc, err := c.connect(ctx, c.NATS, "tongbu serve "+info.ID, log)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	node, err := cluster.Join(nc, info, roomHost(srv), opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	// Every room placed here gets a standby on another node, which goes
	// on with its match if this process dies or drains (SIGTERM).
	if !c.NoStandby {
		if err := node.ServeStandbys(srv, restoreHost(srv)); err != nil {
			node.Leave()
			nc.Close()
			return nil, err
		}
	}
	srv.AddMetrics(node.WriteMetrics)
	node.OnKick(srv.Kick) // cluster.Kick reaches this process's connections
	if err := node.ServeWorlds(srv, ws.make); err != nil {
		node.Leave()
		nc.Close()
		return nil, err
	}
	ws.node.Store(node)
	log.Info("cluster: joined", "node", info.ID, "url", info.URL, "capacity", info.Capacity, "players", info.Players, "region", info.Region, "builds", info.Builds)
	return &clusterNode{srv: srv, nc: nc, node: node, opts: opts}, nil
}

// roomHost creates the rooms the cluster places here: the request's config
// is a room entry of the config file (players, hz, fill, late).
func roomHost(srv *engine.Server) cluster.Host {
	return func(req cluster.RoomRequest) (map[string]string, error) {
		rc, err := decodeRoomConfig(req.Config)
		if err != nil {
			return nil, err
		}
		rc.Name = req.Room
		lc, err := rc.lockstep()
		if err != nil {
			return nil, err
		}
		if _, err := srv.CreateRoom(req.Room, lc); err != nil {
			if errors.Is(err, engine.ErrFull) {
				return nil, fmt.Errorf("%w: %v", cluster.ErrFull, err)
			}
			return nil, err
		}
		ttl := req.TicketTTL
		if ttl <= 0 {
			ttl = defaultTicketTTL
		}
		tickets := make(map[string]string, len(req.Players))
		for _, p := range req.Players {
			t, err := srv.Ticket(p, req.Room, engine.RolePlayer, ttl)
			if err != nil {
				if r, ok := srv.Room(req.Room); ok {
					r.Close()
				}
				return nil, err
			}
			tickets[p] = t
		}
		return tickets, nil
	}
}

// restoreHost continues here a room another node held (its standby was
// this node): the room's config as its request carried it.
func restoreHost(srv *engine.Server) cluster.Restore {
	return func(room string, config json.RawMessage, st engine.RoomState) (*engine.Room, error) {
		rc, err := decodeRoomConfig(config)
		if err != nil {
			return nil, err
		}
		rc.Name = room
		lc, err := rc.lockstep()
		if err != nil {
			return nil, err
		}
		return srv.RestoreRoom(room, lc, st)
	}
}

// decodeRoomConfig reads the configuration a cluster's room request
// carries (over NATS): a room entry of the config file, unknown keys
// refused; none is the defaults.
func decodeRoomConfig(b []byte) (roomConfig, error) {
	return decodeStrict[roomConfig](b, "room config")
}

// decodeStrict reads JSON from another process of the cluster into a T,
// refusing unknown keys and anything after the value; none is T's zero
// value.
func decodeStrict[T any](b []byte, what string) (T, error) {
	var v T
	if len(b) == 0 {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return v, fmt.Errorf("%s: %v", what, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var zero T
		return zero, fmt.Errorf("%s: data after the JSON value", what)
	}
	return v, nil
}

// handler serves the cluster status beside next.
func (c *clusterNode) handler(next http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(clusterStatusPath, c.node.Directory())
	mux.Handle("/", next)
	return mux
}

// leave leaves the cluster on purpose (the rooms here are about to close,
// not to be lost) and closes the NATS connection.
func (c *clusterNode) leave() {
	if c.mm != nil {
		c.mm.Close()
	}
	// A deploy: hand every room with a standby over to it while its
	// players play, then wait for the matches without one to end.
	if c.drainTimeout > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.drainTimeout)
		handed, err := c.node.Drain(ctx)
		c.srv.Drain(ctx) // the handed rooms' clients leave as they switch
		cancel()
		slog.Default().Info("cluster: drained", "rooms_handed_over", handed, "err", err)
	}
	c.node.Leave()
	c.nc.Close()
}

// sanitizeID keeps the characters a node id may have.
func sanitizeID(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) > cluster.MaxIDLen {
		b = b[len(b)-cluster.MaxIDLen:]
	}
	return string(b)
}

// nodeURL is the URL a node's players dial: the one configured, else the
// ACME name the node has a certificate for, else its HTTP address.
func nodeURL(configured string, addr net.Addr, secure bool, acmeHost string) (string, error) {
	host, port, err := net.SplitHostPort(addr.String())
	switch {
	case configured != "":
		return configured, nil
	case err != nil:
		return "", err
	case acmeHost != "" && port == "443":
		return "https://" + acmeHost, nil
	case acmeHost != "":
		return "https://" + net.JoinHostPort(acmeHost, port), nil
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return "", fmt.Errorf("cluster: -http %s listens on every interface: say which URL clients dial with -public-url", addr)
	}
	if secure {
		return "https://" + addr.String(), nil
	}
	return "http://" + addr.String(), nil
}

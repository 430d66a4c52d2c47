//go:build !js

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/matchmaker"
)

// matchmakerConfig is the "matchmaker" object of the serve config, and the
// file `tongbu matchmaker -config` reads: the game modes to match
// (package matchmaker).
type matchmakerConfig struct {
	ID        string            `json:"id"`         // the Service's id, default random
	Prefix    string            `json:"prefix"`     // subject prefix, default tongbu.mm
	Timeout   string            `json:"timeout"`    // a ticket's longest wait (Go duration), default 5m
	FirstCome bool              `json:"first_come"` // match in arrival order, blind to skill and round trips
	Heartbeat string            `json:"heartbeat"`  // default 1s
	Modes     []matchmaker.Mode `json:"modes"`      // the package's own JSON: round trips in ms
}

const matchmakerConfigFormat = `
The -config file (JSON; unknown keys are refused; the same object as the
"matchmaker" of tongbu serve's config):

  {
    "id": "mm-1",                      this matchmaker's id (default random)
    "prefix": "tongbu.mm",             subject prefix shared by the matchmakers and queues
    "timeout": "5m",                   a ticket's longest wait
    "heartbeat": "1s",
    "modes": [{"name": "5v5", "teams": 2, "team_size": 5,
               "skill": 4.2, "skill_widen": 1, "max_skill": 25,   tolerance in rating Mu, widening a second
               "uncertainty": 4.2, "uncertainty_widen": 1,                 and in Sigma
               "rtt_ms": 80, "rtt_widen_ms": 20, "max_rtt_ms": 250,
               "room": {"players": 10, "hz": 30}}]                 the rooms placed for it
  }
`

// config returns the matchmaker.Config and Options of c.
func (c *matchmakerConfig) config(log *slog.Logger) (matchmaker.Config, *matchmaker.Options, error) {
	cfg := matchmaker.Config{FirstCome: c.FirstCome}
	opts := &matchmaker.Options{ID: c.ID, Prefix: c.Prefix, Logger: log}
	var err error
	if c.Timeout != "" {
		if cfg.Timeout, err = time.ParseDuration(c.Timeout); err != nil {
			return cfg, nil, fmt.Errorf("matchmaker timeout %q: %v", c.Timeout, err)
		}
	}
	if c.Heartbeat != "" {
		if opts.Heartbeat, err = time.ParseDuration(c.Heartbeat); err != nil {
			return cfg, nil, fmt.Errorf("matchmaker heartbeat %q: %v", c.Heartbeat, err)
		}
	}
	if len(c.Modes) == 0 {
		return cfg, nil, fmt.Errorf("matchmaker: no modes")
	}
	for _, m := range c.Modes {
		if len(m.Room) > 0 { // checked now, not when the first match is placed
			var rc roomConfig
			dec := json.NewDecoder(bytes.NewReader(m.Room))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&rc); err != nil {
				return cfg, nil, fmt.Errorf("matchmaker mode %s: room: %v", m.Name, err)
			}
		}
		cfg.Modes = append(cfg.Modes, m)
	}
	if _, err := matchmaker.NewMatcher(cfg); err != nil {
		return cfg, nil, err
	}
	return cfg, opts, nil
}

// matchmakerCommand runs a matchmaking Service alone: it places matches on
// the cluster's nodes that share its NATS server.
func matchmakerCommand(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matchmaker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	natsURL := fs.String("nats", "", "NATS URL of the cluster (required)")
	config := fs.String("config", "", "the modes to match (JSON; required)")
	id := fs.String("id", "", "this matchmaker's id (default: the config's, else random)")
	clusterPrefix := fs.String("cluster-prefix", "", "the cluster's subject prefix (default tongbu.cluster)")
	af := newNATSAuthFlags(fs)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tongbu matchmaker -nats url -config file [-id id] [-nats-creds file] [-cluster-secret-file file]")
		fmt.Fprintln(stderr, "The cluster's secret (which seals every message on NATS) is -cluster-secret-file's, else $TONGBU_CLUSTER_SECRET, else $TONGBU_SECRET.")
		fs.PrintDefaults()
		fmt.Fprint(stderr, matchmakerConfigFormat)
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *natsURL == "" || *config == "" {
		fs.Usage()
		return 2
	}
	var c matchmakerConfig
	b, err := os.ReadFile(*config)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		err = jsonWhere(b, dec.Decode(&c))
	}
	if err != nil {
		fmt.Fprintln(stderr, "tongbu matchmaker:", err)
		return 2
	}
	if *id != "" {
		c.ID = *id
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	cfg, opts, err := c.config(log)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu matchmaker:", err)
		return 2
	}
	var auth natsAuth
	af.apply(&auth)
	secret, err := auth.secret([]byte(os.Getenv("TONGBU_SECRET")))
	if err != nil {
		fmt.Fprintln(stderr, "tongbu matchmaker:", err)
		return 2
	}
	opts.Secret = secret
	opts.Cluster = &cluster.Options{Prefix: *clusterPrefix, Logger: log, Secret: secret}
	sig, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	nc, err := auth.connect(sig, *natsURL, "tongbu matchmaker", log)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu matchmaker:", err)
		return 1
	}
	defer nc.Close()
	svc, err := matchmaker.Serve(nc, cfg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "tongbu matchmaker:", err)
		return 1
	}
	fmt.Fprintf(stdout, "tongbu matchmaker: %s matching %d modes (NATS %s)\n", svc.ID(), len(cfg.Modes), *natsURL)
	<-sig.Done()
	svc.Close()
	st := svc.Stats()
	fmt.Fprintf(stdout, "tongbu matchmaker: %s stopped: %d matches of %d tickets, %d expired, %d waiting handed on\n", svc.ID(), st.Matches, st.Matched, st.Expired, st.Waiting)
	return 0
}

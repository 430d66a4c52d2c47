//go:build !js

package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestServeCells serves a map of the config in two cells on a node of a
// real NATS server: a player booked into the west cell starts at its
// centre and walks east into the other cell, its client following.
func TestServeCells(t *testing.T) {
	ns := natstest.Server(t)
	var cfg serveConfig
	if err := json.Unmarshal([]byte(`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "width": 8, "height": 4,
		"region_size": 1024, "hz": 16, "serve": [0, 1]}], "cluster": {"nats": "`+ns.ClientURL()+`", "node": "n1", "capacity": 10, "players": 2000}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ws := &worlds{srv: srv, log: log, maps: map[string]*worldConfig{}}
	if err := createFromConfig(srv, ws, &cfg, 0); err != nil {
		t.Fatal(err)
	}
	cl, err := joinCluster(srv, ws, &cfg.Cluster, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, false, "", log)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.leave()
	if err := serveCells(cl.node, cfg.Cells, log); err != nil {
		t.Fatal(err)
	}
	lobby := natstest.Conn(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for dir := cl.node.Directory(); ; time.Sleep(10 * time.Millisecond) {
		_, w0 := dir.LocateWorld(cluster.CellName("wild", 0))
		_, w1 := dir.LocateWorld(cluster.CellName("wild", 1))
		if w0 && w1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the directory never listed the cells")
		}
	}
	pl, err := cluster.JoinWorld(ctx, lobby, cl.node.Directory(), cluster.JoinRequest{World: cluster.CellName("wild", 0), Player: "ann"}, cl.opts)
	if err != nil {
		t.Fatal(err)
	}
	mem := memnet.New(1)
	moved := make(chan engine.Move, 4)
	c, err := engine.Dial(ctx, pl.URL, pl.Tickets["ann"], &engine.ClientConfig{
		Connect: func(_ context.Context, _, ticket string) (transport.Conn, error) {
			a, b := mem.Pipe(memnet.LinkConfig{Latency: 5 * time.Millisecond}, memnet.LinkConfig{Latency: 5 * time.Millisecond})
			return a, srv.Attach(b, ticket)
		},
		OnMove: func(m engine.Move) { moved <- m },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	walking := false
	for len(moved) == 0 {
		now := time.Now()
		if err := c.Update(now); err != nil {
			t.Fatal(err)
		}
		is := c.Interest()
		is.Advance(now)
		if me, ok := is.Self(); ok && !me.Moving() {
			if !walking && me.Pos != (interest.Vec{X: 2048, Y: 2048}) {
				t.Fatalf("spawned at %v, want the west cell's centre (2048, 2048)", me.Pos)
			}
			is.Move(interest.Vec{X: 6000, Y: 2048}, 64)
			walking = true
		}
		if ctx.Err() != nil {
			t.Fatal("no crossing in 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := <-moved; m.From != "wild#0" || m.To != "wild#1" {
		t.Fatalf("move %+v", m)
	}
}

// TestCellsConfigChecks refuses the cells entries that cannot work.
func TestCellsConfigChecks(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [0]}]}`, "need a cluster"},
		{`{"cells": [{"map": "wild", "cols": 0, "rows": 1}]}`, "cells on a map"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [2]}]}`, "each a cell from 0 to 1"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [1, 1]}]}`, "once"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "start": "noon"}]}`, "start"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "width": -3}]}`, "wild"},
	} {
		var cfg serveConfig
		if err := json.Unmarshal([]byte(tc.json), &cfg); err != nil {
			t.Fatal(err)
		}
		inCluster := !strings.Contains(tc.want, "cluster")
		if inCluster {
			cfg.Cluster.NATS = "nats://127.0.0.1:1"
		}
		srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
		if err != nil {
			t.Fatal(err)
		}
		err = createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0)
		srv.Shutdown(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error saying %q", tc.json, err, tc.want)
		}
	}
}

//go:build !js

package serve_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/transport"
)

// TestCellsAcrossProcesses serves the two cells of a map from two
// `tongbu serve` processes, each with the config's "cells" entry and its
// own "serve": a player booked into the west cell starts at its centre,
// walks east, and its client follows it to the other process, over real
// WebRTC.
func TestCellsAcrossProcesses(t *testing.T) {
	ns := natstest.Server(t)
	dir := t.TempDir()
	var procs []*serveProc
	for i, id := range []string{"west", "east"} {
		cfg := filepath.Join(dir, id+".json")
		body := `{"cells": [{"map": "wild", "cols": 2, "rows": 1, "width": 8, "height": 4, "region_size": 1024, "hz": 16, "serve": [` + string(rune('0'+i)) + `]}]}`
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		procs = append(procs, startServeWith(t, worldsSecret, id, "-config", cfg, "-nats", ns.ClientURL(), "-node", id, "-players", "1000", "-heartbeat", "50ms"))
	}
	lobby := natstest.Conn(t, ns)
	d, err := cluster.Watch(lobby, &cluster.Options{Heartbeat: 50 * time.Millisecond, Secret: []byte(worldsSecret)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	waitUntil(t, "both cells", func() bool {
		_, w0 := d.LocateWorld("wild#0")
		_, w1 := d.LocateWorld("wild#1")
		return w0 && w1
	})
	p, err := cluster.JoinWorld(t.Context(), lobby, d, cluster.JoinRequest{World: "wild#0", Player: "ann"}, &cluster.Options{Secret: []byte(worldsSecret)})
	if err != nil {
		t.Fatal(err)
	}
	if p.URL != procs[0].url {
		t.Fatalf("booked on %s, want the west process %s", p.URL, procs[0].url)
	}
	moves := make(chan engine.Move, 4)
	cfg := &engine.ClientConfig{
		Connect: func(ctx context.Context, url, ticket string) (transport.Conn, error) {
			return transport.Dial(ctx, strings.TrimSuffix(url, "/")+engine.ConnectPath, &transport.ClientConfig{
				Header:          http.Header{"Authorization": {"Bearer " + ticket}, engine.WireHeader: {strconv.Itoa(engine.WireVersion)}},
				IncludeLoopback: true})
		},
		OnMove: func(m engine.Move) { moves <- m },
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := engine.Dial(ctx, p.URL, p.Tickets["ann"], cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	walking := false
	for len(moves) == 0 {
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
			t.Fatal("no crossing in 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if m := <-moves; m.From != "wild#0" || m.To != "wild#1" || strings.TrimSuffix(m.URL, "/") != procs[1].url {
		t.Fatalf("move %+v, want wild#0 to wild#1 on %s", m, procs[1].url)
	}
}

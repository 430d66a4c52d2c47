//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// TestPortal walks a player into a portal of one world of the config:
// it arrives in the other, where the portal says, with its life.
func TestPortal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cfg serveConfig
		if err := json.Unmarshal([]byte(`{"worlds": [
			{"name": "field", "width": 8, "height": 8, "region_size": 1024,
			 "portals": [{"x": 5000, "y": 4000, "w": 200, "h": 200, "to": "cave", "at": [300, 400]}]},
			{"name": "cave", "width": 4, "height": 4, "region_size": 1024, "cap": 10}]}`), &cfg); err != nil {
			t.Fatal(err)
		}
		srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Shutdown(context.Background())
		ws := &worlds{srv: srv, log: slog.New(slog.NewTextHandler(io.Discard, nil)), maps: map[string]*worldConfig{}}
		if err := createFromConfig(srv, ws, &cfg, 0); err != nil {
			t.Fatal(err)
		}
		net := memnet.New(1)
		moved := make(chan engine.Move, 1)
		ccfg := &engine.ClientConfig{
			Connect: func(_ context.Context, _, ticket string) (transport.Conn, error) {
				c, sc := net.Pipe(memnet.LinkConfig{Latency: 10 * time.Millisecond}, memnet.LinkConfig{Latency: 10 * time.Millisecond})
				return c, srv.Attach(sc, ticket)
			},
			OnMove: func(m engine.Move) { moved <- m },
		}
		tk, _ := srv.Ticket("ann", "field", engine.RolePlayer, time.Minute)
		c, err := engine.Dial(context.Background(), "mem://serve", tk, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for i := 0; len(moved) == 0; i++ {
			if i == 2 { // spawned at (4096, 4096): walk east into the portal
				c.Interest().Move(interest.Vec{X: 5100, Y: 4096}, 60)
			}
			if i > 1000 {
				t.Fatal("no move in 16 s")
			}
			if err := c.Update(time.Now()); err != nil {
				t.Fatal(err)
			}
			c.Interest().Advance(time.Now())
			time.Sleep(16 * time.Millisecond)
		}
		if m := <-moved; m.From != "field" || m.To != "cave" {
			t.Fatalf("move %+v", m)
		}
		for range 20 {
			c.Update(time.Now())
			time.Sleep(16 * time.Millisecond)
		}
		me, ok := c.Interest().Self()
		if !ok || me.Pos != (interest.Vec{X: 300, Y: 400}) || me.Life != 100 {
			t.Fatalf("in the cave at %+v (%v), want (300, 400) with its life", me, ok)
		}
		field, _ := srv.World("field")
		if p, _ := field.Load(); p != 0 {
			t.Fatal("still in the field")
		}
	})
}

// TestWorldConfigChecks refuses the world, map and cells entries that
// cannot work. (interop/serve's TestCellsAcrossProcesses serves a map's
// cells from two processes on a real NATS server.)
func TestWorldConfigChecks(t *testing.T) {
	for _, tc := range []struct{ json, want string }{
		{`{"maps": [{"map": "town"}]}`, "need a cluster"},
		{`{"maps": [{"name": "town"}]}`, "names its map"},
		{`{"worlds": [{"name": "w", "lines": 2}]}`, "belong in"},
		{`{"worlds": [{"name": "w", "portals": [{"x": 0, "y": 0, "w": 10, "h": 10}]}]}`, "a world (to) or a map"},
		{`{"worlds": [{"name": "w", "portals": [{"x": 0, "y": 0, "w": 10, "h": 10, "map": "m"}]}]}`, "needs a cluster"},
		{`{"worlds": [{"name": "w", "portals": [{"x": 0, "y": 0, "w": 0, "h": 10, "to": "v"}]}]}`, "portal of 0x10"},
		{`{"worlds": [{"name": "w", "width": -3}]}`, "world \"w\""},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [0]}]}`, "cells need a cluster"},
		{`{"cells": [{"map": "wild", "cols": 0, "rows": 1}], "cluster": {"nats": "nats://127.0.0.1:1"}}`, "cells on a map"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [2]}], "cluster": {"nats": "nats://127.0.0.1:1"}}`, "each a cell from 0 to 1"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "serve": [1, 1]}], "cluster": {"nats": "nats://127.0.0.1:1"}}`, "once"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "start": "noon"}], "cluster": {"nats": "nats://127.0.0.1:1"}}`, "start"},
		{`{"cells": [{"map": "wild", "cols": 2, "rows": 1, "width": -3}], "cluster": {"nats": "nats://127.0.0.1:1"}}`, "cells \"wild\""},
	} {
		var cfg serveConfig
		if err := json.Unmarshal([]byte(tc.json), &cfg); err != nil {
			t.Fatal(err)
		}
		srv, err := engine.NewServer(engine.Config{Secret: []byte("0123456789abcdef"), NoWebRTC: true})
		if err != nil {
			t.Fatal(err)
		}
		err = createFromConfig(srv, &worlds{srv: srv, maps: map[string]*worldConfig{}}, &cfg, 0)
		srv.Shutdown(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("%s: %v, want %q", tc.json, err, tc.want)
		}
	}
}

// TestServedState carries a served world's players through its
// checkpoint (a move or a crash of its node), and refuses a state that
// does not fit the world it is restored into.
func TestServedState(t *testing.T) {
	wc := &worldConfig{Name: "field", Width: 4, Height: 4, RegionSize: 1024, NPCs: 40,
		Portals: []portalConfig{{X: 3000, Y: 3000, W: 100, H: 100, To: "cave"}}}
	ws := &worlds{log: slog.New(slog.NewTextHandler(io.Discard, nil)), maps: map[string]*worldConfig{}}
	w, err := interest.NewWorld(wc.interest(), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := ws.engineConfig(wc)
	ann, err := cfg.Join(w, "ann")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tick(w, time.Now()) // the NPCs come on the first frame
	if n := w.Stats().Entities; n != 41 {
		t.Fatalf("%d entities after the first frame; want ann and 40 NPCs", n)
	}
	wolf := ann + 1
	cp := cfg.Checkpoint(w)
	again := ws.engineConfig(wc) // a new node's hooks
	if err := again.Restore(w, cp); err != nil {
		t.Fatalf("restore %s: %v", cp, err)
	}
	if got := again.Checkpoint(w); string(got) != string(cp) {
		t.Fatalf("restored %s, checkpointed %s", got, cp)
	}
	for range 40 { // they wander, and none is spawned again
		again.Tick(w, time.Now())
		w.Tick(w.NextFrame())
	}
	if n := w.Stats().Entities; n != 41 {
		t.Fatalf("%d entities after the restore; want the same 41", n)
	}
	moved := 0
	for id := wolf; id < wolf+40; id++ {
		if lg, _ := w.Logic(id); lg.Dest != lg.Pos {
			moved++
		}
	}
	if moved == 0 {
		t.Error("no NPC walks")
	}
	cp = again.Checkpoint(w)
	for _, bad := range []string{
		`null x`, `[]`, `{"players": {"ann": 1}} {}`, `{"players": {"ann": "x"}}`, `{"players": {}, "more": 1}`,
		fmt.Sprintf(`{"players": {"bob": %d}}`, ann+100),  // no such entity
		fmt.Sprintf(`{"players": {"bob": %d}}`, wolf),     // not a player
		fmt.Sprintf(`{"players": {}, "npcs": [%d]}`, ann), // not an NPC
	} {
		if err := again.Restore(w, []byte(bad)); err == nil {
			t.Errorf("restored %q", bad)
		}
	}
	if got := again.Checkpoint(w); string(got) != string(cp) {
		t.Fatalf("a refused restore changed the state: %s", got)
	}
}

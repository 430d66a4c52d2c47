//go:build !js

package main

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/worlds/game"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
)

// example is the worlds example running in this test: a real NATS server,
// two nodes and the lobby, each with its own NATS connection and (the
// nodes) its own WebRTC server, as the separate processes of `go run
// ./examples/worlds` have.
type example struct {
	a, b  *node
	lobby *lobby
}

func startExample(t *testing.T, bots int, assets string) *example {
	t.Helper()
	ns := natstest.Server(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	secret := []byte("the worlds example's test secret")
	start := time.Now()
	var e example
	for i, n := range []**node{&e.a, &e.b} {
		var err error
		*n, err = startNode(nodeConfig{ID: string(rune('a' + i)), NATS: ns.ClientURL(), HTTP: "127.0.0.1:0", UDP: "127.0.0.1:0",
			Cells: []int{i}, Start: start, Secret: secret, Origins: []string{"*"}, Players: 1000, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup((*n).Close)
	}
	var err error
	if e.lobby, err = startLobby(lobbyConfig{NATS: ns.ClientURL(), HTTP: "127.0.0.1:0", Bots: bots, Assets: assets, Secret: secret, Log: log}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.lobby.Close)
	return &e
}

// ticket asks the lobby for a player's place, as the page does.
func (e *example) ticket(t *testing.T, name string) ticketReply {
	t.Helper()
	resp, err := http.Get(e.lobby.url + "/ticket?name=" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tr ticketReply
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("ticket: %s: %s", resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(&tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

// play runs the client until cond holds, or fails after a generous wait
// (the network is real: no timing is asserted).
func play(t *testing.T, what string, c *engine.Client, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for now := time.Now(); now.Before(deadline); now = time.Now() {
		if err := c.Update(now); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		c.Interest().Advance(now)
		if cond() {
			return
		}
		time.Sleep(15 * time.Millisecond)
	}
	t.Fatalf("no %s in 30 s", what)
}

// TestWorldsExample plays the example as a player of the page would, over
// real WebRTC: the lobby books a place in the field's west cell, the name
// carries the guild tag the world process read from the lobby's replica,
// the player walks east over the border and its client follows it to the
// other process's cell, walks back, and through the portal to a town line;
// and the bots do the same by themselves.
func TestWorldsExample(t *testing.T) {
	e := startExample(t, 3, "")
	tr := e.ticket(t, "ann")
	if tr.World != cluster.CellName(game.Field, 0) || tr.URL != e.a.url {
		t.Fatalf("ann's first place: %+v, want field#0 on node a (%s)", tr, e.a.url)
	}
	moves := make(chan engine.Move, 8)
	c, err := engine.Dial(t.Context(), tr.URL, tr.Ticket, &engine.ClientConfig{OnMove: func(m engine.Move) { moves <- m }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Seed 004 at work: node a reads ann's guild from the lobby's replica
	// (when it starts with the lobby, its copy may come a little after
	// ann: her name follows).
	var name string
	play(t, "ann's guild tag", c, func() bool {
		d, _ := c.Interest().Display(c.Entity())
		name = d.Name
		return strings.HasPrefix(name, "[")
	})
	m, _ := e.lobby.members.Get(game.PlayerID("ann"))
	if g := game.Guilds[m.Guild]; name != "["+g.Tag+"] ann" {
		t.Fatalf("ann is named %q, want her guild's tag %q before her name", name, g.Tag)
	}

	// walk sends ann towards `to`, a leg at a time, until she moves to
	// another world.
	walk := func(what string, to interest.Vec) engine.Move {
		t.Helper()
		var mv engine.Move
		play(t, what, c, func() bool {
			select {
			case mv = <-moves:
				return true
			default:
			}
			if me, ok := c.Interest().Self(); ok && !me.Moving() {
				c.Interest().Move(step(me.Pos, to, 3500), 64)
			}
			return false
		})
		return mv
	}
	east := walk("move to the east cell", interest.Vec{X: 10240, Y: 4096})
	if east.To != cluster.CellName(game.Field, 1) || east.URL != e.b.url {
		t.Fatalf("walking east: %+v, want field#1 on node b (%s)", east, e.b.url)
	}
	west := walk("move back to the west cell", interest.Vec{X: 6144, Y: 4096})
	if west.To != cluster.CellName(game.Field, 0) || west.URL != e.a.url {
		t.Fatalf("walking west: %+v, want field#0 on node a", west)
	}
	town := walk("move through the portal", game.FieldPortal.Centre())
	if m, _, ok := cluster.SplitLine(town.To); !ok || m != game.Town {
		t.Fatalf("through the portal: %+v, want a town line", town)
	}
	if me, ok := c.Interest().Self(); !ok || me.Pos != game.FieldPortal.At {
		t.Fatalf("ann is at %v in %s, want the portal's arrival point %v", me.Pos, town.To, game.FieldPortal.At)
	}
	if got := c.InterestConfig().Width; got != game.TownInterest().Width {
		t.Fatalf("the town is %d regions wide to the client, want %d", got, game.TownInterest().Width)
	}

	// The bots cross and take portals by themselves.
	deadline := time.Now().Add(60 * time.Second)
	for {
		crossed := 0
		e.lobby.mu.Lock()
		for _, st := range e.lobby.bots {
			if _, moves, visited := st.snapshot(); moves > 0 && len(visited) > 1 {
				crossed++
			}
		}
		e.lobby.mu.Unlock()
		if crossed == len(e.lobby.bots) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d bots moved between worlds in 60 s", crossed, len(e.lobby.bots))
		}
		c.Update(time.Now())
		time.Sleep(100 * time.Millisecond)
	}
	for _, w := range e.lobby.dir.Worlds() {
		if strings.HasPrefix(w.World, game.Town) && w.Cap != game.TownCap {
			t.Errorf("%s has cap %d, want %d", w.World, w.Cap, game.TownCap)
		}
	}
}

//go:build !js

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	arena "github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
)

// directSender hands the room's messages straight to the clients.
type directSender struct {
	clients *[]*lockstep.Client
	now     *time.Time
}

func (d directSender) SendUnreliable(p int, msg []byte) error {
	return (*d.clients)[p].Deliver(*d.now, msg)
}
func (d directSender) SendReliable(p int, msg []byte) error {
	return (*d.clients)[p].Deliver(*d.now, msg)
}

// moversReplay plays a two-player movers match with no network and
// returns its replay.
func moversReplay(t *testing.T, frames int) []byte {
	t.Helper()
	start := time.Unix(1700000000, 0)
	cfg := lockstep.Config{Players: 2, HashEvery: 5}.WithDefaults()
	now := start
	var clients []*lockstep.Client
	room, err := lockstep.NewRoom(cfg, start, directSender{&clients, &now})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	params := []byte{7, 0, 0, 0, 0, 0, 0, 0}
	rw, err := lockstep.NewReplayWriter(&buf, lockstep.ReplayHeader{Game: movers.Name, Params: params, Config: cfg, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if err := room.Record(rw); err != nil {
		t.Fatal(err)
	}
	var sims []*movers.Game
	for i := range 2 {
		c, _ := lockstep.NewClient(cfg, i)
		clients = append(clients, c)
		g, _ := movers.New(2, params)
		sims = append(sims, g)
	}
	for n := 0; room.NextFrame() < frames; n++ {
		now = start.Add(time.Duration(n) * cfg.Period() / 2)
		for i, c := range clients {
			if n%(3+i) == 0 {
				c.Input(now, []byte{byte(n * (i + 1)), byte(20 + i)})
			}
			room.Deliver(i, c.Packet(now), now)
		}
		room.Tick(now)
		for i, c := range clients {
			for _, f := range c.Advance(now).Frames {
				sims[i].Step(f)
				if f.Number%cfg.HashEvery == 0 {
					c.ReportHash(f.Number, sims[i].Hash())
				}
			}
		}
	}
	for range 100 { // let the last checks resolve
		now = now.Add(cfg.Period())
		for i, c := range clients {
			room.Deliver(i, c.Packet(now), now)
		}
		room.Tick(now)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestReplayCommands(t *testing.T) {
	file := moversReplay(t, 600)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tbr")
	os.WriteFile(good, file, 0o644)
	cut := filepath.Join(dir, "cut.tbr")
	os.WriteFile(cut, file[:len(file)*2/3], 0o644)

	var out, errb bytes.Buffer
	if code := run([]string{"replay", "info", good}, &out, &errb); code != 0 || !strings.Contains(out.String(), `game       "movers"`) || !strings.Contains(out.String(), "hash comparisons") {
		t.Fatalf("info: %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run([]string{"replay", "verify", good}, &out, &errb); code != 0 || !strings.Contains(out.String(), "verified") {
		t.Fatalf("verify: %d\n%s\n%s", code, out.String(), errb.String())
	}
	t.Log(out.String())
	errb.Reset()
	if code := run([]string{"replay", "verify", cut}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "truncated") {
		t.Fatalf("verify of a cut file: %d %s", code, errb.String())
	}
	if code := run([]string{"replay", "frobnicate", good}, &out, &errb); code != 2 {
		t.Fatalf("bad subcommand: %d", code)
	}
}

// TestArenaSimulation: the arena game as replay verify runs it matches the
// game itself, and bad params are refused.
func TestArenaSimulation(t *testing.T) {
	if _, err := newArenaSim(2, []byte{1}); err == nil {
		t.Fatal("a 1-byte seed was accepted")
	}
	params := binary.LittleEndian.AppendUint64(nil, arena.RoomSeed("arena-1"))
	sim, err := newArenaSim(2, params)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := arena.New(2, arena.RoomSeed("arena-1"))
	in := arena.Input{MoveX: 1, Fire: true}.Append(nil)
	for n := range 100 {
		f := lockstep.Frame{Number: n, Slots: []lockstep.Slot{{Inputs: [][]byte{in}}, {MadeUp: true}}}
		sim.Step(f)
		g.Step(f)
		if sim.Hash() != g.Hash() {
			t.Fatalf("frame %d: the simulation and the game differ", n)
		}
	}
	sim.Step(lockstep.Frame{Number: 500, Slots: []lockstep.Slot{{}, {}}}) // out of sequence
	if sim.Hash() != 0 {
		t.Fatal("a frame the game refuses went unnoticed")
	}
}

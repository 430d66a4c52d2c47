package replay_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/lockstep/replay"
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
func moversReplay(t testing.TB, frames int) []byte { return moversMatch(t, frames, 2, -1) }

// moversMatch plays a movers match of players with no network and returns
// its replay; when diverge >= 0, player players-1's game diverges after
// that frame, and every client answers the room's dump requests with its
// log lines.
func moversMatch(t testing.TB, frames, players, diverge int) []byte {
	t.Helper()
	start := time.Unix(1700000000, 0)
	cfg := lockstep.Config{Players: players, HashEvery: 5, DumpOnDesync: diverge >= 0}.WithDefaults()
	now := start
	var clients []*lockstep.Client
	room, err := lockstep.NewRoom(cfg, start, directSender{&clients, &now})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	params := []byte{7, 0, 0, 0, 0, 0, 0, 0}
	rw, err := replay.NewWriter(&buf, replay.Header{Game: movers.Name, Params: params, Config: cfg, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	if err := room.Record(rw); err != nil {
		t.Fatal(err)
	}
	var sims []*movers.Game
	for i := range players {
		c, _ := lockstep.NewClient(cfg, i)
		clients = append(clients, c)
		g, _ := movers.New(players, params)
		sims = append(sims, g)
	}
	bad := players - 1
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
				if i == bad && diverge >= 0 && f.Number > diverge {
					f.Slots[0].Inputs = nil // this client's game misreads player 0
				}
				sims[i].Step(f)
				if f.Number%cfg.HashEvery == 0 {
					c.ReportHash(f.Number, sims[i].Hash())
				}
			}
			for _, n := range c.DumpRequests() {
				c.Dump(n, fmt.Appendf(nil, "client %d at frame %d: hash %x\nsecond line", i, n, sims[i].Hash()))
			}
			for _, m := range c.Outbox() {
				room.Deliver(i, m, now)
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

// games is the registry of a program that verifies the movers test game.
func games(t testing.TB) *replay.Games {
	var g replay.Games
	if err := movers.Register(&g); err != nil {
		t.Fatal(err)
	}
	return &g
}

func TestReplayCommands(t *testing.T) {
	file := moversReplay(t, 600)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tbr")
	os.WriteFile(good, file, 0o644)
	cut := filepath.Join(dir, "cut.tbr")
	os.WriteFile(cut, file[:len(file)*2/3], 0o644)

	var out, errb bytes.Buffer
	if code := replay.Command([]string{"info", good}, games(t), &out, &errb); code != 0 || !strings.Contains(out.String(), `game       "movers"`) || !strings.Contains(out.String(), "hash comparisons") {
		t.Fatalf("info: %d\n%s\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := replay.Command([]string{"verify", good}, games(t), &out, &errb); code != 0 || !strings.Contains(out.String(), "verified") {
		t.Fatalf("verify: %d\n%s\n%s", code, out.String(), errb.String())
	}
	t.Log(out.String())
	errb.Reset()
	if code := replay.Command([]string{"verify", cut}, games(t), &out, &errb); code != 1 || !strings.Contains(errb.String(), "truncated") {
		t.Fatalf("verify of a cut file: %d %s", code, errb.String())
	}
	if code := replay.Command([]string{"frobnicate", good}, games(t), &out, &errb); code != 2 {
		t.Fatalf("bad subcommand: %d", code)
	}
}

// TestReplayDumps: after a desync the room asks the diverging player and
// one that agrees for their dumps (here their log lines); the replay keeps
// them beside the frames, and `replay info` lists them.
func TestReplayDumps(t *testing.T) {
	file := filepath.Join(t.TempDir(), "desync.tbr")
	os.WriteFile(file, moversMatch(t, 300, 3, 42), 0o644)
	var out, errb bytes.Buffer
	if code := replay.Command([]string{"info", file}, games(t), &out, &errb); code != 0 {
		t.Fatalf("info: %d %s", code, errb.String())
	}
	t.Log(out.String())
	for _, want := range []string{
		`dump       player 2, frame 45 (diverged)`, `: "client 2 at frame 45: hash`,
		`(agreed with the majority)`, `checks     `,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("replay info lacks %q", want)
		}
	}
}

// TestUnknownGame: a replay of a game the program did not register is
// refused with a message that says so, names the games the program knows,
// or that it knows none, and where to verify the replay.
func TestUnknownGame(t *testing.T) {
	var buf bytes.Buffer
	rw, err := replay.NewWriter(&buf, replay.Header{Game: "no-such-game", Config: lockstep.Config{Players: 2}.WithDefaults(), Start: time.Unix(1700000000, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "x.tbr")
	os.WriteFile(file, buf.Bytes(), 0o644)
	var out, errb bytes.Buffer
	if code := replay.Command([]string{"verify", file}, games(t), &out, &errb); code != 1 || !strings.Contains(errb.String(), `no simulation for game "no-such-game"`) {
		t.Fatalf("verify of an unknown game: %d %q", code, errb.String())
	}
	for _, want := range []string{`it verifies "movers"`, "the game's own program"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("the refusal lacks %q: %s", want, errb.String())
		}
	}
	errb.Reset()
	if code := replay.Command([]string{"verify", file}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "it verifies no game") {
		t.Fatalf("verify by a program that knows no game: %d %q", code, errb.String())
	}
}

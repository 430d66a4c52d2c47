//go:build !js

package serve_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/interop/natstest"
	"github.com/tongbu/tongbu/transport"
)

// worldsSecret signs the world cluster's tickets.
const worldsSecret = "a-world-cluster-secret-of-16+"

// worldsConfig is the config every process of the world cluster runs: a
// field whose portal leads to the town, a map of lines of 2 players.
const worldsConfig = `{
  "worlds": [{"name": "field", "width": 8, "height": 8, "region_size": 1024, "cap": 1000,
              "portals": [{"x": 5000, "y": 3900, "w": 300, "h": 400, "map": "town", "at": [300, 400]}]}],
  "maps": [{"map": "town", "lines": 1, "cap": 2, "width": 4, "height": 4, "region_size": 1024}]
}`

// worldCluster starts n serve processes with room for 1000 world players
// each: the field (cap 1000) fills one, so the town's lines go to the
// others.
func worldCluster(t *testing.T, n int) (*nats.Conn, *cluster.Directory, map[string]*serveProc) {
	t.Helper()
	ns := natstest.Server(t)
	cfg := filepath.Join(t.TempDir(), "worlds.json")
	if err := os.WriteFile(cfg, []byte(worldsConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	procs := map[string]*serveProc{}
	for _, id := range []string{"a", "b", "c"}[:n] {
		p := startServeWith(t, worldsSecret, id, "-config", cfg, "-nats", ns.ClientURL(), "-node", id, "-players", "1000", "-heartbeat", "50ms")
		procs[p.url] = p
	}
	lobby := natstest.Conn(t, ns)
	dir, err := cluster.Watch(lobby, &cluster.Options{Heartbeat: 50 * time.Millisecond, Secret: []byte(worldsSecret)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	waitUntil(t, "the field and the town's first line", func() bool {
		_, f := dir.LocateWorld("field")
		_, l := dir.LocateWorld("town~1")
		return f && l
	})
	return lobby, dir, procs
}

// walker is a player's client over real WebRTC, which runs hook before
// each dial.
type walker struct {
	c     *engine.Client
	moves chan engine.Move
}

func newWalker(t *testing.T, lobby *nats.Conn, dir *cluster.Directory, player string, hook func(url string)) *walker {
	t.Helper()
	p, err := cluster.JoinWorld(t.Context(), lobby, dir, cluster.JoinRequest{World: "field", Player: player}, &cluster.Options{Secret: []byte(worldsSecret)})
	if err != nil {
		t.Fatal(err)
	}
	w := &walker{moves: make(chan engine.Move, 1)}
	cfg := &engine.ClientConfig{
		Connect: func(ctx context.Context, url, ticket string) (transport.Conn, error) {
			if hook != nil {
				hook(url)
			}
			return transport.Dial(ctx, strings.TrimSuffix(url, "/")+engine.ConnectPath, &transport.ClientConfig{
				Header:          http.Header{"Authorization": {"Bearer " + ticket}, engine.WireHeader: {strconv.Itoa(engine.WireVersion)}},
				IncludeLoopback: true})
		},
		OnMove: func(m engine.Move) { w.moves <- m },
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if w.c, err = engine.Dial(ctx, p.URL, p.Tickets[player], cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.c.Close() })
	return w
}

// walk sends the player east into the field's portal, and plays until it
// has moved or until d has passed.
func (w *walker) walk(t *testing.T, d time.Duration) (engine.Move, bool) {
	t.Helper()
	sent := false
	for end := time.Now().Add(d); time.Now().Before(end); {
		select {
		case m := <-w.moves:
			return m, true
		default:
		}
		now := time.Now()
		if err := w.c.Update(now); err != nil {
			t.Fatal(err)
		}
		if _, ok := w.c.Interest().Self(); ok && !sent && w.c.Target() == "field" {
			w.c.Interest().Move(interest.Vec{X: 5100, Y: 4096}, 60)
			sent = true
		}
		w.c.Interest().Advance(now)
		time.Sleep(10 * time.Millisecond)
	}
	return engine.Move{}, false
}

func players(dir *cluster.Directory, world string) int {
	w, ok := dir.LocateWorld(world)
	if !ok {
		return -1
	}
	return w.Players + w.Booked
}

// TestWorldsAcrossProcesses runs the field and the town's lines on
// separate `tongbu serve` processes: players walk through the portal to
// the other process, a full line opens a new one, and a process killed
// in the middle of a transfer neither loses the player nor doubles it.
func TestWorldsAcrossProcesses(t *testing.T) {
	t.Run("portal and lines", func(t *testing.T) {
		lobby, dir, procs := worldCluster(t, 3)
		field, _ := dir.LocateWorld("field")
		var walkers []*walker
		for i, name := range []string{"ann", "bob", "cy"} {
			w := newWalker(t, lobby, dir, name, nil)
			walkers = append(walkers, w)
			m, ok := w.walk(t, 20*time.Second)
			if !ok {
				t.Fatalf("%s never went through the portal", name)
			}
			wantLine := "town~1"
			if i == 2 {
				wantLine = "town~2" // the first line holds 2
			}
			if m.From != "field" || m.To != wantLine || m.URL == field.URL || procs[m.URL] == nil {
				t.Fatalf("%s: move %+v, want to %s on another process than the field's %s", name, m, wantLine, field.URL)
			}
			if me, ok := w.c.Interest().Self(); ok && me.Pos != (interest.Vec{X: 300, Y: 400}) {
				t.Fatalf("%s arrived at %v", name, me.Pos)
			}
		}
		waitUntil(t, "the directory to count them", func() bool {
			return players(dir, "field") == 0 && players(dir, "town~1") == 2 && players(dir, "town~2") == 1
		})
		// They play on in the town: frames keep coming.
		for _, w := range walkers {
			before := w.c.Interest().Frame()
			w.walk(t, time.Second)
			if w.c.Interest().Frame() <= before {
				t.Fatalf("no frames in the town after the move (frame %d)", before)
			}
		}
	})
	for _, kill := range []string{"destination", "source"} {
		t.Run("kill the "+kill, func(t *testing.T) {
			lobby, dir, procs := worldCluster(t, 2)
			field, _ := dir.LocateWorld("field")
			town, _ := dir.LocateWorld("town~1")
			victim := procs[town.URL]
			if kill == "source" {
				victim = procs[field.URL]
			}
			hook := func(url string) {
				if url == town.URL { // the client dials the town: the transfer is under way
					victim.cmd.Process.Signal(syscall.SIGKILL)
					<-victim.exited
					victim.exited <- nil // for the cleanup
				}
			}
			w := newWalker(t, lobby, dir, "ann", hook)
			wait := 20 * time.Second
			if kill == "destination" {
				wait = 8 * time.Second // the move fails as soon as the dial does
			}
			m, moved := w.walk(t, wait)
			switch kill {
			case "destination":
				if moved {
					t.Fatalf("moved to %+v, which is dead", m)
				}
				// ann is still in the field, and plays there.
				if w.c.Target() != "field" {
					t.Fatalf("client in %q", w.c.Target())
				}
				waitUntil(t, "the field to count ann", func() bool { return players(dir, "field") == 1 })
				before := w.c.Interest().Frame()
				w.walk(t, time.Second)
				if w.c.Interest().Frame() <= before {
					t.Fatal("no frames from the field after the failed move")
				}
			case "source":
				if !moved || m.To != "town~1" {
					t.Fatalf("move %+v, %v: ann should reach the town with the field's process dead", m, moved)
				}
				waitUntil(t, "the town to count ann", func() bool { return players(dir, "town~1") == 1 })
				waitUntil(t, "the field's loss", func() bool { _, ok := dir.LocateWorld("field"); return !ok })
			}
		})
	}
}

//go:build !js

package serve_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/natstest"
)

// bot is a player of one of the test's matches: a real client over
// WebRTC that sends an input with every frame it runs and keeps a
// digest of every frame.
type bot struct {
	room   string
	c      *engine.Client
	frames []string // each frame as it ran, in order
	gap    time.Duration
	last   time.Time
	err    error
}

func (b *bot) play(now time.Time) {
	if b.err != nil {
		return
	}
	if b.err = b.c.Update(now); b.err != nil {
		return
	}
	st := b.c.Lockstep().Advance(now)
	for _, f := range st.Frames {
		if f.Number != len(b.frames) {
			b.err = fmt.Errorf("ran frame %d as its %dth", f.Number, len(b.frames))
			return
		}
		b.frames = append(b.frames, fmt.Sprint(f.Slots))
		b.c.Lockstep().Input(now, []byte{byte(b.c.Slot()), byte(f.Number)})
	}
	if len(st.Frames) > 0 && !st.CatchingUp {
		if !b.last.IsZero() {
			b.gap = max(b.gap, now.Sub(b.last))
		}
		b.last = now
	}
}

// match is the bots of every room, played by one loop.
type match struct {
	mu   sync.Mutex
	bots []*bot
	stop chan struct{}
	done chan struct{}
}

func (m *match) run() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			return
		case <-time.After(5 * time.Millisecond):
		}
		m.mu.Lock()
		for _, b := range m.bots {
			b.play(time.Now())
		}
		m.mu.Unlock()
	}
}

// look runs f with the bots, the loop paused.
func (m *match) look(f func(bots []*bot)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.bots)
}

// resetStalls starts the bots' measure of their longest stall anew.
func (m *match) resetStalls() {
	m.look(func(bots []*bot) {
		for _, b := range bots {
			b.gap = 0
		}
	})
}

// playOn waits until every bot ran more frames than it had, by frames,
// and checks that the bots of each room ran the same frames, with no gap
// and none lost: it returns the longest stall since resetStalls.
func (m *match) playOn(t *testing.T, what string, frames int) time.Duration {
	t.Helper()
	var want []int
	m.look(func(bots []*bot) {
		for _, b := range bots {
			want = append(want, len(b.frames)+frames)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok := true
		m.look(func(bots []*bot) {
			for i, b := range bots {
				if b.err != nil {
					t.Fatalf("%s: a bot of %s: %v", what, b.room, b.err)
				}
				ok = ok && len(b.frames) >= want[i]
			}
		})
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the bots did not play %d frames more in 30 s", what, frames)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stall := time.Duration(0)
	m.look(func(bots []*bot) {
		byRoom := map[string]*bot{}
		for _, b := range bots {
			stall = max(stall, b.gap)
			o := byRoom[b.room]
			if o == nil {
				byRoom[b.room] = b
				continue
			}
			for n := range min(len(o.frames), len(b.frames)) {
				if o.frames[n] != b.frames[n] {
					t.Fatalf("%s: room %s frame %d: %s and %s", what, b.room, n, o.frames[n], b.frames[n])
				}
			}
		}
	})
	return stall
}

// TestStandbyProcesses runs three `tongbu serve` processes on a real
// NATS server with matches of real WebRTC clients, and takes the nodes
// away under them: (a) the node holding a match is killed (SIGKILL): the
// match goes on on its standby, with every client's frames identical
// and gapless; (b) a node is stopped for a deploy (SIGTERM): its matches
// are handed over while they play; (c) every node is restarted in turn
// with the same config, while the matches run: no match lost, no player
// dropped; (d) a node is paused past its standbys' patience (SIGSTOP,
// then SIGCONT): its matches go on on their standbys, and it does not
// cut frames of its own to the players.
func TestStandbyProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes, then more")
	}
	const secret = "a-cluster-secret-of-16-bytes-or-more"
	ns := natstest.Server(t)
	procs := map[string]*serveProc{}
	start := func(id string) {
		procs[id] = startServeWith(t, secret, id, "-nats", ns.ClientURL(), "-node", id, "-capacity", "20", "-heartbeat", "100ms", "-drain-timeout", "10s")
	}
	for _, id := range []string{"n1", "n2", "n3"} {
		start(id)
	}
	lobby := natstest.Conn(t, ns)
	opts := &cluster.Options{Heartbeat: 100 * time.Millisecond, Secret: []byte(secret)}
	dir, err := cluster.Watch(lobby, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	waitUntil(t, "three live nodes", func() bool { return len(alive(dir)) == 3 })

	ctx := t.Context()
	m := &match{stop: make(chan struct{}), done: make(chan struct{})}
	const rooms = 6
	for i := range rooms {
		name := fmt.Sprintf("duel-%d", i)
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: name, Players: []string{"ann", "bob"},
			Config: json.RawMessage(`{"players":2,"hz":20}`)}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, player := range []string{"ann", "bob"} {
			c, err := engine.Dial(ctx, p.URL, p.Tickets[player], &engine.ClientConfig{IncludeLoopback: true})
			if err != nil {
				t.Fatalf("dial %s: %v", p.URL, err)
			}
			t.Cleanup(func() { c.Close() })
			m.bots = append(m.bots, &bot{room: name, c: c})
		}
	}
	go m.run()
	defer func() { close(m.stop); <-m.done }()
	m.playOn(t, "the matches under way", 20)
	// Every room has its standby, and every client knows it.
	waitUntil(t, "every room to have a standby", func() bool {
		ok := true
		m.look(func(bots []*bot) {
			for _, b := range bots {
				ok = ok && standbyOf(b.c) != ""
			}
		})
		return ok
	})

	holder := func() string { // the node holding the most rooms
		best, most := "", 0
		for _, st := range dir.Nodes() {
			if n := len(dir.Rooms(st.ID)); st.Alive && n > most {
				best, most = st.ID, n
			}
		}
		return best
	}
	located := func(what string) {
		t.Helper()
		waitUntil(t, what+": every room on a live node", func() bool {
			for i := range rooms {
				st, ok := dir.Locate(fmt.Sprintf("duel-%d", i))
				if !ok || !st.Alive {
					return false
				}
			}
			return true
		})
	}

	// (a) A crash.
	victim := holder()
	m.resetStalls()
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	stall := m.playOn(t, "after "+victim+" was killed", 40)
	t.Logf("killed %s: the matches went on, longest stall %v", victim, stall.Round(time.Millisecond))
	if stall > 3*time.Second {
		t.Errorf("a client went %v without a frame after the crash", stall)
	}
	located("after the crash")
	<-procs[victim].exited
	procs[victim].exited <- nil
	start(victim) // back, with the same config
	waitUntil(t, victim+" back", func() bool { return len(alive(dir)) == 3 })

	// (b) A deploy's SIGTERM.
	drained := holder()
	m.resetStalls()
	if err := procs[drained].cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	stall = m.playOn(t, "after "+drained+" was drained", 40)
	t.Logf("drained %s: longest stall %v", drained, stall.Round(time.Millisecond))
	if stall > time.Second {
		t.Errorf("a client went %v without a frame through the drain", stall)
	}
	select {
	case err := <-procs[drained].exited:
		procs[drained].exited <- err
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", drained, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("%s still running 15 s after SIGTERM", drained)
	}
	located("after the drain")
	start(drained)
	waitUntil(t, drained+" back", func() bool { return len(alive(dir)) == 3 })

	// (c) A rolling restart: each node drained and started again in turn.
	for _, id := range []string{"n1", "n2", "n3"} {
		waitUntil(t, "every room to have a standby before "+id+" goes", func() bool {
			ok := true
			m.look(func(bots []*bot) {
				for _, b := range bots {
					ok = ok && standbyOf(b.c) != ""
				}
			})
			return ok
		})
		m.resetStalls()
		procs[id].cmd.Process.Signal(syscall.SIGTERM)
		if err := <-procs[id].exited; err != nil {
			t.Fatalf("%s exited with %v in the rolling restart", id, err)
		}
		procs[id].exited <- nil
		start(id)
		waitUntil(t, id+" back", func() bool { return len(alive(dir)) == 3 })
		stall = m.playOn(t, "rolling restart past "+id, 20)
		t.Logf("rolling restart: %s restarted, longest stall %v", id, stall.Round(time.Millisecond))
	}
	located("after the rolling restart")

	// (d) A node paused past its standbys' patience, then resumed.
	paused := holder()
	pausedRooms := dir.Rooms(paused)
	m.resetStalls()
	procs[paused].cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(2 * time.Second)
	procs[paused].cmd.Process.Signal(syscall.SIGCONT)
	stall = m.playOn(t, "after "+paused+" was paused", 40)
	t.Logf("paused %s for 2 s: longest stall %v", paused, stall.Round(time.Millisecond))
	if stall > 3*time.Second {
		t.Errorf("a client went %v without a frame through the pause", stall)
	}
	located("after the pause")
	// Its rooms went on on their standbys; none is left cutting on it.
	waitUntil(t, "the paused node's rooms to be elsewhere", func() bool {
		for _, r := range pausedRooms {
			if st, ok := dir.Locate(r); !ok || st.ID == paused {
				return false
			}
		}
		return true
	})
	m.look(func(bots []*bot) {
		for _, b := range bots {
			if b.err != nil {
				t.Errorf("a bot of %s: %v", b.room, b.err)
			}
		}
	})
}

// alive returns the live nodes of a directory.
func alive(d *cluster.Directory) []string {
	var ids []string
	for _, n := range d.Nodes() {
		if n.Alive {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

// standbyOf returns the standby URL a client was told.
func standbyOf(c *engine.Client) string { return c.Standby() }

//go:build !js

// Package serve_test runs `tongbu serve` processes, built from cmd/tongbu,
// as one cluster over a NATS server started in the test.
package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/natstest"
)

// clusterStatusPath is where a node serves its directory as JSON
// (cmd/tongbu's serve_cluster.go).
const clusterStatusPath = "/cluster"

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// tongbuBinary builds cmd/tongbu once per test binary and returns its path.
func tongbuBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tongbu-serve-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "tongbu")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/tongbu/tongbu/cmd/tongbu").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build cmd/tongbu: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary != "" {
		os.RemoveAll(filepath.Dir(binary))
	}
	os.Exit(code)
}

// lockedBuffer collects a child's stderr.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveProc is one `tongbu serve` process of the cluster.
type serveProc struct {
	id     string
	url    string
	first  string // the line that named url
	cmd    *exec.Cmd
	stderr *lockedBuffer
	exited chan error
}

// startServe starts `tongbu serve` as cluster node id on loopback and
// waits for it to print its address.
func startServe(t *testing.T, natsURL, secret, id string) *serveProc {
	t.Helper()
	return startServeWith(t, secret, id, "-nats", natsURL, "-node", id, "-capacity", "4", "-heartbeat", "50ms")
}

// startServeWith starts `tongbu serve` on loopback with more arguments
// and waits for it to print its address; id names it in failures.
func startServeWith(t *testing.T, secret, id string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(tongbuBinary(t), append([]string{"serve", "-http", "127.0.0.1:0", "-udp", "0", "-loopback"}, args...)...)
	cmd.Env = append(os.Environ(), "TONGBU_SECRET="+secret)
	return startProc(t, cmd, id, func(line string) (string, bool) {
		for _, scheme := range []string{"http://", "https://"} {
			if rest, ok := strings.CutPrefix(line, "tongbu serve: "+scheme); ok {
				addr, _, _ := strings.Cut(rest, " ")
				return scheme + addr, true
			}
		}
		return "", false
	})
}

// startProc starts cmd, a child named id, and waits for the first line of
// its output that ready accepts: what ready returns is the proc's url.
// The child is killed when the test ends, its stderr logged if it failed.
func startProc(t *testing.T, cmd *exec.Cmd, id string, ready func(line string) (string, bool)) *serveProc {
	t.Helper()
	p := &serveProc{id: id, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	cmd.Stderr = p.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second): // a test that failed on its exit took it
		}
		if t.Failed() {
			t.Logf("%s stderr:\n%s", id, p.stderr.String())
		}
	})
	urls := make(chan [2]string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := ready(sc.Text()); ok {
				select {
				case urls <- [2]string{u, sc.Text()}:
				default:
				}
			}
		}
		io.Copy(io.Discard, out)
		p.exited <- cmd.Wait()
	}()
	select {
	case u := <-urls:
		p.url, p.first = u[0], u[1]
	case err := <-p.exited:
		t.Fatalf("%s exited before it was ready: %v\n%s", id, err, p.stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("%s was not ready in 20 s\n%s", id, p.stderr.String())
	}
	return p
}

// status asks a node for its directory's JSON.
func status(t *testing.T, url string) cluster.Status {
	t.Helper()
	resp, err := http.Get(url + clusterStatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st cluster.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(15 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 15 s", what)
		}
	}
}

// TestClusterProcesses runs three `tongbu serve` processes on one NATS
// server, places rooms, dials one with its ticket, kills the node that
// holds the most rooms, and checks that its rooms are reported lost and
// that new rooms go to the two others.
func TestClusterProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three processes")
	}
	const secret = "a-cluster-secret-of-16-bytes-or-more"
	ns := natstest.Server(t)
	procs := map[string]*serveProc{}
	for _, id := range []string{"n1", "n2", "n3"} {
		procs[id] = startServe(t, ns.ClientURL(), secret, id)
	}

	// The test is the lobby: it places rooms and follows the cluster.
	lobby := natstest.Conn(t, ns)
	losses := make(chan cluster.Loss, 10)
	opts := &cluster.Options{Heartbeat: 50 * time.Millisecond, Misses: 10, RequestTimeout: 5 * time.Second, Secret: []byte(secret),
		OnLoss: func(l cluster.Loss) { losses <- l }}
	dir, err := cluster.Watch(lobby, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	liveIDs := func(d []cluster.NodeStatus) []string {
		var ids []string
		for _, n := range d {
			if n.Alive {
				ids = append(ids, n.ID)
			}
		}
		return ids
	}
	waitUntil(t, "three live nodes", func() bool { return slices.Equal(liveIDs(dir.Nodes()), []string{"n1", "n2", "n3"}) })
	for id, p := range procs {
		waitUntil(t, id+" to see three live nodes", func() bool {
			return slices.Equal(liveIDs(status(t, p.url).Nodes), []string{"n1", "n2", "n3"})
		})
	}

	ctx := t.Context()
	byNode := map[string][]string{}
	var first cluster.Placement
	for i := range 6 {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: fmt.Sprintf("match-%d", i),
			Players: []string{"alice", "bob"}, Config: json.RawMessage(`{"players":2,"hz":20}`)}, opts)
		if err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
		if proc := procs[p.Node]; proc == nil || p.URL != proc.url || len(p.Tickets) != 2 {
			t.Fatalf("placement %+v (nodes at %v)", p, procs)
		}
		tk, err := engine.ParseTicket([]byte(secret), p.Tickets["bob"], time.Now())
		if err != nil || tk.Target != p.Room || tk.Player != "bob" {
			t.Fatalf("ticket %+v, %v", tk, err)
		}
		byNode[p.Node] = append(byNode[p.Node], p.Room)
		if i == 0 {
			first = p
		}
	}
	// Once the nodes know where every room is, a name in use is refused
	// whichever node the request reaches.
	for id, p := range procs {
		waitUntil(t, id+" to know the six rooms", func() bool {
			n := 0
			for _, rooms := range status(t, p.url).Rooms {
				n += len(rooms)
			}
			return n == 6
		})
	}
	for range 3 {
		if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "match-0"}, opts); !errors.Is(err, cluster.ErrRefused) {
			t.Fatalf("a name in use: %v", err)
		}
	}

	// The ticket leads the client to the process that holds its room:
	// there it joins; another process does not know the room.
	c, err := engine.Dial(ctx, first.URL, first.Tickets["alice"], &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		t.Fatalf("dial %s: %v", first.URL, err)
	}
	if c.Target() != first.Room || c.Mode() != engine.Lockstep || c.LockstepConfig().Players != 2 {
		t.Fatalf("joined %s %v %+v", c.Target(), c.Mode(), c.LockstepConfig())
	}
	c.Close()
	for id, p := range procs {
		if id == first.Node {
			continue
		}
		if _, err := engine.Dial(ctx, p.url, first.Tickets["bob"], &engine.ClientConfig{IncludeLoopback: true}); err == nil {
			t.Fatalf("node %s took a ticket for a room on %s", id, first.Node)
		}
		break
	}

	// Kill the node with the most rooms (at least 2 of the 6).
	victim := ""
	for id, rooms := range byNode {
		if victim == "" || len(rooms) > len(byNode[victim]) || len(rooms) == len(byNode[victim]) && id < victim {
			victim = id
		}
	}
	want := slices.Sorted(slices.Values(byNode[victim]))
	if err := procs[victim].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-losses:
		if l.Node != victim || !slices.Equal(l.Rooms, want) || l.URL != procs[victim].url {
			t.Fatalf("loss %+v, want node %s with rooms %v", l, victim, want)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("no loss reported in 15 s for %s", victim)
	}
	// The survivors report it too: in their status and in their logs.
	var survivors []*serveProc
	for id, p := range procs {
		if id != victim {
			survivors = append(survivors, p)
		}
	}
	for _, p := range survivors {
		waitUntil(t, p.id+" to report the lost rooms", func() bool {
			var lost []string
			for _, l := range status(t, p.url).Lost {
				if l.Node == victim {
					lost = append(lost, l.Room)
				}
			}
			return slices.Equal(lost, want)
		})
		waitUntil(t, p.id+" to log the loss", func() bool {
			return strings.Contains(p.stderr.String(), "cluster: node lost") && strings.Contains(p.stderr.String(), "node="+victim)
		})
	}

	// New rooms go to the two others.
	for i := range 4 {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Players: []string{"carol"}}, opts)
		if err != nil {
			t.Fatalf("new room %d: %v", i, err)
		}
		if p.Node == victim {
			t.Fatalf("new room %s placed on the dead node", p.Room)
		}
		byNode[p.Node] = append(byNode[p.Node], p.Room)
	}

	// A survivor stopped on purpose leaves: its rooms are closed, not lost.
	leaver := survivors[0]
	if err := leaver.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-leaver.exited:
		leaver.exited <- err // for the cleanup
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		if err != nil {
			t.Fatalf("node %s exited with %v after SIGTERM", leaver.id, err)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("node %s still running 15 s after SIGTERM", leaver.id)
	}
	waitUntil(t, leaver.id+" to leave the directory", func() bool {
		return !slices.ContainsFunc(dir.Nodes(), func(n cluster.NodeStatus) bool { return n.ID == leaver.id })
	})
	select {
	case l := <-losses:
		t.Fatalf("a node that left was reported lost: %+v", l)
	default:
	}
	// One node is left: a new room goes there if it has room, else none.
	// It holds its own rooms and those its standbys took over from the
	// killed node and from the one that left (TestStandbyProcesses).
	last := survivors[1]
	held := len(status(t, last.url).Rooms[last.id])
	p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{}, opts)
	if errors.Is(err, cluster.ErrNoCapacity) && held < 4 {
		// A take-over its standbys were still finishing may have filled it.
		held = max(held, len(status(t, last.url).Rooms[last.id]))
	}
	switch {
	case held < 4 && (err != nil || p.Node != last.id):
		t.Fatalf("with %s left holding %d of 4: %+v, %v", last.id, held, p, err)
	case held >= 4 && !errors.Is(err, cluster.ErrNoCapacity):
		t.Fatalf("with %s left and full (%d rooms): %+v, %v", last.id, held, p, err)
	}
}

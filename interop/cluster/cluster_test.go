//go:build !js

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interop/natstest"
)

// fast declares a node dead after half a second without heartbeats:
// quick, and still far from what a loaded test machine delays them.
var fast = &cluster.Options{Heartbeat: 25 * time.Millisecond, Misses: 20, RequestTimeout: time.Second, Secret: clusterSecret}

// clusterSecret seals the test cluster's messages.
var clusterSecret = []byte("interop-cluster-secret-0123456789")

// waitFor polls cond until it holds; the bound only turns a hang into a
// failure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after 10 s", what)
		}
	}
}

// fakeHost records the rooms a node creates; refuse names a room it
// refuses.
type fakeHost struct {
	mu     sync.Mutex
	rooms  []string
	refuse string
}

func (h *fakeHost) create(req cluster.RoomRequest) (map[string]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if req.Room == h.refuse {
		return nil, errors.New("bad config")
	}
	if req.Room == "no-room-here" {
		return nil, fmt.Errorf("%w: out of memory", cluster.ErrFull)
	}
	h.rooms = append(h.rooms, req.Room)
	t := map[string]string{}
	for _, p := range req.Players {
		t[p] = "ticket-for-" + p + "-in-" + req.Room
	}
	return t, nil
}

type testNode struct {
	nc   *nats.Conn
	node *cluster.Node
	host *fakeHost
}

func join(t *testing.T, url, id string, capacity int) *testNode {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	h := &fakeHost{}
	n, err := cluster.Join(nc, cluster.NodeInfo{ID: id, URL: "http://" + id + ".test:8080", Capacity: capacity}, h.create, fast)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Leave(); nc.Close() })
	return &testNode{nc: nc, node: n, host: h}
}

func alive(d *cluster.Directory) []string {
	var ids []string
	for _, n := range d.Nodes() {
		if n.Alive {
			ids = append(ids, n.ID)
		}
	}
	return ids
}

func TestPlacementCapacityAndLoss(t *testing.T) {
	srv := natstest.Server(t)
	lobby := natstest.Conn(t, srv)
	losses := make(chan cluster.Loss, 10)
	opts := *fast
	opts.OnLoss = func(l cluster.Loss) { losses <- l }
	dir, err := cluster.Watch(lobby, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()

	nodes := map[string]*testNode{}
	for _, id := range []string{"a", "b", "c"} {
		nodes[id] = join(t, srv.ClientURL(), id, 2)
	}
	waitFor(t, "three live nodes", func() bool { return slices.Equal(alive(dir), []string{"a", "b", "c"}) })
	for id, n := range nodes {
		waitFor(t, id+" to see three live nodes", func() bool { return slices.Equal(alive(n.node.Directory()), []string{"a", "b", "c"}) })
	}

	// Six rooms fill the three nodes of capacity 2, whatever order NATS
	// picks them in; a seventh finds no capacity.
	ctx := t.Context()
	placed := map[string]cluster.Placement{}
	for i := range 6 {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: fmt.Sprint("m", i), Players: []string{"p1", "p2"}}, fast)
		if err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
		if p.URL != "http://"+p.Node+".test:8080" || p.Tickets["p2"] != "ticket-for-p2-in-"+p.Room {
			t.Fatalf("placement %+v", p)
		}
		placed[p.Room] = p
	}
	for id, n := range nodes {
		if got := n.node.Rooms(); len(got) != 2 {
			t.Fatalf("node %s holds %v, want 2 rooms", id, got)
		}
	}
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "m6"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("a seventh room: %v", err)
	}
	// The directory learns where each room is.
	waitFor(t, "the directory to locate every room", func() bool {
		for r, p := range placed {
			if st, ok := dir.Locate(r); !ok || st.ID != p.Node {
				return false
			}
		}
		return true
	})

	// A room closes on a: the next room goes there.
	a := nodes["a"]
	a.node.Closed(a.node.Rooms()[0])
	p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{}, fast)
	if err != nil || p.Node != "a" || len(p.Room) == 0 {
		t.Fatalf("after a close: %+v, %v", p, err)
	}

	// b dies (its connection drops, no goodbye): its rooms are reported
	// lost, by the lobby's directory and by the other nodes'.
	b := nodes["b"]
	bRooms := b.node.Rooms()
	b.nc.Close()
	var loss cluster.Loss
	select {
	case loss = <-losses:
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported in 10 s")
	}
	if loss.Node != "b" || !slices.Equal(loss.Rooms, bRooms) || loss.URL != "http://b.test:8080" {
		t.Fatalf("loss %+v, want b's rooms %v", loss, bRooms)
	}
	var lost []string
	for _, l := range dir.Lost() {
		lost = append(lost, l.Room)
	}
	if !slices.Equal(lost, bRooms) {
		t.Fatalf("Lost() = %v, want %v", lost, bRooms)
	}
	waitFor(t, "node c to report b's rooms lost", func() bool { return len(nodes["c"].node.Directory().Lost()) == 2 })
	if slices.Contains(alive(dir), "b") {
		t.Fatal("b still alive")
	}

	// New rooms go to the others once they have room.
	c := nodes["c"]
	for _, n := range []*testNode{a, c} {
		n.node.Closed(n.node.Rooms()[0])
	}
	for range 2 {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{}, fast)
		if err != nil || p.Node == "b" {
			t.Fatalf("after b died: %+v, %v", p, err)
		}
	}
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("with a and c full: %v", err)
	}

	// c leaves on purpose: its rooms are closed, not lost.
	if err := c.node.Leave(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "c to leave the directory", func() bool {
		return !slices.ContainsFunc(dir.Nodes(), func(n cluster.NodeStatus) bool { return n.ID == "c" })
	})
	if got := len(dir.Lost()); got != 2 {
		t.Fatalf("%d rooms lost after c left, want b's 2", got)
	}
	select {
	case l := <-losses:
		t.Fatalf("a second loss: %+v", l)
	default:
	}
}

func TestRefusals(t *testing.T) {
	srv := natstest.Server(t)
	lobby := natstest.Conn(t, srv)
	ctx := t.Context()
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "x"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("no nodes: %v", err)
	}
	n := join(t, srv.ClientURL(), "solo", 5)
	n.host.refuse = "bad"
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "bad"}, fast); !errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("refused by the host: %v", err)
	}
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "ok"}, fast); err != nil {
		t.Fatal(err)
	}
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "ok"}, fast); !errors.Is(err, cluster.ErrRefused) {
		t.Fatalf("a name in use: %v", err)
	}
	if got := n.node.Rooms(); !slices.Equal(got, []string{"ok"}) {
		t.Fatalf("rooms %v", got)
	}
	// The host says it is full: the node leaves the queue until a room
	// closes.
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "no-room-here"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("host full: %v", err)
	}
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "later"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Fatalf("after the host was full: %v", err)
	}
	n.node.Closed("ok")
	if _, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: "later"}, fast); err != nil {
		t.Fatalf("after a room closed: %v", err)
	}
	for _, req := range []cluster.RoomRequest{
		{Room: string(make([]byte, 65))},
		{Room: "r", Players: []string{""}},
		{Room: "r", TicketTTL: -1},
	} {
		if _, err := cluster.CreateRoom(ctx, lobby, req, fast); !errors.Is(err, cluster.ErrInvalid) {
			t.Fatalf("request %+v: %v", req, err)
		}
	}
	// A message on the create subject that the cluster's secret did not
	// seal is dropped unanswered, and counted.
	forged := n.node.Dropped()["forged"]
	for _, b := range []string{`{"room":`, `{"room":"free","players":["mallory"]}`} {
		if msg, err := lobby.Request("tongbu.cluster.create", []byte(b), 300*time.Millisecond); err == nil {
			t.Fatalf("an unsealed request %s answered: %q", b, msg.Data)
		}
	}
	if got := n.node.Dropped()["forged"] - forged; got != 2 {
		t.Fatalf("%d forged requests counted, want 2", got)
	}
	if _, ok := n.node.Directory().Locate("free"); ok || slices.Contains(n.node.Rooms(), "free") {
		t.Fatal("an unsealed request made a room")
	}
	for _, info := range []cluster.NodeInfo{
		{ID: "a.b", URL: "http://x", Capacity: 1},
		{ID: "a", URL: "x", Capacity: 1},
		{ID: "a", URL: "http://x", Capacity: 0},
	} {
		if _, err := cluster.Join(lobby, info, n.host.create, fast); !errors.Is(err, cluster.ErrInvalid) {
			t.Fatalf("join %+v: %v", info, err)
		}
	}
	if cluster.MaxRoomLen != engine.MaxNameLen {
		t.Fatalf("MaxRoomLen %d, engine.MaxNameLen %d", cluster.MaxRoomLen, engine.MaxNameLen)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := cluster.CreateRoom(ctx2, lobby, cluster.RoomRequest{}, fast); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRestartedNodeLosesItsRooms(t *testing.T) {
	srv := natstest.Server(t)
	lobby := natstest.Conn(t, srv)
	losses := make(chan cluster.Loss, 10)
	opts := *fast
	opts.Misses = 1000 // so only the restart can report the loss
	opts.OnLoss = func(l cluster.Loss) { losses <- l }
	dir, err := cluster.Watch(lobby, &opts)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	first := join(t, srv.ClientURL(), "n", 3)
	p, err := cluster.CreateRoom(t.Context(), lobby, cluster.RoomRequest{}, fast)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the room in the directory", func() bool { _, ok := dir.Locate(p.Room); return ok })
	first.nc.Close() // killed, and at once a new process with the same id
	join(t, srv.ClientURL(), "n", 3)
	select {
	case l := <-losses:
		if !l.Restarted || !slices.Equal(l.Rooms, []string{p.Room}) {
			t.Fatalf("loss %+v", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported in 10 s")
	}
}

// TestRegionsAndBuilds: nodes announce their region and builds; a room
// request naming builds goes only to a node that serves them all, and
// CreateRoomOn places on the node asked for, or says why not.
func TestRegionsAndBuilds(t *testing.T) {
	srv := natstest.Server(t)
	lobby := natstest.Conn(t, srv)
	dir, err := cluster.Watch(lobby, fast)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	type spec struct {
		id, region string
		builds     []string
	}
	hosts := map[string]*fakeHost{}
	for _, s := range []spec{{"eu1", "eu", []string{"1.4"}}, {"us1", "us", []string{"1.4", "1.5"}}, {"any", "", nil}} {
		nc := natstest.Conn(t, srv)
		h := &fakeHost{}
		n, err := cluster.Join(nc, cluster.NodeInfo{ID: s.id, URL: "http://" + s.id + ".test", Capacity: 4, Region: s.region, Builds: s.builds}, h.create, fast)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Leave() })
		hosts[s.id] = h
	}
	waitFor(t, "three live nodes", func() bool { return len(alive(dir)) == 3 })
	for _, n := range dir.Nodes() {
		switch n.ID {
		case "eu1":
			if n.Region != "eu" || !slices.Equal(n.Builds, []string{"1.4"}) {
				t.Errorf("eu1 announced region %q builds %q", n.Region, n.Builds)
			}
		case "any":
			if n.Region != "" || n.Builds != nil {
				t.Errorf("any announced region %q builds %q", n.Region, n.Builds)
			}
		}
	}
	ctx := t.Context()
	// Build 1.5 only on us1 and the node that serves any build: their
	// eight places fill, none on eu1.
	for i := range 8 {
		p, err := cluster.CreateRoom(ctx, lobby, cluster.RoomRequest{Room: fmt.Sprint("b15-", i), Builds: []string{"1.5"}}, &cluster.Options{Attempts: 20, RequestTimeout: time.Second, Secret: clusterSecret})
		if err != nil {
			t.Fatalf("room %d of build 1.5: %v", i, err)
		}
		if p.Node == "eu1" {
			t.Fatalf("room of build 1.5 placed on eu1, which serves 1.4 only")
		}
	}
	if _, err := cluster.CreateRoomOn(ctx, lobby, "eu1", cluster.RoomRequest{Room: "mixed", Builds: []string{"1.4", "1.5"}}, fast); !errors.Is(err, cluster.ErrNoCapacity) || !strings.Contains(err.Error(), "1.5") {
		t.Errorf("a room of builds 1.4 and 1.5 on eu1: %v, want ErrNoCapacity naming the build", err)
	}
	p, err := cluster.CreateRoomOn(ctx, lobby, "eu1", cluster.RoomRequest{Room: "on-eu1", Players: []string{"ann"}, Builds: []string{"1.4"}}, fast)
	if err != nil || p.Node != "eu1" || p.URL != "http://eu1.test" || p.Tickets["ann"] == "" {
		t.Fatalf("CreateRoomOn eu1: %+v, %v", p, err)
	}
	if _, err := cluster.CreateRoomOn(ctx, lobby, "nobody", cluster.RoomRequest{Room: "x"}, fast); !errors.Is(err, cluster.ErrNoCapacity) {
		t.Errorf("CreateRoomOn a node that is not there: %v, want ErrNoCapacity", err)
	}
	if _, err := cluster.CreateRoomOn(ctx, lobby, "eu1", cluster.RoomRequest{Room: "bad", Builds: []string{"has space"}}, fast); !errors.Is(err, cluster.ErrInvalid) {
		t.Errorf("a build with a space: %v, want ErrInvalid", err)
	}
}

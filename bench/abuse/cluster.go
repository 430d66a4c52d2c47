//go:build !js

package abuse

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/matchmaker"
	"github.com/tongbu/tongbu/transport"
)

// The cluster's attacks (issue 57): a cluster of two nodes, a matchmaker
// and a lobby on a NATS server with no permissions at all, so that what
// holds is the cluster's own sealing. An honest room of players plays on
// the first node, and the lobby matches two players every 500 ms and
// has them join their room; the attacker is a NATS client without the
// cluster's secret (or, for the attacks on the engine, a player) in this
// process: what it costs the NATS server and the nodes is messages, not
// this process's memory.
const (
	// ForgedBooking: bookings for an honest player's name on the world
	// subject of the node, and rooms asked for honest players on the
	// create subjects, unsealed and sealed with another cluster's secret,
	// 200 a second.
	ForgedBooking = "forged_booking"
	// SniffedAssignment: a subscription to every subject, and a dial of
	// every token in what it sees that could be a ticket.
	SniffedAssignment = "sniffed_assignment"
	// ForgedHeartbeat: heartbeats of a node that sorts first listing the
	// second node's world at the attacker's URL, and of the first node
	// with a new instance, 40 a second each.
	ForgedHeartbeat = "forged_heartbeat"
	// ForgedGhosts: border messages with 500 entities by the border and
	// one handed over, on the first cell's subject, every frame.
	ForgedGhosts = "forged_ghosts"
	// FakeServices: 50 matchmaking Services' heartbeats, every 40 ms.
	FakeServices = "fake_services"
	// ForgedRoomRequests: 32 room requests at a time on the create
	// subjects, again and again.
	ForgedRoomRequests = "forged_room_requests"
	// MovedCredential: a player moves between worlds of the two nodes
	// every second; after each move the attacker dials the world it left
	// with the player's credentials there.
	MovedCredential = "moved_credential"
	// SessionRenewal: a player whose 2-second ticket began a session of
	// 3 seconds (the node's MaxSession) dials again with its newest
	// credential every 300 ms, to stay in past the session.
	SessionRenewal = "session_renewal"
	// PastSkill: a player whose client hears the world 9.4 s late (150
	// frames) casts a skill every 100 ms, stamped that far back.
	PastSkill = "past_skill"
)

// ClusterAttacks lists them in the order bench abuse runs them.
var ClusterAttacks = []string{ForgedBooking, SniffedAssignment, ForgedHeartbeat, ForgedGhosts, FakeServices, ForgedRoomRequests,
	MovedCredential, SessionRenewal, PastSkill}

// clusterResult is one cluster attack's run.
type clusterResult struct {
	quiet, attacked gaps
	quietM, attM    matches
	forged          int64   // what the attack got accepted: tickets, rooms, worlds closed, entities, Services, seats
	dropped         uint64  // NATS messages the nodes, the lobby and the matchmaker dropped
	rewindQuiet     float64 // past_skill: the longest rewind of an honest skill, ms
	rewindAttack    float64 // and of the attacker's
	sent            int64
}

// matches is what the lobby's matching did in a window.
type matches struct {
	made, failed int
	p99          time.Duration // from the two tickets queued to both players in their room
}

// benchNode is one node of the bench's cluster.
type benchNode struct {
	id, url string
	srv     *engine.Server
	nc      *nats.Conn
	node    *cluster.Node
	stop    func()
}

// clusterBench is the bench's cluster, its honest traffic and its
// attacker.
type clusterBench struct {
	ns      *server.Server
	opts    *cluster.Options
	nodes   []*benchNode
	lobby   *nats.Conn
	dir     *cluster.Directory
	svc     *matchmaker.Service
	q       *matchmaker.Queue
	room    *room
	matcher *matcher
	forged  atomic.Int64
	sent    atomic.Int64
	closers []func()

	// rewind: the world's OnAction of past_skill's world, by player.
	rewindMu sync.Mutex
	rewind   map[string]float64 // ms, the longest since the last read
}

// clusterSecret seals the bench cluster's messages; ticketSecret signs
// its tickets.
var (
	clusterSecret = []byte("abuse-bench-cluster-secret-0123456789")
	ticketSecret  = []byte("abuse-bench-ticket-secret-0123456789")
)

func newClusterBench(attack string, players int) (*clusterBench, error) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true, MaxPayload: 4 << 20})
	if err != nil {
		return nil, err
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("abuse: NATS server not ready")
	}
	b := &clusterBench{ns: ns, opts: &cluster.Options{Heartbeat: 100 * time.Millisecond, Misses: 10, Secret: clusterSecret}, rewind: map[string]float64{}}
	b.closers = append(b.closers, ns.Shutdown)
	for _, id := range []string{"a", "b"} {
		maxSession := time.Duration(0)
		if attack == SessionRenewal && id == "a" {
			maxSession = 3 * time.Second
		}
		if err := b.addNode(id, maxSession); err != nil {
			b.close()
			return nil, err
		}
	}
	if b.lobby, err = nats.Connect(ns.ClientURL()); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, b.lobby.Close)
	if b.dir, err = cluster.Watch(b.lobby, b.opts); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() { b.dir.Close() })
	mo := &matchmaker.Options{Heartbeat: 100 * time.Millisecond, Misses: 10, Interval: 50 * time.Millisecond, Secret: clusterSecret, Cluster: b.opts, ID: "mm-real"}
	mnc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, mnc.Close)
	if b.svc, err = matchmaker.Serve(mnc, matchmaker.Config{Modes: []matchmaker.Mode{{Name: "duel", Teams: 2, TeamSize: 1}}}, mo); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() { b.svc.Close() })
	qo := *mo
	qo.ID = ""
	if b.q, err = matchmaker.NewQueue(b.lobby, &qo); err != nil {
		b.close()
		return nil, err
	}
	b.closers = append(b.closers, func() { b.q.Close() })
	for deadline := time.Now().Add(10 * time.Second); len(b.dir.Nodes()) < 2 || len(b.q.Services()) < 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.close()
			return nil, errors.New("abuse: the cluster did not come up")
		}
	}
	// The honest room, placed by the lobby.
	var names []string
	for i := range players {
		names = append(names, "honest"+strconv.Itoa(i))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := cluster.CreateRoomOn(ctx, b.lobby, "a", cluster.RoomRequest{Room: "honest", Players: names}, b.opts)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("abuse: the honest room: %w", err)
	}
	r := &room{stop: make(chan struct{}), done: make(chan struct{})}
	for _, n := range names {
		c, err := engine.Dial(ctx, p.URL, p.Tickets[n], &engine.ClientConfig{IncludeLoopback: true})
		if err != nil {
			r.end()
			b.close()
			return nil, fmt.Errorf("abuse: honest player %s: %w", n, err)
		}
		r.clients = append(r.clients, c)
	}
	go r.loop()
	b.room = r
	b.closers = append(b.closers, r.end)
	b.matcher = startMatcher(b.q)
	b.closers = append(b.closers, b.matcher.end)
	return b, nil
}

// addNode starts node id: an engine server over WebRTC on loopback that
// joins the cluster, creates the rooms placed on it and serves worlds.
func (b *clusterBench) addNode(id string, maxSession time.Duration) error {
	n := &benchNode{id: id}
	var err error
	if n.srv, err = engine.NewServer(engine.Config{Secret: ticketSecret, UDPAddr: "127.0.0.1:0", IncludeLoopback: true, MaxSession: maxSession}); err != nil {
		return err
	}
	if n.url, n.stop, err = harness.ServeEngine(n.srv); err != nil {
		return err
	}
	b.closers = append(b.closers, n.stop)
	if n.nc, err = nats.Connect(b.ns.ClientURL()); err != nil {
		return err
	}
	b.closers = append(b.closers, n.nc.Close)
	host := func(req cluster.RoomRequest) (map[string]string, error) {
		if _, err := n.srv.CreateRoom(req.Room, lockstep.Config{Players: max(2, len(req.Players)), Hz: 30}); err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, p := range req.Players {
			if out[p], err = n.srv.Ticket(p, req.Room, engine.RolePlayer, time.Minute); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if n.node, err = cluster.Join(n.nc, cluster.NodeInfo{ID: id, URL: n.url, Capacity: 1000, Players: 1000}, host, b.opts); err != nil {
		return err
	}
	b.closers = append(b.closers, func() { n.node.Leave() })
	n.node.OnKick(n.srv.Kick)
	maker := func(req cluster.WorldRequest) (engine.WorldConfig, error) {
		return engine.WorldConfig{Interest: interest.Config{Width: 16, Height: 16}}, nil
	}
	if err := n.node.ServeWorlds(n.srv, maker); err != nil {
		return err
	}
	b.nodes = append(b.nodes, n)
	return nil
}

func (b *clusterBench) close() {
	for i := len(b.closers) - 1; i >= 0; i-- {
		b.closers[i]()
	}
}

// dropped sums the NATS messages the cluster's processes dropped.
func (b *clusterBench) dropped() uint64 {
	var n uint64
	for _, m := range []map[string]uint64{b.nodes[0].node.Dropped(), b.nodes[1].node.Dropped(), b.dir.Dropped(), b.svc.Dropped(), b.q.Dropped()} {
		for _, v := range m {
			n += v
		}
	}
	return n
}

// matcher queues two players every 500 ms and has both join the room
// their match was placed in.
type matcher struct {
	stop  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	times []time.Duration
	fail  int
	seen  []string // the room tickets the matches carried, for the sniffer
}

func startMatcher(q *matchmaker.Queue) *matcher {
	m := &matcher{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-m.stop:
				m.wg.Wait()
				return
			case <-tick.C:
			}
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				m.match(q, n)
			}()
		}
	}()
	return m
}

// match queues two players and joins them; it counts a failure when
// either is not in its room within 10 s.
func (m *matcher) match(q *matchmaker.Queue, n int) {
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ok := true
	var clients []*engine.Client
	var mu sync.Mutex
	var wg sync.WaitGroup
	for side := range 2 {
		player := fmt.Sprintf("m%d-%d", n, side)
		w, err := q.Submit(matchmaker.Ticket{Players: []matchmaker.Player{{ID: player, Rating: matchmaker.NewRating()}}, Mode: "duel"})
		if err != nil {
			ok = false
			continue
		}
		wg.Go(func() {
			a, err := w.Await(ctx)
			if err == nil {
				m.mu.Lock()
				m.seen = append(m.seen, a.Tickets[player])
				m.mu.Unlock()
				var c *engine.Client
				if c, err = engine.Dial(ctx, a.URL, a.Tickets[player], &engine.ClientConfig{IncludeLoopback: true}); err == nil {
					mu.Lock()
					clients = append(clients, c)
					mu.Unlock()
				}
			}
			if err != nil {
				mu.Lock()
				ok = false
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	for _, c := range clients {
		c.Close()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ok && len(clients) == 2 {
		m.times = append(m.times, took)
	} else {
		m.fail++
	}
}

func (m *matcher) window() matches {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := matches{made: len(m.times), failed: m.fail, p99: quantile(m.times, 0.99)}
	m.times, m.fail = m.times[:0], 0
	return w
}

func (m *matcher) tickets() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.seen...)
}

func (m *matcher) end() {
	close(m.stop)
	<-m.done
}

// runCluster runs one cluster attack: the cluster and its honest traffic
// play quiet, then under the attack.
func runCluster(attack string, players int, quiet, seconds time.Duration) (clusterResult, error) {
	var r clusterResult
	b, err := newClusterBench(attack, players)
	if err != nil {
		return r, err
	}
	defer b.close()
	start, err := b.setup(attack)
	if err != nil {
		return r, err
	}
	time.Sleep(time.Second) // the room settles
	b.room.window()
	b.matcher.window()
	b.rewinds()
	time.Sleep(quiet)
	r.quiet, r.quietM, r.rewindQuiet = b.room.window(), b.matcher.window(), b.rewinds()["honest-w"]
	d0 := b.dropped()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		start(ctx)
	}()
	time.Sleep(seconds)
	cancel()
	<-done
	r.attacked, r.attM = b.room.window(), b.matcher.window()
	rw := b.rewinds()
	r.rewindAttack = rw["mallory"]
	if attack == PastSkill && r.rewindAttack == 0 {
		return r, errors.New("past_skill: the attacker's skills never reached the world")
	}
	r.forged, r.sent, r.dropped = b.forged.Load(), b.sent.Load(), b.dropped()-d0
	return r, nil
}

// rewinds returns, and forgets, the longest rewinds the world of
// past_skill gave each player's skills since the last call, in ms.
func (b *clusterBench) rewinds() map[string]float64 {
	b.rewindMu.Lock()
	defer b.rewindMu.Unlock()
	out := b.rewind
	b.rewind = map[string]float64{}
	return out
}

// setup readies what the attack needs and returns the attack, which runs
// until its context ends.
func (b *clusterBench) setup(attack string) (func(ctx context.Context), error) {
	a, bn := b.nodes[0], b.nodes[1]
	raw, err := nats.Connect(b.ns.ClientURL())
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, raw.Close)
	every := func(ctx context.Context, d time.Duration, f func()) {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			f()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
	switch attack {
	case ForgedBooking:
		if _, err := cluster.CreateWorld(context.Background(), b.lobby, cluster.WorldRequest{World: "field", Cap: 100}, b.opts); err != nil {
			return nil, err
		}
		book := []byte(`{"op":"book","world":"field","player":"honest0","ttl_ms":60000}`)
		room := []byte(`{"room":"stolen","players":["honest0","honest1"]}`)
		return func(ctx context.Context) {
			every(ctx, 5*time.Millisecond, func() {
				for _, m := range []struct {
					subj string
					data []byte
				}{{"tongbu.cluster.world.a", book}, {"tongbu.cluster.create", room}, {"tongbu.cluster.create.a", room}} {
					b.sent.Add(1)
					if msg, err := raw.Request(m.subj, m.data, 2*time.Millisecond); err == nil && len(msg.Data) > 0 {
						b.forged.Add(1) // an answer: with a ticket, or not, it should not have come
					}
				}
			})
			if _, ok := a.srv.Room("stolen"); ok {
				b.forged.Add(1)
			}
		}, nil
	case SniffedAssignment:
		var mu sync.Mutex
		var seen bytes.Buffer
		sub, err := raw.Subscribe(">", func(m *nats.Msg) {
			b.sent.Add(1) // messages seen
			mu.Lock()
			seen.Write(m.Data)
			seen.WriteByte('\n')
			mu.Unlock()
		})
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { sub.Unsubscribe() })
		token := regexp.MustCompile(`[A-Za-z0-9_-]{40,400}`)
		return func(ctx context.Context) {
			every(ctx, 500*time.Millisecond, func() {
				mu.Lock()
				data := append([]byte(nil), seen.Bytes()...)
				seen.Reset()
				mu.Unlock()
				for _, tk := range b.matcher.tickets() {
					if bytes.Contains(data, []byte(tk)) {
						b.forged.Add(1) // a ticket in the clear
					}
				}
				for _, tk := range token.FindAll(data, 20) { // anything that could be a ticket: try it
					dctx, cancel := context.WithTimeout(ctx, time.Second)
					if c, err := engine.Dial(dctx, a.url, string(tk), &engine.ClientConfig{IncludeLoopback: true}); err == nil {
						b.forged.Add(1) // a seat taken
						c.Close()
					}
					cancel()
				}
			})
		}, nil
	case ForgedHeartbeat:
		if _, err := cluster.CreateRoomOn(context.Background(), b.lobby, "b", cluster.RoomRequest{Room: "b-room"}, b.opts); err != nil {
			return nil, err
		}
		p, err := cluster.CreateWorld(context.Background(), bn.nc, cluster.WorldRequest{World: "x", Cap: 5}, b.opts)
		if err != nil {
			return nil, err
		}
		holder := b.nodeOf(p.Node)
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if _, ok := b.dir.LocateWorld("x"); ok {
				break
			}
			if time.Now().After(deadline) {
				return nil, errors.New("forged_heartbeat: the world is not listed")
			}
		}
		var lost atomic.Int64
		b.opts.OnLoss = func(cluster.Loss) { lost.Add(1) } // the directories made from now on
		watch, err := cluster.Watch(b.lobby, b.opts)
		if err != nil {
			return nil, err
		}
		b.closers = append(b.closers, func() { watch.Close() })
		hb := func(id string, instance uint64) []byte {
			return fmt.Appendf(nil, `{"id":%q,"instance":%d,"url":"http://mallory.test","capacity":10,"rooms":0,"gen":0,"interval_ms":25,"players":100,"worlds":[{"name":"x","players":3,"cap":5}]}`, id, instance)
		}
		return func(ctx context.Context) {
			every(ctx, 25*time.Millisecond, func() {
				raw.Publish("tongbu.cluster.ev.hb", hb("0", 1))
				raw.Publish("tongbu.cluster.ev.hb", hb(holder.id, 99))
				raw.Publish("tongbu.cluster.ev.hb", hb("b", 77))
				b.sent.Add(3)
			})
			if _, ok := holder.srv.World("x"); !ok {
				b.forged.Add(1) // a world closed
			}
			for _, d := range []*cluster.Directory{b.dir, watch} {
				for _, w := range d.Worlds() {
					if strings.Contains(w.URL, "mallory") {
						b.forged.Add(1)
					}
				}
				for _, n := range d.Nodes() {
					if n.ID == "0" || strings.Contains(n.URL, "mallory") {
						b.forged.Add(1)
					}
				}
			}
			b.forged.Add(lost.Load())
		}, nil
	case ForgedGhosts:
		return b.forgedGhosts(raw)
	case FakeServices:
		return func(ctx context.Context) {
			every(ctx, 40*time.Millisecond, func() {
				for i := range 50 {
					raw.Publish("tongbu.mm.hb", fmt.Appendf(nil, `{"id":"fake-%d","instance":%d,"interval_ms":40}`, i, i+1))
				}
				b.sent.Add(50)
				if n := len(b.q.Services()); n > 1 {
					b.forged.Store(max(b.forged.Load(), int64(n-1))) // fake Services the queue sends tickets to
				}
			})
		}, nil
	case ForgedRoomRequests:
		return func(ctx context.Context) {
			var mine atomic.Int64
			every(ctx, 50*time.Millisecond, func() {
				for i := range 32 {
					n := mine.Add(1)
					raw.Publish([]string{"tongbu.cluster.create", "tongbu.cluster.create.a", "tongbu.cluster.create.b"}[i%3],
						fmt.Appendf(nil, `{"room":"forged-%d","players":["mallory%d"]}`, n, n))
				}
				b.sent.Add(32)
			})
			for _, n := range b.nodes {
				for _, r := range n.node.Rooms() {
					if strings.HasPrefix(r, "forged-") {
						b.forged.Add(1)
					}
				}
			}
		}, nil
	case MovedCredential:
		return b.movedCredential()
	case SessionRenewal:
		return b.sessionRenewal()
	case PastSkill:
		return b.pastSkill()
	}
	return nil, fmt.Errorf("unknown cluster attack %q", attack)
}

func (b *clusterBench) nodeOf(id string) *benchNode {
	for _, n := range b.nodes {
		if n.id == id {
			return n
		}
	}
	return b.nodes[0]
}

// forgedGhosts cuts a map into two cells on the two nodes, puts an honest
// player in the west one, and forges the east cell's border messages.
func (b *clusterBench) forgedGhosts(raw *nats.Conn) (func(ctx context.Context), error) {
	m := cluster.CellMap{Map: "wild", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4}, Start: time.Now()}
	spawn := func(w *interest.World, player string) (interest.ID, error) {
		at := interest.Vec{X: 3900, Y: 2048}
		return w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player})
	}
	west, err := b.nodes[0].node.ServeCell(m, 0, engine.WorldConfig{Join: spawn, MaxPlayers: 10})
	if err != nil {
		return nil, err
	}
	if _, err := b.nodes[1].node.ServeCell(m, 1, engine.WorldConfig{MaxPlayers: 10}); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, w := b.dir.LocateWorld(cluster.CellName("wild", 0))
		_, e := b.dir.LocateWorld(cluster.CellName("wild", 1))
		if w && e {
			break
		}
		if time.Now().After(deadline) {
			return nil, errors.New("forged_ghosts: the cells are not listed")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := cluster.JoinWorld(ctx, b.lobby, b.dir, cluster.JoinRequest{World: cluster.CellName("wild", 0), Player: "watcher"}, b.opts)
	if err != nil {
		return nil, err
	}
	watcher, err := engine.Dial(ctx, p.URL, p.Tickets["watcher"], &engine.ClientConfig{IncludeLoopback: true})
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { watcher.Close() })
	ic := m.Interest
	ic.IDStride, ic.IDOffset = 2, 1
	fw, err := interest.NewWorld(ic, time.Now(), nil)
	if err != nil {
		return nil, err
	}
	forged := map[interest.ID]bool{}
	for i := range 500 {
		id, err := fw.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: int32(4100 + i), Y: int32(1000 + 4*i)}, Life: 100}, interest.Display{Name: "forged"})
		if err != nil {
			return nil, err
		}
		forged[id] = true
	}
	handed, _ := fw.Spawn(interest.NPC, interest.Logic{Pos: interest.Vec{X: 3950, Y: 2048}, Life: 100}, interest.Display{Name: "forged"})
	forged[handed] = true
	border, err := fw.NewBorder(m.Rect(1), m.Rect(0))
	if err != nil {
		return nil, err
	}
	fw.Tick(time.Now().Add(time.Second))
	msg, _ := border.Write(nil)
	body := append([]byte{0}, msg...)
	return func(ctx context.Context) {
		seen := map[interest.ID]bool{}
		var known []interest.ID
		t := time.NewTicker(62 * time.Millisecond)
		defer t.Stop()
		for {
			raw.Publish("tongbu.cluster.cell.wild.0.1", body)
			b.sent.Add(1)
			now := time.Now()
			watcher.Update(now)
			known = watcher.Interest().Known(known[:0])
			for _, id := range known {
				if forged[id] {
					seen[id] = true
				}
			}
			select {
			case <-ctx.Done():
				n := make(chan int, 1)
				west.Do(func(w *interest.World) {
					c := 0
					for id := range forged {
						if _, ok := w.Logic(id); ok {
							c++
						}
					}
					n <- c
				})
				b.forged.Add(int64(max(len(seen), <-n)))
				return
			case <-t.C:
			}
		}
	}, nil
}

// sniffer is a transport.Conn that reads the resume credentials the
// server sends (SPEC.md §9.2, type 5), as a client that keeps them would.
type sniffer struct {
	transport.Conn
	mu    sync.Mutex
	creds []string
}

func (s *sniffer) take(m transport.Message) {
	r := codec.NewReader(m.Data)
	if r.ReadBits(3) != 7 || r.ReadBits(3) != 5 {
		return
	}
	n := int(r.ReadUint(3)) + 1
	var out []string
	for range n {
		out = append(out, r.ReadString(512))
	}
	if r.Err() == nil {
		s.mu.Lock()
		s.creds = append(s.creds, out...)
		s.mu.Unlock()
	}
}

func (s *sniffer) Receive(ctx context.Context) (transport.Message, error) {
	m, err := s.Conn.Receive(ctx)
	if err == nil {
		s.take(m)
	}
	return m, err
}

func (s *sniffer) TryReceive() (transport.Message, bool) {
	m, ok := s.Conn.TryReceive()
	if ok {
		s.take(m)
	}
	return m, ok
}

func (s *sniffer) newest() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.creds...)
}

// sniffing is a ClientConfig whose connections keep what credentials
// they are given in *last.
func sniffing(last **sniffer) *engine.ClientConfig {
	return &engine.ClientConfig{IncludeLoopback: true, ResumeTimeout: -1,
		Connect: func(ctx context.Context, url, ticket string) (transport.Conn, error) {
			conn, err := transport.Dial(ctx, strings.TrimSuffix(url, "/")+engine.ConnectPath, &transport.ClientConfig{IncludeLoopback: true,
				Header: map[string][]string{"Authorization": {"Bearer " + ticket}, engine.WireHeader: {strconv.Itoa(engine.WireVersion)}}})
			if err != nil {
				return nil, err
			}
			s := &sniffer{Conn: conn}
			*last = s
			return s, nil
		}}
}

// movedCredential: a traveller moves between the worlds of the two nodes
// every second; the attacker dials the world it left with its credentials
// there, and counts every admission (a player in two worlds).
func (b *clusterBench) movedCredential() (func(ctx context.Context), error) {
	ws := map[string]*engine.World{}
	for _, n := range b.nodes {
		if _, err := cluster.CreateWorld(context.Background(), b.lobby, cluster.WorldRequest{World: "w-" + n.id, Cap: 10}, b.opts); err != nil {
			return nil, err
		}
	}
	for deadline := time.Now().Add(5 * time.Second); len(ws) < 2; time.Sleep(10 * time.Millisecond) {
		for _, n := range b.nodes {
			for _, name := range []string{"w-a", "w-b"} {
				if w, ok := n.srv.World(name); ok {
					ws[name] = w
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, errors.New("moved_credential: the worlds are not up")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := cluster.JoinWorld(ctx, b.lobby, b.dir, cluster.JoinRequest{World: "w-a", Player: "traveller"}, b.opts)
	if err != nil {
		return nil, err
	}
	var last *sniffer
	cfg := sniffing(&last)
	c, err := engine.Dial(ctx, p.URL, p.Tickets["traveller"], cfg)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { c.Close() })
	nodeOf := func(world string) *benchNode {
		for _, n := range b.nodes {
			if _, ok := n.srv.World(world); ok {
				return n
			}
		}
		return nil
	}
	return func(ctx context.Context) {
		at := "w-a"
		for ctx.Err() == nil {
			// Let it play a moment, with its credentials here.
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				c.Update(time.Now())
			}
			old, from := last.newest(), nodeOf(at)
			to := map[string]string{"w-a": "w-b", "w-b": "w-a"}[at]
			done := make(chan error, 1)
			if err := ws[at].Transfer("traveller", from.node.Destination(cluster.JoinRequest{World: to}), nil, func(err error) { done <- err }); err != nil {
				return
			}
			for end := time.Now().Add(5 * time.Second); c.Target() != to && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				c.Update(time.Now())
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
			if c.Target() != to {
				continue
			}
			at = to
			// The attacker: the world it left, with what it was given there.
			for _, tk := range old {
				b.sent.Add(1)
				dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				mc, err := engine.Dial(dctx, from.url, tk, &engine.ClientConfig{IncludeLoopback: true, ResumeTimeout: -1})
				cancel()
				if err == nil {
					if mc.Target() != to {
						b.forged.Add(1) // admitted to the world it left
					}
					mc.Close()
				}
			}
		}
	}, nil
}

// sessionRenewal: a player with a 2-second ticket on the node whose
// MaxSession is 3 s dials again with its newest credential every 300 ms;
// every admission after the session's end counts.
func (b *clusterBench) sessionRenewal() (func(ctx context.Context), error) {
	a := b.nodes[0]
	if _, err := a.srv.CreateRoom("renewal", lockstep.Config{Players: 2, Hz: 30}); err != nil {
		return nil, err
	}
	return func(ctx context.Context) {
		tk, _ := a.srv.Ticket("renewer", "renewal", engine.RolePlayer, 2*time.Second)
		began := time.Now()
		var last *sniffer
		var c *engine.Client
		for ctx.Err() == nil {
			b.sent.Add(1)
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			nc, err := engine.Dial(dctx, a.url, tk, sniffing(&last))
			cancel()
			if err == nil {
				if time.Since(began) > 3*time.Second+time.Second { // past the session, and the second a ticket's clock may round to
					b.forged.Add(1)
				}
				if c != nil {
					c.Close()
				}
				c = nc
			}
			for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
				if c != nil {
					c.Update(time.Now())
				}
			}
			if last != nil {
				if creds := last.newest(); len(creds) > 0 {
					tk = creds[len(creds)-1]
				}
			}
		}
		if c != nil {
			c.Close()
		}
	}, nil
}

// delayed is a transport.Conn whose messages, the welcome's first
// included, reach the client d late: a client that plays the world d
// behind it, and stamps its commands so.
type delayed struct {
	transport.Conn
	d      time.Duration
	mu     sync.Mutex
	queue  []timedMessage
	closed bool
	more   chan struct{} // a message was queued
}

type timedMessage struct {
	at time.Time
	m  transport.Message
}

func newDelayed(c transport.Conn, d time.Duration) *delayed {
	dc := &delayed{Conn: c, d: d, more: make(chan struct{}, 1)}
	go func() {
		for {
			m, err := c.Receive(context.Background())
			dc.mu.Lock()
			if err != nil {
				dc.closed = true
			} else if len(dc.queue) < 1<<14 { // past that, dropped, as a slow client's would be
				dc.queue = append(dc.queue, timedMessage{time.Now().Add(d), m})
			}
			dc.mu.Unlock()
			select {
			case dc.more <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return dc
}

// due takes the first message if its time has come; wait is how long
// until it does (0: none is queued).
func (c *delayed) due() (m transport.Message, ok bool, wait time.Duration, closed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.queue) == 0 {
		return m, false, 0, c.closed
	}
	if w := time.Until(c.queue[0].at); w > 0 {
		return m, false, w, false
	}
	m = c.queue[0].m
	c.queue = c.queue[1:]
	return m, true, 0, false
}

func (c *delayed) Receive(ctx context.Context) (transport.Message, error) {
	for {
		m, ok, wait, closed := c.due()
		switch {
		case ok:
			return m, nil
		case closed:
			return m, transport.ErrClosed
		}
		var timer <-chan time.Time
		if wait > 0 {
			timer = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return m, ctx.Err()
		case <-c.more:
		case <-timer:
		}
	}
}

func (c *delayed) TryReceive() (transport.Message, bool) {
	m, ok, _, _ := c.due()
	return m, ok
}

// pastSkill: a world on the first node whose OnAction records each
// player's rewind (the world's frame less the action's view, in ms); an
// honest player casts skills at it, and so does one whose client hears
// the world 150 frames late.
func (b *clusterBench) pastSkill() (func(ctx context.Context), error) {
	a := b.nodes[0]
	w, err := a.srv.CreateWorld("skills", engine.WorldConfig{Interest: interest.Config{Width: 16, Height: 16}})
	if err != nil {
		return nil, err
	}
	period := w.Config().Period()
	w.Do(func(iw *interest.World) {
		iw.OnAction(func(act interest.Action) {
			player, _ := w.Player(act.Player)
			back := float64(iw.Frame()-int(math.Floor(act.View))) * float64(period) / float64(time.Millisecond)
			b.rewindMu.Lock()
			b.rewind[player] = max(b.rewind[player], back)
			b.rewindMu.Unlock()
		})
	})
	join := func(player string, wrap func(transport.Conn) transport.Conn) (*engine.Client, error) {
		tk, _ := a.srv.Ticket(player, "skills", engine.RolePlayer, time.Minute)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return engine.Dial(ctx, a.url, tk, &engine.ClientConfig{IncludeLoopback: true,
			Connect: func(ctx context.Context, url, ticket string) (transport.Conn, error) {
				conn, err := transport.Dial(ctx, strings.TrimSuffix(url, "/")+engine.ConnectPath, &transport.ClientConfig{IncludeLoopback: true,
					Header: map[string][]string{"Authorization": {"Bearer " + ticket}, engine.WireHeader: {strconv.Itoa(engine.WireVersion)}}})
				if err != nil || wrap == nil {
					return conn, err
				}
				return wrap(conn), nil
			}})
	}
	honest, err := join("honest-w", nil)
	if err != nil {
		return nil, err
	}
	b.closers = append(b.closers, func() { honest.Close() })
	cast := func(c *engine.Client) {
		c.Update(time.Now())
		c.Interest().Advance(time.Now())
		if _, ok := c.Interest().Self(); ok {
			c.Interest().Skill(1, 0)
		}
	}
	stopHonest := make(chan struct{})
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopHonest:
				return
			case <-t.C:
				cast(honest)
			}
		}
	}()
	b.closers = append(b.closers, func() { close(stopHonest) })
	return func(ctx context.Context) {
		late := 150 * period
		mc, err := join("mallory", func(c transport.Conn) transport.Conn { return newDelayed(c, late) })
		if err != nil {
			return
		}
		defer mc.Close()
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			cast(mc)
			b.sent.Add(1)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}, nil
}

// clusterReport prints a cluster attack's line and returns its RESULT.
func clusterReport(out func(format string, a ...any), attack string, r clusterResult) string {
	out("%-22s %8.1fms %8.1fms %10.1fms %8d %6d/%-3d %6d/%-3d %8.1fms %8.1fms %8d %8d %9.0f %9.0f   (%d sent)\n",
		attack, ms(r.attacked.p99), ms(r.attacked.max), ms(r.quiet.max), r.attacked.drops,
		r.attM.made, r.attM.failed, r.quietM.made, r.quietM.failed, ms(r.attM.p99), ms(r.quietM.p99), r.forged, r.dropped,
		r.rewindAttack, r.rewindQuiet, r.sent)
	kv := []any{"honest_gap_p99_ms", ms(r.attacked.p99), "honest_gap_max_ms", ms(r.attacked.max),
		"baseline_honest_gap_max_ms", ms(r.quiet.max), "honest_dropped", r.attacked.drops,
		"honest_matches", r.attM.made, "honest_match_failures", r.attM.failed, "baseline_honest_matches", r.quietM.made,
		"baseline_honest_match_failures", r.quietM.failed, "honest_match_p99_ms", ms(r.attM.p99), "baseline_honest_match_p99_ms", ms(r.quietM.p99),
		"forged_accepted", r.forged, "nats_dropped", r.dropped}
	if attack == PastSkill {
		kv = append(kv, "attacker_rewind_max_ms", r.rewindAttack, "baseline_honest_rewind_max_ms", r.rewindQuiet,
			"max_rewind_ms", float64(interest.DefaultMaxRewind)/float64(time.Millisecond))
	}
	return harness.Result("abuse", append([]any{"attack", attack}, kv...)...)
}

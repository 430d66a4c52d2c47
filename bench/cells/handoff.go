//go:build !js

package cells

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/transport/udpimpair"
)

// handoffParams is the crossing part: players walking back and forth over
// the border of a map cut into two cells, on two nodes, over real WebRTC
// with the round trip emulated on every UDP path (udpimpair) and on
// signaling.
type handoffParams struct {
	players int
	seconds int
	rtt     time.Duration
	seed    uint64
}

// handoffFigures are one run's crossings, as the clients saw them: from
// the frame in which the player's position left its cell to the first
// world packet from the new cell.
type handoffFigures struct {
	handoff  millis
	crossed  int // positions that left their cell
	stuck    int // crossings whose client had not switched after 5 s
	switched int
	notes    []string
}

// handoffMap is the crossing part's map: 8 x 4 regions, cut in two at
// x = 4096.
func handoffMap(noStandby bool) cluster.CellMap {
	return cluster.CellMap{Map: "h", Cols: 2, Rows: 1, Interest: interest.Config{Width: 8, Height: 4, Hz: 16}, Start: time.Now(), NoStandby: noStandby}
}

// runHandoff runs the crossing part once: with standby connections (the
// engine's default), or with a handshake at each crossing (noStandby, the
// baseline).
func runHandoff(p handoffParams, noStandby bool) (handoffFigures, error) {
	var f handoffFigures
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return f, err
	}
	go ns.Start()
	defer ns.Shutdown()
	if !ns.ReadyForConnections(10 * time.Second) {
		return f, errors.New("handoff: NATS server not ready")
	}
	opts := &cluster.Options{Heartbeat: 50 * time.Millisecond, Misses: 10, Secret: []byte("the cells bench's cluster secret")}
	m := handoffMap(noStandby)
	way := udpimpair.Link{Delay: p.rtt / 2}
	secret := []byte("the cells bench's cluster secret")

	var mu sync.Mutex
	left := map[interest.ID]time.Time{} // entity -> the frame its position left its cell
	spawn := func(w *interest.World, player string) (interest.ID, error) {
		var i int
		fmt.Sscanf(player, "p%d", &i)
		at := interest.Vec{X: int32(2048 + i*97%1024), Y: int32(512 + i*331%3072)}
		return w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player})
	}
	var stops []func()
	defer func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}()
	nodes := make([]*cluster.Node, 2)
	for i := range 2 {
		srv, err := engine.NewServer(engine.Config{Secret: secret, UDPAddr: "127.0.0.1:0", PublicIPs: []string{"127.0.0.2"}})
		if err != nil {
			return f, err
		}
		udp := srv.UDPAddr().(*net.UDPAddr).AddrPort()
		relay, err := udpimpair.New(fmt.Sprintf("127.0.0.2:%d", udp.Port()), netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), udp.Port()), way, way, uint64(i+1))
		if err != nil {
			return f, err
		}
		stops = append(stops, func() { relay.Close() })
		url, stop, err := harness.ServeEngine(srv)
		if err != nil {
			return f, err
		}
		stops = append(stops, stop)
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			return f, err
		}
		stops = append(stops, nc.Close)
		noRooms := func(cluster.RoomRequest) (map[string]string, error) { return nil, errors.New("worlds only") }
		if nodes[i], err = cluster.Join(nc, cluster.NodeInfo{ID: fmt.Sprint("h", i), URL: url, Capacity: 1, Players: 2 * p.players}, noRooms, opts); err != nil {
			return f, err
		}
		noWorlds := func(cluster.WorldRequest) (engine.WorldConfig, error) {
			return engine.WorldConfig{}, errors.New("cells only")
		}
		if err := nodes[i].ServeWorlds(srv, noWorlds); err != nil {
			return f, err
		}
		rect := m.Rect(i)
		_, err = nodes[i].ServeCell(m, i, engine.WorldConfig{Join: spawn, MaxPlayers: 2 * p.players,
			AfterTick: func(w *interest.World, now time.Time) { // before the cell hands them over, this frame
				for y := range 4 {
					for _, x := range []int{3, 4} { // the two regions along the border
						w.Each(interest.Region{X: x, Y: y}, func(id interest.ID, k interest.Kind, lg *interest.Logic) {
							if k == interest.Player && !w.Ghost(id) && !rect.Contains(w.RegionOf(lg.Pos)) {
								mu.Lock()
								if _, ok := left[id]; !ok {
									left[id] = now
								}
								mu.Unlock()
							}
						})
					}
				}
			}})
		if err != nil {
			return f, err
		}
	}
	lobby, err := nats.Connect(ns.ClientURL())
	if err != nil {
		return f, err
	}
	defer lobby.Close()
	dir := nodes[0].Directory()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, w0 := dir.LocateWorld(cluster.CellName("h", 0))
		_, w1 := dir.LocateWorld(cluster.CellName("h", 1))
		if w0 && w1 {
			break
		}
		if time.Now().After(deadline) {
			return f, errors.New("handoff: the directory never listed the cells")
		}
	}

	// Signaling pays a round trip too, as it would over the network.
	httpc := &http.Client{Transport: delayed{rtt: p.rtt, next: http.DefaultTransport}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var fmu sync.Mutex
	errs := make(chan error, p.players)
	for i := range p.players {
		player := fmt.Sprint("p", i)
		pl, err := cluster.JoinWorld(ctx, lobby, dir, cluster.JoinRequest{World: cluster.CellName("h", 0), Player: player}, opts)
		if err != nil {
			return f, err
		}
		var movedAt time.Time
		cfg := &engine.ClientConfig{HTTPClient: httpc, OnMove: func(engine.Move) { movedAt = time.Now() }}
		c, err := engine.Dial(ctx, pl.URL, pl.Tickets[player], cfg)
		if err != nil {
			return f, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			rng := rand.New(rand.NewPCG(p.seed, uint64(i)))
			me := c.Entity()
			east := true
			var wait time.Time
			end := time.Now().Add(time.Duration(p.seconds) * time.Second)
			tk := time.NewTicker(time.Millisecond) // the game loop: a packet is seen within a millisecond of its arrival
			defer tk.Stop()
			for now := range tk.C {
				if now.After(end) || ctx.Err() != nil {
					return
				}
				if err := c.Update(now); err != nil {
					errs <- fmt.Errorf("%s: %w", player, err)
					return
				}
				is := c.Interest()
				is.Advance(now)
				if !movedAt.IsZero() && is.Stats().PacketsIn > 0 { // the new cell's first packet
					mu.Lock()
					t0, ok := left[me]
					delete(left, me)
					mu.Unlock()
					if ok {
						fmu.Lock()
						f.handoff = append(f.handoff, ms(now.Sub(t0)))
						f.switched++
						fmu.Unlock()
					}
					movedAt = time.Time{}
				}
				lg, ok := is.Self()
				if !ok || lg.Moving() || now.Before(wait) {
					continue
				}
				x := int32(4096 - 1200 - rng.IntN(600))
				if east {
					x = int32(4096 + 1200 + rng.IntN(600))
				}
				is.Move(interest.Vec{X: x, Y: lg.Pos.Y}, int32(40+rng.IntN(16)))
				east = !east
				wait = now.Add(time.Duration(200+rng.IntN(600)) * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		return f, err
	}
	mu.Lock()
	defer mu.Unlock()
	for id, t0 := range left {
		if time.Since(t0) > 5*time.Second {
			f.stuck++
			f.notes = append(f.notes, fmt.Sprintf("entity %d left its cell %v before the end and its client never switched", id, time.Since(t0).Round(time.Millisecond)))
		}
	}
	f.crossed = f.switched + len(left)
	return f, nil
}

// delayed is an HTTP transport whose every request waits a round trip
// first: signaling over a path of that round trip (the connection to it
// assumed open).
type delayed struct {
	rtt  time.Duration
	next http.RoundTripper
}

func (d delayed) RoundTrip(r *http.Request) (*http.Response, error) {
	time.Sleep(d.rtt)
	return d.next.RoundTrip(r)
}

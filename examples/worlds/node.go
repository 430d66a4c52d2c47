//go:build !js

package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/worlds/game"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/natsbus"
	"github.com/tongbu/tongbu/replica"
)

// nodeConfig is one world process: a tongbu server that joins the cluster
// on NATS, simulates the field's cells it is given, and takes town lines.
type nodeConfig struct {
	ID      string    // the node's name in the cluster
	NATS    string    // the NATS server's URL
	HTTP    string    // the address signaling listens on, such as "127.0.0.1:8081"
	UDP     string    // the WebRTC UDP address, such as "127.0.0.1:0"
	Cells   []int     // the field's cells this node simulates
	Start   time.Time // the field's frame 0, the same in every process
	Secret  []byte    // signs tickets and seals the cluster's messages; the same in every process
	Origins []string  // the pages allowed to connect (the lobby's)
	Players int       // the players this node's worlds may hold together
	Log     *slog.Logger
}

// node is a running world process.
type node struct {
	cfg     nodeConfig
	srv     *engine.Server
	nc      *nats.Conn
	cn      *cluster.Node
	url     string
	sub     *replica.Subscriber
	guilds  *replica.Mirror[game.Guild, *game.Guild]
	members *replica.Mirror[game.Member, *game.Member]
	stop    context.CancelFunc
	done    chan struct{}
	closing sync.Once
}

// npcsPerCell is the NPCs each field cell spawns; they wander, and cross.
const npcsPerCell = 40

// fieldMap is the field as cells, with its shared frame 0.
func fieldMap(start time.Time) cluster.CellMap {
	return cluster.CellMap{Map: game.Field, Cols: game.FieldCols, Rows: game.FieldRows, Interest: game.FieldInterest(), Start: start}
}

// startNode starts a world process and returns once it is in the cluster.
func startNode(cfg nodeConfig) (*node, error) {
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{cfg: cfg, stop: cancel, done: make(chan struct{})}
	if err := n.start(ctx); err != nil {
		n.Close()
		return nil, err
	}
	return n, nil
}

func (n *node) start(ctx context.Context) error {
	cfg := n.cfg
	var err error
	n.srv, err = engine.NewServer(engine.Config{Secret: cfg.Secret, UDPAddr: cfg.UDP, AllowedOrigins: cfg.Origins, Logger: cfg.Log.With("node", cfg.ID)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return err
	}
	n.url = "http://" + ln.Addr().String()
	go engine.HTTPServer("", n.srv.Handler()).Serve(ln)
	go func() {
		defer close(n.done)
		n.srv.Serve(ctx)
	}()

	if n.nc, err = nats.Connect(cfg.NATS, nats.Name("worlds-"+cfg.ID)); err != nil {
		return fmt.Errorf("node %s: NATS: %w", cfg.ID, err)
	}
	// The guilds, as the lobby publishes them (package replica).
	bus, err := natsbus.NewSealed(n.nc, cfg.Secret)
	if err != nil {
		return err
	}
	n.sub, err = replica.NewSubscriber(bus, replica.SubscriberConfig{Publisher: lobbyReplica, ID: cfg.ID, Logger: cfg.Log})
	if err != nil {
		return err
	}
	if n.guilds, err = replica.NewMirror[game.Guild](n.sub, "guilds"); err != nil {
		return err
	}
	if n.members, err = replica.NewMirror[game.Member](n.sub, "members"); err != nil {
		return err
	}
	if err := n.sub.Start(time.Now()); err != nil {
		return err
	}
	go tickEvery(ctx, 100*time.Millisecond, func(now time.Time) { n.sub.Tick(now) })

	noRooms := func(cluster.RoomRequest) (map[string]string, error) {
		return nil, errors.New("this example's nodes hold worlds only")
	}
	n.cn, err = cluster.Join(n.nc, cluster.NodeInfo{ID: cfg.ID, URL: n.url, Capacity: 1, Players: cfg.Players}, noRooms, &cluster.Options{Secret: cfg.Secret})
	if err != nil {
		return err
	}
	if err := n.cn.ServeWorlds(n.srv, n.makeTown); err != nil {
		return err
	}
	// Its worlds outlive it: a town line or a field cell moves to another
	// node when this one is stopped (Close drains it), and comes back on
	// another from its checkpoint if it dies (with JetStream on NATS).
	if err := n.cn.ServeStandbys(n.srv, func(string, json.RawMessage, engine.RoomState) (*engine.Room, error) {
		return nil, errors.New("this example's nodes hold worlds only")
	}); err != nil {
		return err
	}
	fm := fieldMap(cfg.Start)
	cell := func(i int) (engine.WorldConfig, error) {
		p := n.place(cluster.CellName(game.Field, i), game.Field, fm.Rect(i), npcsPerCell)
		wc := p.config()
		wc.MaxPlayers = 200
		return wc, nil
	}
	if err := n.cn.HostCells(fm, cell); err != nil {
		return err
	}
	// Its cells, once it has heard the others (a cell that moved to
	// another node while this process was away stays there).
	go func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
		for _, i := range cfg.Cells {
			name := cluster.CellName(game.Field, i)
			if w, ok := n.cn.Directory().LocateWorld(name); ok {
				cfg.Log.Info("cell lives on another node", "world", name, "node", w.Node)
				continue
			}
			wc, _ := cell(i)
			if _, err := n.cn.ServeCell(fm, i, wc); err != nil {
				cfg.Log.Error("cell", "world", name, "err", err)
			}
		}
	}()
	cfg.Log.Info("node up", "node", cfg.ID, "url", n.url, "cells", fmt.Sprint(cfg.Cells))
	return nil
}

// makeTown makes the town lines the cluster places on this node.
func (n *node) makeTown(req cluster.WorldRequest) (engine.WorldConfig, error) {
	m, _, ok := cluster.SplitLine(req.World)
	if !ok || m != game.Town {
		return engine.WorldConfig{}, fmt.Errorf("node %s makes town lines only, not %q", n.cfg.ID, req.World)
	}
	ic := game.TownInterest().WithDefaults()
	p := n.place(req.World, game.Town, interest.Rect{X1: ic.Width, Y1: ic.Height}, 8)
	return p.config(), nil
}

// drain moves the process's worlds to other nodes while their players
// play on, as a deploy does before it stops a process.
func (n *node) drain() {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	moved, err := n.cn.Drain(ctx)
	n.cfg.Log.Info("node drained", "node", n.cfg.ID, "worlds_moved", moved, "err", err)
}

// Close stops the process's worlds and leaves the cluster; again, it
// does nothing.
func (n *node) Close() { n.closing.Do(n.close) }

func (n *node) close() {
	if n.cn != nil {
		n.cn.Leave()
	}
	n.stop()
	if n.srv != nil {
		<-n.done
	}
	if n.sub != nil {
		n.sub.Close()
	}
	if n.nc != nil {
		n.nc.Close()
	}
}

// place is the game's side of one world: a field cell or a town line.
// Its fields are owned by the world's worker, where its hooks run.
type place struct {
	n      *node
	name   string        // the world's name
	m      string        // its map
	rect   interest.Rect // the regions it owns (a cell's; a town's whole map)
	npcs   int           // NPCs to spawn at its first tick
	rng    *rand.Rand
	sent   map[string]time.Time   // players sent through the portal, and when
	named  map[interest.ID]string // the names given to the players here
	portal game.Portal
	frame  int
}

func (n *node) place(name, m string, rect interest.Rect, npcs int) *place {
	return &place{n: n, name: name, m: m, rect: rect, npcs: npcs, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7)),
		sent: map[string]time.Time{}, named: map[interest.ID]string{}, portal: game.PortalOf(m)}
}

// config is the world's hooks.
func (p *place) config() engine.WorldConfig {
	join := func(w *interest.World, player string) (interest.ID, error) {
		at := game.FieldSpawn
		if !p.owns(w, at) {
			at = p.centre(w)
		}
		return p.spawn(w, player, at)
	}
	return engine.WorldConfig{
		Interest: p.interest(),
		Join:     join,
		Arrive: func(w *interest.World, player string, state []byte) (interest.ID, error) {
			if len(state) != 8 { // booked by the lobby: a first place
				return join(w, player)
			}
			// Where the portal puts the player.
			at := interest.Vec{X: int32(binary.LittleEndian.Uint32(state)), Y: int32(binary.LittleEndian.Uint32(state[4:]))}
			return p.spawn(w, player, at)
		},
		Leave: func(w *interest.World, player string, id interest.ID) {
			delete(p.sent, player)
			delete(p.named, id)
			w.Despawn(id)
		},
		Tick: p.tick,
		// What the place keeps goes with its world's checkpoints, so that a
		// world that moved or came back spawns no NPCs again.
		Checkpoint: func(*interest.World) []byte {
			b, _ := json.Marshal(placeState{Spawned: p.npcs == 0, Named: p.named})
			return b
		},
		Restore: func(w *interest.World, b []byte) error {
			var st placeState
			if err := json.Unmarshal(b, &st); err != nil {
				return err
			}
			if st.Spawned {
				p.npcs = 0
			}
			for id, name := range st.Named {
				if k, ok := w.Kind(id); ok && k == interest.Player {
					p.named[id] = name
				}
			}
			return nil
		},
	}
}

// placeState is a place's part of its world's checkpoints.
type placeState struct {
	Spawned bool                   `json:"spawned"`
	Named   map[interest.ID]string `json:"named,omitempty"`
}

func (p *place) interest() interest.Config {
	if p.m == game.Town {
		return game.TownInterest()
	}
	return game.FieldInterest()
}

func (p *place) owns(w *interest.World, at interest.Vec) bool {
	return p.rect.Contains(w.RegionOf(at))
}

// centre is the middle of the regions the place owns.
func (p *place) centre(w *interest.World) interest.Vec {
	rs := int32(w.Config().RegionSize)
	return interest.Vec{X: int32(p.rect.X0+p.rect.X1) * rs / 2, Y: int32(p.rect.Y0+p.rect.Y1) * rs / 2}
}

// spawn places a player, named with its guild's tag.
func (p *place) spawn(w *interest.World, player string, at interest.Vec) (interest.ID, error) {
	lg := interest.Logic{Pos: at, Dest: at, Life: 100, Mana: 100}
	name := p.nameOf(player)
	id, err := w.Spawn(interest.Player, lg, interest.Display{Name: name})
	if err == nil {
		p.named[id] = name
	}
	return id, err
}

// nameOf is a player's name with its guild's tag, which the world process
// reads from the lobby's replica (package replica).
func (p *place) nameOf(player string) string {
	var g game.Guild
	m, ok := p.n.members.Get(game.PlayerID(player))
	if ok {
		g, ok = p.n.guilds.Get(m.Guild)
	}
	return game.Named(player, g, ok)
}

// rename gives the players this place owns the names the replica says
// now: a guild's tag that arrived after its player, or changed. A player
// who crossed in from the next cell is renamed here too.
func (p *place) rename(w *interest.World, ew *engine.World) {
	for x := p.rect.X0; x < p.rect.X1; x++ {
		for y := p.rect.Y0; y < p.rect.Y1; y++ {
			w.Each(interest.Region{X: x, Y: y}, func(id interest.ID, k interest.Kind, _ *interest.Logic) {
				if k != interest.Player || w.Ghost(id) {
					return
				}
				player, ok := ew.Player(id)
				if !ok {
					return
				}
				if name := p.nameOf(player); name != p.named[id] {
					p.named[id] = name
					w.SetDisplay(id, interest.Display{Name: name})
				}
			})
		}
	}
}

// tick runs the place's game: its NPCs wander (across the border too: the
// neighbour cell takes them), and the players who walk into the portal go
// through it.
func (p *place) tick(w *interest.World, now time.Time) {
	c := w.Config()
	if p.npcs > 0 {
		for range p.npcs {
			at := p.randomIn(c, p.rect)
			w.Spawn(interest.NPC, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: "deer"})
		}
		p.npcs = 0
	}
	// A few regions a frame: their idle NPCs may set off.
	for range 4 {
		g := interest.Region{X: p.rect.X0 + p.rng.IntN(p.rect.X1-p.rect.X0), Y: p.rect.Y0 + p.rng.IntN(p.rect.Y1-p.rect.Y0)}
		w.Each(g, func(id interest.ID, k interest.Kind, lg *interest.Logic) {
			if k != interest.NPC || lg.Moving() || w.Ghost(id) || p.rng.IntN(3) > 0 {
				return
			}
			to := p.near(c, lg.Pos, 2*c.RegionSize)
			w.Move(id, to, int32(10+p.rng.IntN(20)))
		})
	}
	// The portal.
	ew, ok := p.n.srv.World(p.name)
	if !ok {
		return
	}
	if p.frame++; p.frame%c.Hz == 0 {
		p.rename(w, ew)
	}
	rs := int32(c.RegionSize)
	r0 := interest.Region{X: int(p.portal.Rect[0] / rs), Y: int(p.portal.Rect[1] / rs)}
	r1 := interest.Region{X: int((p.portal.Rect[0] + p.portal.Rect[2] - 1) / rs), Y: int((p.portal.Rect[1] + p.portal.Rect[3] - 1) / rs)}
	for x := r0.X; x <= r1.X; x++ {
		for y := r0.Y; y <= r1.Y; y++ {
			w.Each(interest.Region{X: x, Y: y}, func(id interest.ID, k interest.Kind, lg *interest.Logic) {
				if k != interest.Player || w.Ghost(id) || !p.portal.Contains(lg.Pos) {
					return
				}
				if player, ok := ew.Player(id); ok && now.Sub(p.sent[player]) > portalRetry {
					p.sent[player] = now
					p.enter(ew, player)
				}
			})
		}
	}
}

// portalRetry is how long a player who stands in a portal it could not go
// through waits before it tries again.
const portalRetry = 3 * time.Second

// enter sends player through the place's portal.
func (p *place) enter(ew *engine.World, player string) {
	var to engine.Destination
	if p.portal.To == game.Town {
		to = p.n.cn.Destination(cluster.JoinRequest{Map: game.Town, NewLine: cluster.WorldRequest{Cap: game.TownCap}})
	} else {
		to = p.n.cn.Destination(cluster.JoinRequest{World: cluster.CellName(game.Field, 0)})
	}
	at := p.portal.At
	state := binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, uint32(at.X)), uint32(at.Y))
	log := p.n.cfg.Log
	ew.Transfer(player, to, state, func(err error) {
		if err != nil {
			log.Info("portal: the player stays", "world", p.name, "player", player, "err", err)
			return
		}
		log.Info("portal: moved", "player", player, "from", p.name, "to", p.portal.To)
	})
}

func (p *place) randomIn(c interest.Config, r interest.Rect) interest.Vec {
	rs := c.RegionSize
	return interest.Vec{X: int32(r.X0*rs + p.rng.IntN((r.X1-r.X0)*rs)), Y: int32(r.Y0*rs + p.rng.IntN((r.Y1-r.Y0)*rs))}
}

// near is a random point within d of v, on the map.
func (p *place) near(c interest.Config, v interest.Vec, d int) interest.Vec {
	x := min(max(int(v.X)+p.rng.IntN(2*d+1)-d, 0), c.Width*c.RegionSize-1)
	y := min(max(int(v.Y)+p.rng.IntN(2*d+1)-d, 0), c.Height*c.RegionSize-1)
	return interest.Vec{X: int32(x), Y: int32(y)}
}

// tickEvery calls f every d until ctx is done.
func tickEvery(ctx context.Context, d time.Duration, f func(time.Time)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			f(now)
		}
	}
}

//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
)

// worldConfig is an interest world of the config file: a world of its
// own ("worlds"), or the template of a map's lines ("maps"); it is also
// the configuration a cluster's world request carries.
type worldConfig struct {
	Name       string `json:"name"`
	Map        string `json:"map,omitempty"`   // "maps" only: the map whose lines these are
	Lines      int    `json:"lines,omitempty"` // "maps" only: lines opened at start (default 1)
	RegionSize int    `json:"region_size"`
	Width      int    `json:"width"`
	Height     int    `json:"height"`
	Hz         int    `json:"hz"`
	// Cap bounds the world's players (engine.WorldConfig.MaxPlayers); a
	// map's lines fill to it. Default 0: no cap, or 1000 for a map.
	Cap     int            `json:"cap,omitempty"`
	Portals []portalConfig `json:"portals,omitempty"`
	// NPCs wander the world: spawned at random places on its first frame
	// (not again when it moves to another node or comes back from a
	// checkpoint), each walking to a point near it now and then.
	NPCs int `json:"npcs,omitempty"`
}

// maxNPCs bounds a world's wandering NPCs.
const maxNPCs = 100_000

// portalConfig is a rectangle of a world that sends the players who walk
// into it to another world or map, arriving at At.
type portalConfig struct {
	X   int32    `json:"x"`
	Y   int32    `json:"y"`
	W   int32    `json:"w"`
	H   int32    `json:"h"`
	To  string   `json:"to,omitempty"`  // a world
	Map string   `json:"map,omitempty"` // or a map (cluster): a line of it
	At  [2]int32 `json:"at"`            // where the player arrives
}

// defaultLineCap is a map's line cap when the config gives none.
const defaultLineCap = 1000

// portalState is what a portal sends with the player: where it arrives,
// and what it carries of its entity.
type portalState struct {
	X    int32 `json:"x"`
	Y    int32 `json:"y"`
	Life uint8 `json:"life"`
	Mana uint8 `json:"mana"`
}

func (p portalConfig) contains(v interest.Vec) bool {
	return v.X >= p.X && v.X < p.X+p.W && v.Y >= p.Y && v.Y < p.Y+p.H
}

func (w *worldConfig) interest() interest.Config {
	return interest.Config{RegionSize: w.RegionSize, Width: w.Width, Height: w.Height, Hz: w.Hz}
}

// check validates a world or map entry.
func (w *worldConfig) check(inCluster bool) error {
	name := w.Name
	if w.Map != "" {
		name = w.Map
		if !inCluster {
			return fmt.Errorf("map %q: maps need a cluster (its lines are placed on nodes)", w.Map)
		}
	}
	ic := w.interest()
	if err := ic.WithDefaults().Validate(); err != nil {
		return fmt.Errorf("world %q: %v", name, err)
	}
	if w.Cap < 0 || w.Lines < 0 || w.NPCs < 0 || w.NPCs > maxNPCs {
		return fmt.Errorf("world %q: cap %d, lines %d, npcs %d (at most %d)", name, w.Cap, w.Lines, w.NPCs, maxNPCs)
	}
	for _, p := range w.Portals {
		switch {
		case (p.To == "") == (p.Map == ""):
			return fmt.Errorf("world %q: a portal goes to a world (to) or a map (map)", name)
		case p.Map != "" && !inCluster:
			return fmt.Errorf("world %q: a portal to map %q needs a cluster", name, p.Map)
		case p.W <= 0 || p.H <= 0:
			return fmt.Errorf("world %q: portal of %dx%d", name, p.W, p.H)
		}
	}
	return nil
}

// worlds makes the engine configurations of the config's worlds: the
// portals' hooks, and the arrival of transferred players where their
// portal put them. Transfers go to worlds of this server, or through the
// cluster once it is joined.
type worlds struct {
	srv  *engine.Server
	log  *slog.Logger
	node atomic.Pointer[cluster.Node]
	maps map[string]*worldConfig // the maps, for their new lines
}

// engineConfig is the engine configuration of world wc.
func (ws *worlds) engineConfig(wc *worldConfig) engine.WorldConfig {
	cfg := engine.WorldConfig{Interest: wc.interest(), MaxPlayers: wc.Cap}
	// Players in the world, and those standing in a portal (who went in,
	// or failed to, and must step out before it takes them again): owned
	// by the world's worker, as the hooks run there.
	players := map[string]interest.ID{}
	inPortal := map[string]bool{}
	gen := 0 // counts the changes to both, for the checkpoints' cache
	cfg.Join = func(w *interest.World, player string) (interest.ID, error) {
		id, err := spawn(w, player, nil)
		if err == nil {
			players[player] = id
			gen++
		}
		return id, err
	}
	cfg.Arrive = func(w *interest.World, player string, state []byte) (interest.ID, error) {
		st, err := readPortalState(state)
		if err != nil {
			ws.log.Info("arrival with a state that is not a portal's", "player", player, "err", err)
		}
		id, err := spawn(w, player, st)
		if err == nil {
			players[player] = id
			gen++
		}
		return id, err
	}
	cfg.Leave = func(w *interest.World, player string, id interest.ID) {
		delete(players, player)
		delete(inPortal, player)
		gen++
		w.Despawn(id)
	}
	// The world's players and who stands in a portal go with the world
	// when it moves to another node or comes back from a checkpoint.
	// It is encoded again only when it changed (a world's checkpoint runs
	// on its worker, between two ticks).
	npcs := &wanderers{n: wc.NPCs, rng: rand.New(rand.NewPCG(uint64(len(wc.Name)), 59))}
	var cached []byte
	cachedAt := [3]int{-1}
	cfg.Checkpoint = func(*interest.World) []byte {
		at := [3]int{gen, len(npcs.ids), 0}
		if npcs.spawned {
			at[2] = 1
		}
		if at != cachedAt {
			cached, _ = json.Marshal(servedState{Players: players, InPortal: inPortal, NPCs: npcs.ids, Spawned: npcs.spawned})
			cachedAt = at
		}
		return cached
	}
	cfg.Restore = func(w *interest.World, b []byte) error {
		st, err := decodeStrict[servedState](b, "world state")
		if err != nil {
			return err
		}
		for player, id := range st.Players {
			if k, ok := w.Kind(id); !ok || k != interest.Player {
				return fmt.Errorf("world state: player %q has entity %d, which is not a player of the world", player, id)
			}
		}
		if len(st.NPCs) > maxNPCs {
			return fmt.Errorf("world state: %d NPCs, at most %d", len(st.NPCs), maxNPCs)
		}
		for _, id := range st.NPCs {
			if k, ok := w.Kind(id); !ok || k != interest.NPC {
				return fmt.Errorf("world state: entity %d is not an NPC of the world", id)
			}
		}
		npcs.ids, npcs.spawned, npcs.next = slices.Clone(st.NPCs), st.Spawned, 0
		clear(players)
		clear(inPortal)
		maps.Copy(players, st.Players)
		for player := range st.InPortal {
			if _, ok := players[player]; ok {
				inPortal[player] = true
			}
		}
		gen++
		return nil
	}
	portals, name := wc.Portals, wc.Name
	if len(portals) > 0 || wc.NPCs > 0 {
		cfg.Tick = func(w *interest.World, _ time.Time) {
			npcs.tick(w)
			for player, id := range players {
				lg, ok := w.Logic(id)
				if !ok {
					continue
				}
				i := slices.IndexFunc(portals, func(p portalConfig) bool { return p.contains(lg.Pos) })
				switch {
				case i < 0 && inPortal[player]:
					delete(inPortal, player)
					gen++
				case i < 0:
				case !inPortal[player]:
					inPortal[player] = true
					gen++
					if ew, ok := ws.srv.World(name); ok {
						ws.enter(ew, player, portals[i], lg)
					}
				}
			}
		}
	}
	return cfg
}

// servedState is a served world's own state in its checkpoints: its
// players' entities, those standing in a portal, and its NPCs.
type servedState struct {
	Players  map[string]interest.ID `json:"players"`
	InPortal map[string]bool        `json:"in_portal,omitempty"`
	NPCs     []interest.ID          `json:"npcs,omitempty"`
	Spawned  bool                   `json:"spawned,omitempty"` // the NPCs were spawned once
}

// wanderers are a world's wandering NPCs; owned by its worker.
type wanderers struct {
	n       int
	spawned bool
	ids     []interest.ID
	next    int // the next to walk somewhere
	rng     *rand.Rand
}

// npcWalk is how far an NPC walks at most, and its speed.
const (
	npcWalk  = 600
	npcSpeed = 30
)

// tick spawns the NPCs on the world's first frame, and sends one in
// every 32 somewhere near it.
func (n *wanderers) tick(w *interest.World) {
	c := w.Config()
	size := interest.Vec{X: int32(c.Width * c.RegionSize), Y: int32(c.Height * c.RegionSize)}
	if !n.spawned {
		n.spawned = true
		for i := range n.n {
			p := interest.Vec{X: n.rng.Int32N(size.X), Y: n.rng.Int32N(size.Y)}
			id, err := w.Spawn(interest.NPC, interest.Logic{Pos: p, Dest: p, Life: 100}, interest.Display{Name: fmt.Sprintf("npc-%d", i)})
			if err != nil {
				break // the world is full of entities
			}
			n.ids = append(n.ids, id)
		}
	}
	for range len(n.ids)/32 + 1 {
		if len(n.ids) == 0 {
			return
		}
		n.next %= len(n.ids)
		id := n.ids[n.next]
		n.next++
		lg, ok := w.Logic(id)
		if !ok {
			continue
		}
		d := interest.Vec{X: lg.Pos.X + n.rng.Int32N(2*npcWalk) - npcWalk, Y: lg.Pos.Y + n.rng.Int32N(2*npcWalk) - npcWalk}
		d.X, d.Y = min(max(d.X, 0), size.X-1), min(max(d.Y, 0), size.Y-1)
		w.Move(id, d, npcSpeed)
	}
}

// readPortalState reads the state a transfer carries here (from another
// node, over NATS): a portal's, or nil for none (a player booked in by a
// game server); what is not a portal's state is refused.
func readPortalState(b []byte) (*portalState, error) {
	if len(b) == 0 {
		return nil, nil
	}
	st, err := decodeStrict[portalState](b, "portal state")
	if err != nil {
		return nil, err
	}
	return &st, nil
}

// spawn places a player: at the portal's arrival point with its life and
// mana when it came through one, else at the map's centre.
func spawn(w *interest.World, player string, st *portalState) (interest.ID, error) {
	c := w.Config()
	lg := interest.Logic{Pos: interest.Vec{X: int32(c.Width * c.RegionSize / 2), Y: int32(c.Height * c.RegionSize / 2)}, Life: 100, Mana: 100}
	if st != nil {
		p := interest.Vec{X: st.X, Y: st.Y}
		if p.X >= 0 && p.Y >= 0 && int(p.X) < c.Width*c.RegionSize && int(p.Y) < c.Height*c.RegionSize {
			lg.Pos = p
		}
		if st.Life > 0 {
			lg.Life, lg.Mana = st.Life, st.Mana
		}
	}
	lg.Dest = lg.Pos
	name := player
	if len(name) > interest.MaxName {
		name = name[:interest.MaxName]
	}
	return w.Spawn(interest.Player, lg, interest.Display{Name: name})
}

// enter sends player through portal p.
func (ws *worlds) enter(w *engine.World, player string, p portalConfig, lg interest.Logic) {
	state, _ := json.Marshal(portalState{X: p.At[0], Y: p.At[1], Life: lg.Life, Mana: lg.Mana})
	var to engine.Destination
	if n := ws.node.Load(); n != nil {
		req := cluster.JoinRequest{World: p.To, Map: p.Map}
		if mc := ws.maps[p.Map]; mc != nil {
			req.NewLine = lineRequest(mc)
		}
		to = n.Destination(req)
	} else if dw, ok := ws.srv.World(p.To); ok {
		to = dw.Destination()
	} else {
		ws.log.Warn("portal to a world this server does not have", "world", w.Name(), "to", p.To)
		return
	}
	err := w.Transfer(player, to, state, func(err error) {
		if err != nil {
			ws.log.Info("portal: the player stays", "world", w.Name(), "player", player, "err", err)
			return
		}
		ws.log.Info("portal: moved", "player", player, "from", w.Name(), "to", firstNonEmpty(p.To, p.Map))
	})
	if err != nil {
		ws.log.Info("portal: the world is closing", "world", w.Name(), "player", player, "err", err)
	}
}

// lineRequest is the request for a new line of map mc.
func lineRequest(mc *worldConfig) cluster.WorldRequest {
	cfg, _ := json.Marshal(mc)
	return cluster.WorldRequest{Cap: mc.Cap, Config: cfg}
}

// make is the cluster's world maker: the request's config is a world
// entry of the config file.
func (ws *worlds) make(req cluster.WorldRequest) (engine.WorldConfig, error) {
	wc, err := decodeWorldConfig(req.Config)
	if err != nil {
		return engine.WorldConfig{}, err
	}
	wc.Name = req.World
	if err := wc.check(true); err != nil {
		return engine.WorldConfig{}, err
	}
	cfg := ws.engineConfig(&wc)
	cfg.MaxPlayers = req.Cap
	return cfg, nil
}

// decodeWorldConfig reads the configuration a cluster's world request
// carries (over NATS): a world entry of the config file, unknown keys
// refused; none is the defaults.
func decodeWorldConfig(b []byte) (worldConfig, error) {
	return decodeStrict[worldConfig](b, "world config")
}

// placeFromConfig places the config's worlds, and the first lines of its
// maps, on the cluster: whichever node takes each. A name another process
// of the same config placed first is left to it.
func placeFromConfig(ctx context.Context, cl *clusterNode, cfg *serveConfig, log *slog.Logger) error {
	var reqs []cluster.WorldRequest
	for i := range cfg.Worlds {
		wc := cfg.Worlds[i]
		b, _ := json.Marshal(wc)
		cp := wc.Cap
		if cp == 0 {
			cp = defaultLineCap
		}
		reqs = append(reqs, cluster.WorldRequest{World: wc.Name, Cap: cp, Config: b})
	}
	for i := range cfg.Maps {
		mc := &cfg.Maps[i]
		for n := 1; n <= max(mc.Lines, 1); n++ {
			r := lineRequest(mc)
			r.World = cluster.Line(mc.Map, n)
			reqs = append(reqs, r)
		}
	}
	var errs []error
	for _, r := range reqs {
		if _, ok := cl.node.Directory().LocateWorld(r.World); ok {
			continue
		}
		p, err := cluster.CreateWorld(ctx, cl.nc, r, cl.opts)
		switch {
		case errors.Is(err, cluster.ErrRefused):
			log.Info("cluster: world placed by another node", "world", r.World, "err", err)
		case err != nil:
			errs = append(errs, fmt.Errorf("world %q: %w", r.World, err))
		default:
			log.Info("cluster: world placed", "world", r.World, "node", p.Node)
		}
	}
	return errors.Join(errs...)
}

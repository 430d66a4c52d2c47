package world

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/internal/hugepage"
)

// npcZone is the side, in regions, of a zone of NPC templates.
const npcZone = 8

// citySide is a city's side in regions: 2,560 city players over four
// cities of 12 x 12 regions is the seed's 4-6 players a region.
const citySide = 12

// wplayer is a player of the model: its client, its state machine, the
// bytes each server sent it and, when sampled, what the baseline's
// client knows and the discovery episodes it has open.
type wplayer struct {
	id      interest.ID
	c       *interest.Client
	city    int // -1: field
	spot    interest.Vec
	state   int
	until   int
	target  interest.ID
	nextHit int
	life    int
	sampled bool
	reg     interest.Region
	index   int32 // in worldSim.players

	bytes, upBytes, baseBytes int64

	knows map[interest.ID]*baseKnown // baseline knowledge (sampled players)
	open  []*episode
}

// baseKnown is an entity the baseline's client of a sampled player knows.
type baseKnown struct {
	from int // frame from which the client knows it
	doom int
}

// wnpc is an NPC of the model.
type wnpc struct {
	id      interest.ID
	home    interest.Vec
	next    int
	fighter interest.ID // the player fighting it
	nextHit int
	life    int
	rise    int // frame it rises again, when dead
}

// worldSim is the in-memory scenario: the world, the baseline fed the
// same commands, the players' clients, the links between them, and
// what the run measures.
type worldSim struct {
	o      worldOpts
	cfg    interest.Config
	w      *interest.World
	base   *jx1
	rng    *rand.Rand
	start  time.Time
	frame  int
	period time.Duration
	cities [4][2]interest.Region // min and max region of each city

	players  []*wplayer
	npcs     []*wnpc
	byPlayer []*wplayer // by entity ID
	byNPC    []*wnpc
	// The players' IDs run on from firstPlayer in the order of players, so
	// that the Sender finds a player's index without loading the player.
	firstPlayer interest.ID

	down, up    *link
	batch       []interest.Uplink // a frame's uplinks, for World.DeliverAll
	measuring   bool
	pending     []jxCmd // player commands on their way up, for the baseline
	playerCross int64
	episodes    []*episode
	epEmpt      int
	huge        hugepage.Advisor
	groups      []groupState // -groups: by entity ID
}

// SendUnreliable and SendReliable are the world's Sender: the packet is
// put on the player's downlink (and counted against the player after the
// tick, which the transport's work does not include).
func (s *worldSim) SendUnreliable(id interest.ID, msg []byte) error {
	s.down.push(s.frame, int32(id-s.firstPlayer), msg)
	return nil
}

func (s *worldSim) SendReliable(id interest.ID, msg []byte) error { return s.SendUnreliable(id, msg) }

// newWorldSim makes the world and its baseline and fills both: the NPCs
// first, then the players, each with its client.
func newWorldSim(o worldOpts) (*worldSim, error) {
	s := &worldSim{o: o, rng: rand.New(rand.NewPCG(o.seed, 0x6000)), start: time.Unix(1e9, 0)}
	for i := range s.cities {
		cx, cy := 6+40*(i%2), 6+40*(i/2)
		s.cities[i] = [2]interest.Region{{X: cx, Y: cy}, {X: cx + citySide - 1, Y: cy + citySide - 1}}
	}
	s.cfg = interest.Config{City: func(r interest.Region) bool { return s.cityOf(r) >= 0 }, ForcedSync: o.forced}
	if o.groups {
		s.cfg.Groups = seedGroups()
	}
	w, err := interest.NewWorld(s.cfg, s.start, s)
	if err != nil {
		return nil, err
	}
	s.w, s.cfg = w, w.Config()
	s.period = s.cfg.Period()
	s.down, s.up = newLink(o.delay), newLink(max(o.delay, 1))
	s.base = newJX1(s.cfg)
	n := o.players + o.npcs + 1
	s.byPlayer, s.byNPC = make([]*wplayer, n), make([]*wnpc, n)
	s.base.sampled = make([]bool, n)
	s.base.heard = s.heard
	if err := s.spawnNPCs(); err != nil {
		return nil, err
	}
	if err := s.spawnPlayers(); err != nil {
		return nil, err
	}
	if o.groups {
		if err := s.initGroups(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// spawnNPCs places -npcs NPCs uniformly over the map, in the world and in
// the baseline, each from one of its zone's templates.
func (s *worldSim) spawnNPCs() error {
	// NPC templates: each of the 8 names in 8 looks, a camp each; every
	// 8x8-region zone of the map spawns from 4 of them.
	names := []string{"野狼", "山贼", "巡逻卫兵", "药铺掌柜", "毒蛇", "恶霸", "流寇头目", "黑熊"}
	var templates []interest.Display
	for _, name := range names {
		for range 8 {
			templates = append(templates, interest.Display{Appearance: s.rng.Uint32(), Name: name, Camp: uint8(s.rng.IntN(4))})
		}
	}
	zoneW := (s.cfg.Width + npcZone - 1) / npcZone
	zones := make([][4]int, zoneW*((s.cfg.Height+npcZone-1)/npcZone))
	for i := range zones {
		for j := range zones[i] {
			zones[i][j] = s.rng.IntN(len(templates))
		}
	}
	for range s.o.npcs {
		pos := s.randIn(interest.Region{}, interest.Region{X: s.cfg.Width - 1, Y: s.cfg.Height - 1})
		lg := interest.Logic{Pos: pos, Life: 100, Mana: 100}
		r := s.w.RegionOf(pos)
		d := templates[zones[r.Y/npcZone*zoneW+r.X/npcZone][s.rng.IntN(4)]]
		id, err := s.w.Spawn(interest.NPC, lg, d)
		if err != nil {
			return err
		}
		s.base.spawn(id, false, lg, d.Camp)
		npc := &wnpc{id: id, home: pos, next: s.rng.IntN(16 * s.cfg.Hz), life: 100}
		s.npcs = append(s.npcs, npc)
		s.byNPC[id] = npc
	}
	return nil
}

// spawnPlayers places -players players, 40% in the cities and the rest
// in the field in parties of 5, in the world and in the baseline, joins
// each to the world and gives it a client.
func (s *worldSim) spawnPlayers() error {
	w := s.w
	city := s.o.players * 2 / 5
	var spot interest.Vec
	for i := range s.o.players {
		p := &wplayer{city: -1, life: 100, sampled: i%s.o.sample == 0}
		var pos interest.Vec
		if i < city {
			p.city = i % len(s.cities)
			pos = s.randIn(s.cities[p.city][0], s.cities[p.city][1])
		} else {
			if (i-city)%5 == 0 {
				spot = s.fieldPos()
			}
			p.spot = spot
			pos = s.clamp(s.around(spot, s.cfg.RegionSize))
		}
		lg := interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100}
		d := interest.Display{Appearance: s.rng.Uint32(), Name: fmt.Sprintf("侠客%04d", i), Camp: uint8(s.rng.IntN(4))}
		id, err := w.Spawn(interest.Player, lg, d)
		if err != nil {
			return err
		}
		if i == 0 {
			s.firstPlayer = id
		} else if id != s.firstPlayer+interest.ID(i) {
			return fmt.Errorf("bench world: player %d got ID %d, not %d: the IDs after the NPCs' are not in order", i, id, s.firstPlayer+interest.ID(i))
		}
		s.base.spawn(id, true, lg, d.Camp)
		if err := w.Join(id); err != nil {
			return err
		}
		if p.c, err = interest.NewClient(s.cfg, id); err != nil {
			return err
		}
		p.id, p.reg, p.until, p.index = id, w.RegionOf(pos), s.rng.IntN(4*s.cfg.Hz), int32(len(s.players))
		if p.sampled {
			p.knows = map[interest.ID]*baseKnown{}
			s.base.sampled[id] = true
		}
		s.players = append(s.players, p)
		s.byPlayer[id] = p
	}
	return nil
}

// cityOf returns the city that region r is in, or -1 in the field.
func (s *worldSim) cityOf(r interest.Region) int {
	for i, c := range s.cities {
		if r.X >= c[0].X && r.X <= c[1].X && r.Y >= c[0].Y && r.Y <= c[1].Y {
			return i
		}
	}
	return -1
}

// randIn returns a random position inside the regions lo..hi.
func (s *worldSim) randIn(lo, hi interest.Region) interest.Vec {
	rs := s.cfg.RegionSize
	return interest.Vec{
		X: int32(lo.X*rs + s.rng.IntN((hi.X-lo.X+1)*rs)),
		Y: int32(lo.Y*rs + s.rng.IntN((hi.Y-lo.Y+1)*rs)),
	}
}

// fieldPos returns a random position on the map outside the cities.
func (s *worldSim) fieldPos() interest.Vec {
	for {
		p := s.randIn(interest.Region{}, interest.Region{X: s.cfg.Width - 1, Y: s.cfg.Height - 1})
		if s.cityOf(s.w.RegionOf(p)) < 0 {
			return p
		}
	}
}

// around returns a random point within d units of p on each axis.
func (s *worldSim) around(p interest.Vec, d int) interest.Vec {
	return interest.Vec{X: p.X + int32(s.rng.IntN(2*d+1)-d), Y: p.Y + int32(s.rng.IntN(2*d+1)-d)}
}

// clamp keeps p on the map.
func (s *worldSim) clamp(p interest.Vec) interest.Vec {
	hi := s.cfg.Bounds()
	p.X = min(max(p.X, 0), hi.X)
	p.Y = min(max(p.Y, 0), hi.Y)
	return p
}

// clampTo keeps p within d units of q on each axis (a move's reach).
func clampTo(p, q interest.Vec, d int32) interest.Vec {
	p.X = min(max(p.X, q.X-d), q.X+d)
	p.Y = min(max(p.Y, q.Y-d), q.Y+d)
	return p
}

// secs returns a random number of frames from lo to hi seconds.
func (s *worldSim) secs(lo, hi float64) int {
	return int((lo + s.rng.Float64()*(hi-lo)) * float64(s.cfg.Hz))
}

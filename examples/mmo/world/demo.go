// Package world is the server half of the interest-mode MMO demo: it fills
// an interest.World with thousands of wandering NPCs and a few bot
// players, and spawns human players in its cities. It has no networking:
// the engine (or the offline mode) calls Tick on the world's goroutine
// before each World.Tick, and routes the world's packets through the Demo
// (a Sender) so that bot packets reach the bots' own clients.
//
// NPC AI is cheap by design: an NPC walks to a random point near its home
// at its kind's speed, pauses, and walks again; a timer wheel wakes only
// the NPCs whose walk or pause ends this frame, so a frame costs work in
// proportion to the NPCs that change plan, not to the population.
//
// Bots are players with real interest.Clients, in process: they hear the
// world through its packets, move and use skills through their clients'
// uplink (validated by the world like any player's), and fight the wild
// NPCs near them. The Demo resolves every player's strike the world
// accepts (World.OnAction), bots' and humans' alike: the NPC loses life,
// both are in combat, and a dead NPC respawns at home.
package world

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// Defaults.
const (
	DefaultNPCs = 4000
	DefaultBots = 16
)

// Config describes a demo world.
type Config struct {
	// Interest configures the world New builds; see InterestConfig for
	// the demo's defaults (a 64 x 64 region map with five cities).
	// Ignored when World is set.
	Interest interest.Config
	// World, when set, is the world to populate instead of building one.
	// Its Sender must hand the packets for players it does not serve
	// (the bots) to the Demo's SendUnreliable and SendReliable, and
	// Sender below must then be nil.
	World *interest.World
	// Start is when the world New builds starts (frame 0).
	Start time.Time
	// Sender carries the packets for human players. The Demo is the
	// built world's Sender: it keeps the bots' packets and passes the rest
	// here.
	Sender interest.Sender
	// NPCs is how many NPCs to spawn: 0 means DefaultNPCs, a negative
	// number none.
	NPCs int
	// Bots is how many bot players to spawn: 0 means DefaultBots, a
	// negative number none.
	Bots int
	// Seed seeds the population and every random choice of NPCs and bots:
	// the same seed, configuration and sequence of Tick times give the
	// same world.
	Seed uint64
}

// Stats counts what the demo did.
type Stats struct {
	NPCs, Bots, Players int
	Walks               int64 // NPC walks started
	BotMoves            int64 // moves sent by bots' clients
	BotSkills           int64 // skills used by bots
	Strikes             int64 // strikes the world accepted and the Demo resolved, bots' and humans'
	HumanStrikes        int64 // of those, human players'
	Kills               int64 // NPCs killed by players (and respawned at home)
	// BotRefused counts bot uplink packets the world refused in part:
	// requests about entities that had just left the bot's range, which
	// its client retries a few times before it gives up.
	BotRefused int64
}

// Demo is a populated demo world. Like the interest.World it drives, it
// belongs to one goroutine: call its methods, including the Sender ones
// the world calls, from the world's goroutine only.
type Demo struct {
	w      *interest.World
	wc     interest.Config
	out    interest.Sender
	cities []City
	rng    *rand.Rand
	now    time.Time
	upm    float64 // world units per metre

	npcs   []npc
	byID   map[interest.ID]int32 // NPC index by entity ID
	wheel  [wheelSize][]timer
	spare  []timer
	done   int // last frame whose timers fired
	bots   []*bot
	botIDs map[interest.ID]*bot
	humans map[interest.ID]bool
	stats  Stats
}

// New builds (or takes) the world and populates it.
func New(cfg Config) (*Demo, error) {
	d := &Demo{out: cfg.Sender, rng: rand.New(rand.NewPCG(cfg.Seed, 0x6d6d6f)), now: cfg.Start,
		byID: map[interest.ID]int32{}, botIDs: map[interest.ID]*bot{}, humans: map[interest.ID]bool{}}
	if cfg.World != nil {
		if cfg.Sender != nil {
			return nil, fmt.Errorf("mmo: Config.Sender with Config.World: the world's own Sender must route to the Demo")
		}
		d.w = cfg.World
	} else {
		w, err := interest.NewWorld(InterestConfig(cfg.Interest), cfg.Start, d)
		if err != nil {
			return nil, fmt.Errorf("mmo: %w", err)
		}
		d.w = w
	}
	d.w.OnAction(d.onAction)
	d.wc = d.w.Config()
	d.cities = Cities(d.wc.Width, d.wc.Height)
	if d.wc.City != nil { // a given world may mark other regions
		kept := d.cities[:0]
		for _, c := range d.cities {
			if d.wc.City(c.Min) {
				kept = append(kept, c)
			}
		}
		d.cities = kept
	}
	d.upm = float64(d.wc.RegionSize) / 16
	d.done = d.w.Frame()
	nNPC, nBot := count(cfg.NPCs, DefaultNPCs), count(cfg.Bots, DefaultBots)
	if err := d.populate(nNPC); err != nil {
		return nil, err
	}
	for i := range nBot {
		if err := d.spawnBot(i); err != nil {
			return nil, err
		}
	}
	return d, nil
}

func count(n, def int) int {
	switch {
	case n == 0:
		return def
	case n < 0:
		return 0
	}
	return n
}

// World returns the world the demo drives.
func (d *Demo) World() *interest.World { return d.w }

// Cities returns the world's cities.
func (d *Demo) Cities() []City { return d.cities }

// Stats returns the demo's counters.
func (d *Demo) Stats() Stats {
	s := d.stats
	s.NPCs, s.Bots, s.Players = len(d.npcs), len(d.bots), len(d.humans)
	return s
}

// Tick drives NPCs and bots up to the world's current frame. Call it on
// the world's goroutine just before World.Tick(now), with the same now.
func (d *Demo) Tick(now time.Time) {
	d.now = now
	f := d.w.Frame()
	from := max(d.done+1, f-wheelSize+1)
	for g := from; g <= f; g++ {
		d.fire(g, f)
	}
	d.done = f
	for _, b := range d.bots {
		d.drive(b, now, f)
	}
}

// SpawnPlayer spawns a human player in one of the cities, with name as
// its display name (empty: "guest"), and attaches a client to it
// (World.Join): the world sends its packets to Config.Sender under the
// returned ID.
func (d *Demo) SpawnPlayer(name string) (interest.ID, error) {
	if name == "" {
		name = "guest"
	}
	lo, hi := d.spawnArea()
	pos := d.randIn(lo, hi)
	camp := CampHaoqi + uint8(len(d.humans)%2)
	id, err := d.w.Spawn(interest.Player, interest.Logic{Pos: pos, Dest: pos, Life: 100, Mana: 100},
		interest.Display{Appearance: LookPlayer, Name: name, Camp: camp})
	if err != nil {
		return 0, fmt.Errorf("mmo: spawn player: %w", err)
	}
	if err := d.w.Join(id); err != nil {
		_ = d.w.Despawn(id)
		return 0, fmt.Errorf("mmo: join player: %w", err)
	}
	d.humans[id] = true
	return id, nil
}

// Despawn removes a human player spawned by SpawnPlayer.
func (d *Demo) Despawn(id interest.ID) error {
	if !d.humans[id] {
		return fmt.Errorf("%w: %d", ErrNotPlayer, id)
	}
	delete(d.humans, id)
	return d.w.Despawn(id)
}

// spawnArea returns a random city's extent, or the middle region of a map
// with no city.
func (d *Demo) spawnArea() (lo, hi interest.Vec) {
	if len(d.cities) > 0 {
		return d.cities[d.rng.IntN(len(d.cities))].Bounds(d.wc.RegionSize)
	}
	c := City{Min: interest.Region{X: d.wc.Width / 2, Y: d.wc.Height / 2}}
	c.Max = c.Min
	return c.Bounds(d.wc.RegionSize)
}

// SendUnreliable routes a world packet: a bot's to its client, any other
// to Config.Sender. It implements interest.Sender.
func (d *Demo) SendUnreliable(player interest.ID, msg []byte) error {
	if b := d.botIDs[player]; b != nil {
		return b.c.Deliver(d.now, msg)
	}
	if d.out == nil {
		return ErrNoRoute
	}
	return d.out.SendUnreliable(player, msg)
}

// SendReliable routes a reliable world packet, like SendUnreliable.
func (d *Demo) SendReliable(player interest.ID, msg []byte) error {
	if b := d.botIDs[player]; b != nil {
		return b.c.Deliver(d.now, msg)
	}
	if d.out == nil {
		return ErrNoRoute
	}
	return d.out.SendReliable(player, msg)
}

// randIn returns a random position in the box lo..hi.
func (d *Demo) randIn(lo, hi interest.Vec) interest.Vec {
	return interest.Vec{
		X: lo.X + int32(d.rng.IntN(int(hi.X-lo.X)+1)),
		Y: lo.Y + int32(d.rng.IntN(int(hi.Y-lo.Y)+1)),
	}
}

// box returns the box of half-side r units around p, clipped to lo..hi.
func box(p interest.Vec, r int32, lo, hi interest.Vec) (interest.Vec, interest.Vec) {
	return interest.Vec{X: max(p.X-r, lo.X), Y: max(p.Y-r, lo.Y)},
		interest.Vec{X: min(p.X+r, hi.X), Y: min(p.Y+r, hi.Y)}
}

// mapBounds returns the lowest and highest positions on the map.
func (d *Demo) mapBounds() (lo, hi interest.Vec) {
	return interest.Vec{}, d.wc.Bounds()
}

// speed converts metres a second to units a frame, within the world's
// bounds.
func (d *Demo) speed(mps float64) int32 {
	return int32(min(max(mps*d.upm/float64(d.wc.Hz)+0.5, 1), float64(d.wc.MaxSpeed)))
}

// frames converts a duration to frames, at least one.
func (d *Demo) frames(t time.Duration) int {
	return max(1, int(t*time.Duration(d.wc.Hz)/time.Second))
}

// randDur returns a random duration in r.
func (d *Demo) randDur(r [2]time.Duration) time.Duration {
	return r[0] + time.Duration(d.rng.Int64N(int64(r[1]-r[0])+1))
}

// walkFrames estimates the frames a walk from a to b at speed takes.
func walkFrames(a, b interest.Vec, speed int32) int {
	dist := isqrt(a.DistSq(b))
	return int((dist+int64(speed)-1)/int64(speed)) + 1
}

// limit pulls dest toward from so that it is at most maxMove away.
func limit(from, dest interest.Vec, maxMove int) interest.Vec {
	m := int64(maxMove)
	dsq := from.DistSq(dest)
	if dsq <= m*m {
		return dest
	}
	dist := isqrt(dsq)
	dx, dy := int64(dest.X-from.X), int64(dest.Y-from.Y)
	return interest.Vec{X: from.X + int32(dx*m/dist), Y: from.Y + int32(dy*m/dist)}
}

func isqrt(n int64) int64 {
	if n <= 0 {
		return 0
	}
	r := int64(1)
	for r*r <= n {
		r <<= 1
	}
	lo, hi := r>>1, r
	for lo+1 < hi {
		mid := (lo + hi) / 2
		if mid*mid <= n {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

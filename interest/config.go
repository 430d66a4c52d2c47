package interest

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Defaults: regions 16 m on a side (1024 units: a unit is 1/64 m), a
// 64 x 64 region map (15-bit coordinates), 16 frames a second, 16 m/s top
// speed (64 units a frame).
const (
	DefaultRegionSize  = 1024
	DefaultWidth       = 64
	DefaultHeight      = 64
	DefaultHz          = 16
	DefaultMaxEntities = 1 << 16
	DefaultForcedSync  = 2 * time.Second
	DefaultHistory     = 10 * time.Second
	DefaultTolerance   = 32
	DefaultMaxSpeed    = 64
	DefaultTickBudget  = 160
	DefaultDiscovery   = 512
	DefaultMagicBits   = 8
	DefaultMaxCustom   = 64
	DefaultMaxAhead    = 2
	DefaultMaxRewind   = 500 * time.Millisecond

	// MaxPacket is the largest packet the world sends on the unreliable
	// channel: codec.MaxPacket, one SCTP chunk.
	MaxPacket = codec.MaxPacket
)

// Config describes a world. The zero value of every field means its
// default; see WithDefaults.
type Config struct {
	// RegionSize is a region's side in world units.
	RegionSize int
	// Width and Height are the map's size in regions. Coordinates take
	// the bits the map's size in units needs: 15 for 64 x 64 regions of
	// 1024 units, up to 24 for larger maps.
	Width, Height int
	// Hz is the world's frame rate.
	Hz int
	// MaxEntities bounds the entity IDs (1 .. MaxEntities-1), and so the
	// bits an ID takes on the wire.
	MaxEntities int

	// ForcedSync is how long after a player's range takes in a region the
	// world sends it the entities there that have not broadcast since.
	// Default: 2 s less a frame, so that on a clean link the client holds
	// them within 2 s. A region on a moving player's path is synced
	// earlier: Lead before the player is due to reach it.
	ForcedSync time.Duration
	// Lead is how long before a mover reaches a region ahead of it that
	// the region's forced sync is sent. Default ForcedSync/2.
	Lead time.Duration

	// History is how far back the world keeps each player's positions to
	// validate its moves against.
	History time.Duration
	// Tolerance is how far, in units, a move's source position may be
	// from the world's record for that frame and still be accepted.
	Tolerance int
	// MaxSpeed is the fastest speed in units per frame a player may ask
	// for (default 64: 16 m/s at 16 Hz, a unit being 1/64 m).
	MaxSpeed int
	// MaxMove bounds how far a move's destination may be from its source,
	// in units. Default 4 regions.
	MaxMove int
	// MaxAhead is how many frames ahead of the world a client's command
	// may be stamped and still be caught up to rather than dropped.
	MaxAhead int
	// MaxRewind bounds lag compensation: how far before the world's frame
	// an action's view (Action.View) may be when it arrives. A view
	// claimed older is taken as this old, so that a cheater cannot act on
	// the past. Default 500 ms: a round trip of 150 ms and the most
	// render delay a client learns (RenderOptions.MaxDelay, 350 ms), the
	// worst of both together. Server-only.
	MaxRewind time.Duration

	// TickBudget is the bytes a client may be sent per frame: broadcast
	// commands first, then forced sync, discovery answers, state sync and
	// repairs in the order of their accumulated priority. A burst (a
	// region crossing) is spread over frames under it, but never past
	// the 2 s in which a client must know its range: when the broadcasts
	// of a crowd leave too little of the budget, a forced sync or a
	// discovery answer takes what it needs to make its time, up to eight
	// times the budget.
	TickBudget int
	// DiscoveryRate is how many discovery and display requests a client
	// has answered per second (a second's worth at once); more are
	// dropped and counted. The default, 512, lets a player who runs into
	// a fight of 300 ask for every one of them, logic and display data,
	// within the 2 s.
	DiscoveryRate int

	// Policy sets the state-sync rates.
	Policy Policy
	// City reports whether a region is a city, for the policy. Nil means
	// no region is.
	City func(r Region) bool

	// MagicBits is the width of the visible magic state.
	MagicBits int
	// MaxCustom bounds a game-defined command's payload in bytes.
	MaxCustom int
	// LeaveMessages sends an explicit leave message when an entity leaves
	// a client's range, for clients that do not run the client half's
	// removal rules. Off by default: the client half removes on its own.
	LeaveMessages bool
	// IDStride and IDOffset share the entity IDs among the cells of one
	// map cut over several processes (Border): this world gives the
	// entities it spawns IDs equal to IDOffset modulo IDStride, so that an
	// entity keeps its ID in every cell it crosses into. Default 1 and 0:
	// every ID. Server-only.
	IDStride, IDOffset int

	// Groups are the entity fields the game declares beyond Logic and
	// Display, each sent at its own pace (Group): at most MaxGroups. The
	// clients hold the same (the engine's welcome carries them).
	Groups []Group
}

// WithDefaults returns c with every zero field set to its default:
// RegionSize 1024 units, a map of 64 x 64 regions, Hz 16, MaxSpeed 64
// units a frame, MaxMove 4 regions, Tolerance 32 units, MaxAhead 2
// frames, ForcedSync 2 s less a frame, Lead half of ForcedSync, History
// 10 s, MaxEntities 65,536, TickBudget 160, DiscoveryRate 512, MagicBits 8,
// MaxCustom 64 and DefaultPolicy (the Default constants).
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.RegionSize, DefaultRegionSize)
	def(&c.Width, DefaultWidth)
	def(&c.Height, DefaultHeight)
	def(&c.Hz, DefaultHz)
	def(&c.MaxEntities, DefaultMaxEntities)
	def(&c.Tolerance, DefaultTolerance)
	def(&c.MaxSpeed, DefaultMaxSpeed)
	def(&c.MaxMove, 4*c.RegionSize)
	def(&c.MaxAhead, DefaultMaxAhead)
	def(&c.TickBudget, DefaultTickBudget)
	def(&c.DiscoveryRate, DefaultDiscovery)
	def(&c.MagicBits, DefaultMagicBits)
	def(&c.MaxCustom, DefaultMaxCustom)
	def(&c.IDStride, 1)
	if c.ForcedSync == 0 {
		// A frame early, so that the sync reaches the client within the
		// 2 s the client's removal rules allow, not one frame after.
		c.ForcedSync = DefaultForcedSync - c.Period()
	}
	if c.Lead == 0 {
		c.Lead = c.ForcedSync / 2
	}
	if c.History == 0 {
		c.History = DefaultHistory
	}
	if c.MaxRewind == 0 {
		c.MaxRewind = DefaultMaxRewind
	}
	if len(c.Policy.Rules) == 0 {
		c.Policy = DefaultPolicy()
	}
	return c
}

// Validate reports a configuration that cannot work.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.RegionSize < 2 || c.RegionSize > 1<<16:
		return bad("region size %d out of 2..65536", c.RegionSize)
	case c.Width < 1 || c.Height < 1 || c.Width > 4096 || c.Height > 4096:
		return bad("map of %dx%d regions out of 1..4096", c.Width, c.Height)
	case bits.Len(uint(c.Width*c.RegionSize-1)) > 24 || bits.Len(uint(c.Height*c.RegionSize-1)) > 24:
		return bad("map of %dx%d units needs over 24 bits a coordinate", c.Width*c.RegionSize, c.Height*c.RegionSize)
	case c.Hz < 1 || c.Hz > 128:
		return bad("frame rate %d out of 1..128", c.Hz)
	case c.MaxEntities < 2 || c.MaxEntities > 1<<24:
		return bad("max entities %d out of 2..2^24", c.MaxEntities)
	case c.IDStride < 1 || c.IDOffset < 0 || c.IDOffset >= c.IDStride || c.IDStride >= c.MaxEntities:
		return bad("entity IDs offset %d of stride %d (max entities %d)", c.IDOffset, c.IDStride, c.MaxEntities)
	case c.ForcedSync < 0 || c.Lead < 0:
		return bad("negative forced-sync delay")
	case c.History < c.Period() || c.History > 10*time.Minute:
		return bad("history %v out of one frame..10m", c.History)
	case c.Tolerance < 0 || c.MaxSpeed < 1 || c.MaxSpeed > 1<<16 || c.MaxMove < 1 || c.MaxMove > 1<<24:
		return bad("movement bounds (tolerance %d, speed %d, move %d)", c.Tolerance, c.MaxSpeed, c.MaxMove)
	case c.MaxRewind < 0 || c.MaxRewind > c.History:
		return bad("max rewind %v out of 0..history (%v)", c.MaxRewind, c.History)
	case c.MaxAhead < 0 || c.MaxAhead > 64:
		return bad("max ahead %d out of 0..64", c.MaxAhead)
	case c.TickBudget < 64 || c.TickBudget > MaxPacket:
		return bad("tick budget %d out of 64..%d", c.TickBudget, MaxPacket)
	case c.DiscoveryRate < 1:
		return bad("discovery rate %d", c.DiscoveryRate)
	case c.MagicBits < 0 || c.MagicBits > 32:
		return bad("magic state of %d bits out of 0..32", c.MagicBits)
	case c.MaxCustom < 0 || c.MaxCustom > 512:
		return bad("custom payload %d out of 0..512", c.MaxCustom)
	}
	if err := validateGroups(&c); err != nil {
		return err
	}
	return c.Policy.validate()
}

// frames converts a duration to whole frames, rounding up.
func (c Config) frames(d time.Duration) int {
	p := c.Period()
	return int((d + p - 1) / p)
}

// Period is the time between frames.
func (c Config) Period() time.Duration { return time.Second / time.Duration(c.Hz) }

// Bounds returns the map's far corner: the largest coordinate on each
// axis. Positions on the map run from 0 to it, both included.
func (c Config) Bounds() Vec {
	return Vec{X: int32(c.Width*c.RegionSize - 1), Y: int32(c.Height*c.RegionSize - 1)}
}

// Match is a policy condition on one property: any value, yes or no.
type Match uint8

// Match values.
const (
	Any Match = iota
	Yes
	No
)

func (m Match) ok(v bool) bool { return m == Any || (m == Yes) == v }

// Rule is one line of a state-sync policy: entities matching all three
// conditions are synced at most Every.
type Rule struct {
	// Target: the entity is the observing player's target.
	Target Match
	// Combat: the entity is in combat.
	Combat Match
	// City: the entity is in a city region.
	City Match
	// Every is the period between syncs of an entity whose logic data
	// changed. An entity whose logic did not change since its last sync
	// is not resent: commands and loss repair keep clients right.
	Every time.Duration
}

// Policy is a declarative state-sync policy: the first rule
// that matches an entity sets its sync period.
type Policy struct {
	Rules []Rule
}

// DefaultPolicy is an MMO's usual choice: a player's target
// is synced often; fighters often enough to show life bars move; city
// folk, whose life and mana nobody watches, rarely.
func DefaultPolicy() Policy {
	return Policy{Rules: []Rule{
		{Target: Yes, Every: 250 * time.Millisecond},
		{Combat: Yes, City: No, Every: time.Second},
		{Combat: Yes, Every: 2 * time.Second},
		{City: Yes, Every: 15 * time.Second},
		{Every: 5 * time.Second},
	}}
}

func (p Policy) validate() error {
	if len(p.Rules) == 0 || len(p.Rules) > 64 {
		return fmt.Errorf("%w: policy of %d rules out of 1..64", ErrConfig, len(p.Rules))
	}
	last := p.Rules[len(p.Rules)-1]
	if last.Target != Any || last.Combat != Any || last.City != Any {
		return fmt.Errorf("%w: the policy's last rule must match everything", ErrConfig)
	}
	for i, r := range p.Rules {
		if r.Every <= 0 || r.Target > No || r.Combat > No || r.City > No {
			return fmt.Errorf("%w: policy rule %d", ErrConfig, i)
		}
	}
	return nil
}

// period returns the sync period in frames for an entity.
func (c Config) period(target, combat, city bool) int {
	for _, r := range c.Policy.Rules {
		if r.Target.ok(target) && r.Combat.ok(combat) && r.City.ok(city) {
			return max(1, c.frames(r.Every))
		}
	}
	return c.frames(5 * time.Second)
}

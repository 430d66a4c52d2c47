package game

import "github.com/tongbu/tongbu/lockstep/fixed"

// Hz is the frame rate the game is tuned for: every speed and delay below
// is per frame at this rate. Run the lockstep room at Hz.
const Hz = 15

// Player limits.
const (
	MinPlayers = 2
	MaxPlayers = 10
)

// The arena and its rules, in world units (one unit is one pixel of the
// reference view) and frames.
const (
	Width  = 960 // arena width
	Height = 640 // arena height

	PlayerRadius = 14
	PlayerSpeed  = 10 // units a frame (150 a second at 15 Hz)
	MaxHealth    = 100

	ShotRadius = 4
	ShotSpeed  = 30 // units a frame; a shot moves in ShotSubsteps steps, each shorter than PlayerRadius+ShotRadius and the thinnest wall
	ShotLife   = 24 // frames before a shot fades (720 units of range)
	ShotDamage = 20
	Cooldown   = 5 // frames between two shots of one player

	RespawnDelay = 45 // frames a dead player waits (3 s)
	SpawnShield  = 22 // frames a respawned player cannot be hurt, or until it fires

	// ShotSubsteps splits a shot's move per frame so that it cannot pass
	// through a player or a wall between two checks.
	ShotSubsteps = 3

	// MaxShots bounds the shots in flight: each player can have at most
	// ShotLife/Cooldown+1 of its own.
	MaxShots = MaxPlayers * (ShotLife/Cooldown + 1)
)

// Rect is an axis-aligned rectangle: Min is its top-left corner, Max its
// bottom-right.
type Rect struct {
	Min, Max fixed.Vec
}

func rect(x, y, w, h int64) Rect {
	return Rect{
		Min: fixed.V(fixed.FromInt(x), fixed.FromInt(y)),
		Max: fixed.V(fixed.FromInt(x+w), fixed.FromInt(y+h)),
	}
}

// walls are the obstacles, symmetric about both axes of the arena. None is
// thinner than 24 units.
var walls = [...]Rect{
	rect(440, 280, 80, 80),  // centre block
	rect(200, 140, 160, 24), // four bars
	rect(600, 140, 160, 24),
	rect(200, 476, 160, 24),
	rect(600, 476, 160, 24),
	rect(120, 260, 24, 120), // side posts
	rect(816, 260, 24, 120),
	rect(456, 56, 48, 48), // top and bottom pillars
	rect(456, 536, 48, 48),
}

// spawns are the points players (re)appear at: clear of every wall.
var spawns = [...]fixed.Vec{
	pt(60, 60), pt(900, 60), pt(60, 580), pt(900, 580),
	pt(330, 60), pt(630, 60), pt(330, 580), pt(630, 580),
	pt(60, 320), pt(900, 320), pt(300, 320), pt(660, 320),
}

func pt(x, y int64) fixed.Vec { return fixed.V(fixed.FromInt(x), fixed.FromInt(y)) }

// Walls returns the arena's obstacles (a copy).
func Walls() []Rect { return append([]Rect(nil), walls[:]...) }

// Fixed-point forms of the constants.
var (
	playerR     = fixed.FromInt(PlayerRadius)
	shotR       = fixed.FromInt(ShotRadius)
	arenaW      = fixed.FromInt(Width)
	arenaH      = fixed.FromInt(Height)
	playerSpeed = fixed.FromInt(PlayerSpeed)
	shotStep    = fixed.FromInt(ShotSpeed).DivInt(ShotSubsteps)
)

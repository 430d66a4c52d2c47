package game

import (
	"fmt"
	"hash/fnv"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// RoomConfig returns the lockstep room configuration the game expects for
// players players: Hz frames a second and inputs of InputSize bytes. Any
// Fill works (see Game.Step); the other fields keep lockstep's defaults.
func RoomConfig(players int) lockstep.Config {
	return lockstep.Config{Players: players, Hz: Hz, InputBytes: InputSize}
}

// Player is one player's state, as the view reads it.
type Player struct {
	Pos  fixed.Vec // centre, inside the arena and clear of walls
	Prev fixed.Vec // centre before the last frame, for interpolation (equal to Pos after a respawn)
	Aim  uint16    // aim direction in AimSteps of a turn

	Health    int  // 0 to MaxHealth; 0 when dead
	Alive     bool // false while waiting to respawn
	RespawnIn int  // frames until respawn while dead
	Shield    int  // frames of spawn protection left
	Cooldown  int  // frames until the weapon is ready

	Kills, Deaths, Hits int // score: players finished off, times died, shots that hurt someone

	input   Input // the latest input, kept for frames that bring none
	trigger bool  // whether the trigger is pulled in the frame being stepped
}

// Vel returns the player's movement over the last frame.
func (p Player) Vel() fixed.Vec { return p.Pos.Sub(p.Prev) }

// Shot is a projectile in flight.
type Shot struct {
	Owner int       // slot of the player who fired it
	Pos   fixed.Vec // centre
	Prev  fixed.Vec // centre before the last frame (the muzzle on the frame it was fired)
	Aim   uint16    // direction of flight; the velocity is AimVec(Aim) * ShotSpeed
	Life  int       // frames left
}

// Game is the arena simulation. It is driven only by Step, uses only
// integer and fixed-point math, and iterates players and shots in slot and
// firing order, so every client fed the same frames holds the same state
// bit for bit. It is not safe for concurrent use.
type Game struct {
	frame   int
	rand    fixed.Rand
	players []Player
	shots   []Shot
	events  [][]byte // the last Step's events (not state: not hashed or saved)
	evBuf   []byte
	fired   uint16 // bit i: slot i fired in the last Step (not state either)
}

// New returns a game for players players (MinPlayers to MaxPlayers) whose
// random choices follow seed. Every client of a match must use the same
// players and seed.
func New(players int, seed uint64) (*Game, error) {
	if players < MinPlayers || players > MaxPlayers {
		return nil, fmt.Errorf("%w: %d players, want %d to %d", ErrPlayers, players, MinPlayers, MaxPlayers)
	}
	g := &Game{players: make([]Player, players), shots: make([]Shot, 0, MaxShots)}
	g.rand.Seed(seed)
	order := make([]int, len(spawns))
	for i := range order {
		order[i] = i
	}
	g.rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	centre := fixed.V(arenaW.DivInt(2), arenaH.DivInt(2))
	for i := range g.players {
		p := &g.players[i]
		p.Pos = spawns[order[i]]
		p.Prev = p.Pos
		p.Aim = AimOf(centre.Sub(p.Pos))
		p.input.Aim = p.Aim
		p.Health, p.Alive = MaxHealth, true
	}
	return g, nil
}

// Frame returns the number of the next frame to step: the frames applied
// so far.
func (g *Game) Frame() int { return g.frame }

// Players returns the number of players.
func (g *Game) Players() int { return len(g.players) }

// Player returns a copy of the player in slot i (0 <= i < Players()).
func (g *Game) Player(i int) Player { return g.players[i] }

// Shots appends the shots in flight, in firing order, to dst.
func (g *Game) Shots(dst []Shot) []Shot { return append(dst, g.shots...) }

// Step applies one frame. The frame must be the next (its Number equal to
// Frame()) and have one slot per player; otherwise Step returns an error
// wrapping ErrFrame and changes nothing.
//
// A slot's inputs are applied in order: the last valid one sets movement,
// aim and the trigger from then on, and in this frame the trigger counts as
// pulled if any of them pulled it, so a click shorter than a frame still
// fires. A slot that brings no valid input
// (made up by the room with no inputs, or only bytes DecodeInput rejects)
// keeps the player's previous input: a held direction stays held and the
// trigger stays as it was. Rooms that fill with repeat-last give the same
// result; idle and absent fills are treated alike, so the game never
// depends on which one the room uses.
func (g *Game) Step(f lockstep.Frame) error {
	if f.Number != g.frame {
		return fmt.Errorf("%w: frame %d, want %d", ErrFrame, f.Number, g.frame)
	}
	if len(f.Slots) != len(g.players) {
		return fmt.Errorf("%w: frame %d has %d slots, game has %d players", ErrFrame, f.Number, len(f.Slots), len(g.players))
	}
	g.events, g.evBuf, g.fired = g.events[:0], g.evBuf[:0], 0
	for i := range f.Slots {
		if f.Slots[i].Gone {
			// A player who left or was dropped: the game's own bot plays
			// the slot until it is back, from the state and the game's
			// seeded Rand, so every client, the room and a replay agree.
			in := Bot(g, i, &g.rand)
			g.applyInput(&g.players[i], in, in.Fire)
			continue
		}
		g.applyInputs(&g.players[i], f.Slots[i].Inputs)
	}
	g.movePlayers()
	g.moveShots()
	g.fire()
	g.frame++
	return nil
}

func (g *Game) applyInputs(p *Player, inputs [][]byte) {
	fire, ok := false, false
	var last Input
	for _, b := range inputs {
		in, err := DecodeInput(b)
		if err != nil {
			continue // all clients see the same bytes and skip them alike
		}
		last, ok = in, true
		fire = fire || in.Fire
	}
	if ok {
		g.applyInput(p, last, fire)
	} else {
		p.trigger = p.input.Fire
	}
}

// applyInput sets a player's input for the frame; fire says whether any
// input of the frame pulled the trigger.
func (g *Game) applyInput(p *Player, in Input, fire bool) {
	p.input, p.trigger = in, fire
}

// moveDir is the unit vector of each (MoveX+1, MoveY+1).
var moveDir = func() (t [3][3]fixed.Vec) {
	for x := range 3 {
		for y := range 3 {
			t[x][y] = fixed.V(fixed.FromInt(int64(x-1)), fixed.FromInt(int64(y-1))).Normalize()
		}
	}
	return t
}()

func (g *Game) movePlayers() {
	for i := range g.players {
		p := &g.players[i]
		p.Prev = p.Pos
		if !p.Alive {
			p.RespawnIn--
			if p.RespawnIn <= 0 {
				g.respawn(i)
			}
			continue
		}
		p.Aim = p.input.Aim
		p.Shield = max(p.Shield-1, 0)
		p.Cooldown = max(p.Cooldown-1, 0)
		dir := moveDir[p.input.MoveX+1][p.input.MoveY+1]
		p.Pos = settle(p.Pos.Add(dir.Scale(playerSpeed)))
	}
	// Players push each other apart, pair by pair in slot order, each by
	// half the overlap.
	for i := range g.players {
		a := &g.players[i]
		if !a.Alive {
			continue
		}
		for j := i + 1; j < len(g.players); j++ {
			b := &g.players[j]
			if !b.Alive {
				continue
			}
			d := b.Pos.Sub(a.Pos)
			if d.LenSq() >= (2 * playerR).Mul(2*playerR) {
				continue
			}
			n := d.Normalize()
			if n.X == 0 && n.Y == 0 {
				n = fixed.V(fixed.One, 0) // on top of each other: the higher slot goes right
			}
			half := (2 * playerR).Sub(d.Len()).DivInt(2)
			a.Pos = settle(a.Pos.Sub(n.Scale(half)))
			b.Pos = settle(b.Pos.Add(n.Scale(half)))
		}
	}
}

// respawn brings player i back at the spawn point farthest from every
// living opponent; ties go to the first in a random rotation of the list.
func (g *Game) respawn(i int) {
	start := g.rand.Intn(len(spawns))
	best, bestD := 0, fixed.MinValue
	for k := range spawns {
		s := spawns[(start+k)%len(spawns)]
		d := fixed.MaxValue
		for j := range g.players {
			if j != i && g.players[j].Alive {
				d = d.Min(s.DistSq(g.players[j].Pos))
			}
		}
		if d > bestD {
			best, bestD = (start+k)%len(spawns), d
		}
	}
	p := &g.players[i]
	p.Pos, p.Prev = spawns[best], spawns[best]
	p.Health, p.Alive, p.RespawnIn = MaxHealth, true, 0
	p.Shield, p.Cooldown = SpawnShield, 0
}

func (g *Game) moveShots() {
	hitR := (playerR + shotR).Mul(playerR + shotR)
	kept := g.shots[:0]
next:
	for _, s := range g.shots {
		s.Prev = s.Pos
		step := AimVec(s.Aim).Scale(shotStep)
		for range ShotSubsteps {
			s.Pos = s.Pos.Add(step)
			if outside(s.Pos) || inWall(s.Pos) {
				continue next
			}
			for j := range g.players {
				if j == s.Owner || !g.players[j].Alive || s.Pos.DistSq(g.players[j].Pos) >= hitR {
					continue
				}
				g.hit(s.Owner, j)
				continue next
			}
		}
		s.Life--
		if s.Life > 0 {
			kept = append(kept, s)
		}
	}
	g.shots = kept
}

// hit applies a shot of player from that reached player to.
func (g *Game) hit(from, to int) {
	v := &g.players[to]
	if v.Shield > 0 {
		return
	}
	g.players[from].Hits++
	v.Health = max(v.Health-ShotDamage, 0)
	if v.Health == 0 {
		v.Alive, v.RespawnIn, v.Shield = false, RespawnDelay, 0
		v.Deaths++
		g.players[from].Kills++
		g.event(EventKill, byte(from), byte(to))
	}
}

// EventKill is the first byte of a kill event: EventKill, the shooter's
// slot, the victim's slot.
const EventKill = 1

// event records one of this frame's events.
func (g *Game) event(b ...byte) {
	n := len(g.evBuf)
	g.evBuf = append(g.evBuf, b...)
	g.events = append(g.events, g.evBuf[n:len(g.evBuf):len(g.evBuf)])
}

// Fired reports whether the player in slot i fired in the last Step: its
// weapon went off (a shot fired point-blank into a wall counts, though no
// shot flies). It is not state (neither hashed nor saved), and Restore
// clears it.
func (g *Game) Fired(i int) bool { return g.fired&(1<<i) != 0 }

// Events returns the events of the last Step, in order: the kills (see
// EventKill). Every client reports them to a room that verifies events
// (lockstep.Config.VerifyEvents), which names a player whose account of
// the match differs. The slices are valid until the next Step.
func (g *Game) Events() [][]byte { return g.events }

// fire launches a shot for every living player whose trigger is held and
// whose weapon is ready, from just outside its circle.
func (g *Game) fire() {
	muzzle := playerR + shotR + fixed.One
	for i := range g.players {
		p := &g.players[i]
		if !p.Alive || !p.trigger || p.Cooldown > 0 {
			continue
		}
		p.Cooldown, p.Shield = Cooldown, 0
		g.fired |= 1 << i
		at := p.Pos.Add(AimVec(p.Aim).Scale(muzzle))
		if outside(at) || inWall(at) {
			continue // fired point-blank into a wall
		}
		g.shots = append(g.shots, Shot{Owner: i, Pos: at, Prev: at, Aim: p.Aim, Life: ShotLife})
	}
}

// Hash returns a hash of the whole game state (fixed.Hasher, FNV-1a over
// every field in a fixed order). Clients fed the same frames have the same
// hash; compare it to detect a desync.
func (g *Game) Hash() uint64 {
	var h fixed.Hasher
	h.WriteUint64(uint64(g.frame))
	for _, s := range g.rand.State() {
		h.WriteUint64(s)
	}
	h.WriteUint64(uint64(len(g.players)))
	for i := range g.players {
		p := &g.players[i]
		h.WriteVec(p.Pos)
		h.WriteVec(p.Prev)
		h.WriteUint64(uint64(p.Aim))
		h.WriteInt64(int64(p.Health))
		h.WriteUint64(b2u(p.Alive))
		h.WriteInt64(int64(p.RespawnIn))
		h.WriteInt64(int64(p.Shield))
		h.WriteInt64(int64(p.Cooldown))
		h.WriteInt64(int64(p.Kills))
		h.WriteInt64(int64(p.Deaths))
		h.WriteInt64(int64(p.Hits))
		var in [InputSize]byte
		h.WriteBytes(p.input.Append(in[:0]))
	}
	h.WriteUint64(uint64(len(g.shots)))
	for _, s := range g.shots {
		h.WriteInt64(int64(s.Owner))
		h.WriteVec(s.Pos)
		h.WriteVec(s.Prev)
		h.WriteUint64(uint64(s.Aim))
		h.WriteInt64(int64(s.Life))
	}
	return h.Sum64()
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// RoomSeed is the game seed of a room, derived from its name: every client
// knows the name (the engine's welcome carries it), so all of them seed
// their games alike without another message.
func RoomSeed(room string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(room))
	return h.Sum64()
}

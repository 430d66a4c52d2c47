package game

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
	"github.com/tongbu/tongbu/lockstep/replay"
)

// The match.
const (
	Hz      = 60 // frames a second
	Players = 2

	StageWidth = 640 // units; the fighters stand on a line across it
	Width      = 36  // a fighter's body
	Reach      = 64  // a jab hits a body whose centre is this close, in front
	MaxHealth  = 100
	JabDamage  = 10
	Rounds     = 3      // rounds to win the match
	RoundPause = 2 * Hz // frames between rounds
	MatchPause = 4 * Hz // frames between matches

	// The jab's frame data, 9(2)13 (Kasumi's P in Dead or Alive): 9
	// frames of startup, 2 active frames that can hit, 13 of recovery in
	// which no new move starts.
	JabStartup  = 9
	JabActive   = 2
	JabRecovery = 13
	// HitStun and BlockStun are the frames a jab freezes the one it hits,
	// counted from the hit. A jab that hits on its first active frame
	// leaves the attacker free 3 frames before the defender (+3); a
	// blocked one, 2 frames after (-2): block a jab and answer with one.
	HitStun   = JabActive + JabRecovery + 3
	BlockStun = JabActive + JabRecovery - 2
)

var walkSpeed = fixed.FromFraction(5, 2) // units a frame

// Input is a player's controller state on one frame: one byte on the wire.
type Input uint8

// Input buttons.
const (
	Left      Input = 1 << iota // walk left
	Right                       // walk right
	Jab                         // press to jab
	Guard                       // hold to block
	inputMask = Left | Right | Jab | Guard
)

// Bytes returns the input as the lockstep client sends it.
func (in Input) Bytes() []byte { return []byte{byte(in)} }

// Action is what a fighter is doing.
type Action uint8

// Actions.
const (
	Idle Action = iota
	Walking
	Startup  // the jab's first 9 frames
	Active   // the 2 frames it can hit
	Recovery // the 13 after
	Blocking // holding guard
	HitStunned
	BlockStunned
	KnockedOut
)

var actionNames = [...]string{"idle", "walk", "startup", "active", "recovery", "block", "hit stun", "block stun", "KO"}

func (a Action) String() string {
	if int(a) < len(actionNames) {
		return actionNames[a]
	}
	return fmt.Sprintf("Action(%d)", uint8(a))
}

// Fighter is one player's fighter.
type Fighter struct {
	X      fixed.Fixed // centre, 0 to StageWidth
	Facing int8        // +1 right, -1 left
	Health int32
	Action Action
	T      int32 // frames into the action
	Hit    bool  // the current jab has hit
	Held   Input // the input of the last frame (a jab starts on a press)
	Wins   int32
	Jabs   int32 // jabs thrown, hits landed, blocked: the frame-data panel
	Hits   int32
	Blocks int32
}

// Game is a duel's whole state. It is a lockstep.RollbackGame: the
// prediction mode saves, loads and re-runs it, and a lockstep.Snapshotter,
// so the room can run it too and catch a reconnecting player up.
type Game struct {
	frame  int64
	f      [Players]Fighter
	round  int32
	pause  int32 // frames until the next round, after a KO
	winner int8  // the match's winner, or -1
}

var _ lockstep.RollbackGame = (*Game)(nil)
var _ lockstep.Snapshotter = (*Game)(nil)

// New returns a match at its first frame.
func New() *Game {
	g := &Game{winner: -1}
	g.startRound()
	return g
}

func (g *Game) startRound() {
	for i := range g.f {
		f := &g.f[i]
		f.X = fixed.FromInt(StageWidth/2 - 90 + 180*int64(i))
		f.Facing = int8(1 - 2*i)
		f.Health, f.Action, f.T, f.Hit = MaxHealth, Idle, 0, false
	}
}

// Frame returns the number of frames run.
func (g *Game) Frame() int { return int(g.frame) }

// Fighter returns player i's fighter.
func (g *Game) Fighter(i int) Fighter { return g.f[i] }

// Round returns the round number, from 0.
func (g *Game) Round() int { return int(g.round) }

// Winner returns the slot that won the match, or -1 while it goes on; the
// next match starts MatchPause frames after.
func (g *Game) Winner() int { return int(g.winner) }

// Pause returns the frames until the next round starts, after a KO.
func (g *Game) Pause() int { return int(g.pause) }

// input returns a player's input in a frame: its newest (a late input the
// room moved shares the frame with the next one), else the last it held.
func input(s lockstep.Slot, held Input) Input {
	if n := len(s.Inputs); n > 0 && len(s.Inputs[n-1]) == 1 {
		return Input(s.Inputs[n-1][0]) & inputMask
	}
	return held
}

// Step runs one frame.
func (g *Game) Step(fr lockstep.Frame) {
	g.frame++
	var in [Players]Input
	for i := range g.f {
		if i < len(fr.Slots) {
			in[i] = input(fr.Slots[i], g.f[i].Held)
		}
	}
	if g.pause > 0 {
		if g.pause--; g.pause == 0 {
			g.round++
			if g.winner >= 0 { // the next match
				g.round, g.winner = 0, -1
				g.f[0].Wins, g.f[1].Wins = 0, 0
			}
			g.startRound()
		}
		g.hold(in)
		return
	}
	for i := range g.f {
		g.act(i, in[i])
	}
	// Hits are decided on the positions after both moved, and applied
	// together: a trade is a trade, whoever is slot 0.
	var hit [Players]bool
	for i := range g.f {
		a, d := &g.f[i], &g.f[1-i]
		if a.Action == Active && !a.Hit && d.Action != KnockedOut && inReach(a, d) {
			hit[i] = true
		}
	}
	for i := range g.f {
		if hit[i] {
			g.land(&g.f[i], &g.f[1-i])
		}
	}
	g.separate()
	g.hold(in)
}

// hold remembers each player's input, for telling a press from a hold.
func (g *Game) hold(in [Players]Input) {
	for i := range g.f {
		g.f[i].Held = in[i]
	}
}

// act advances fighter i by one frame with its input.
func (g *Game) act(i int, in Input) {
	f := &g.f[i]
	f.T++
	// An action that ends this frame leaves the fighter free to act in it.
	switch f.Action {
	case Startup:
		if f.T >= JabStartup {
			f.Action, f.T = Active, 0
		}
		return
	case Active:
		if f.T >= JabActive {
			f.Action, f.T = Recovery, 0
		}
		return
	case Recovery:
		if f.T < JabRecovery {
			return
		}
	case HitStunned:
		if f.T < HitStun {
			return
		}
	case BlockStunned:
		if f.T < BlockStun {
			return
		}
	case KnockedOut:
		return
	}
	// Free to act: idle, walking or blocking.
	o := &g.f[1-i]
	if o.X > f.X {
		f.Facing = 1
	} else if o.X < f.X {
		f.Facing = -1
	}
	switch {
	case in&Jab != 0 && f.Held&Jab == 0:
		f.Action, f.T, f.Hit = Startup, 0, false
		f.Jabs++
	case in&Guard != 0:
		if f.Action != Blocking {
			f.Action, f.T = Blocking, 0
		}
	case in&(Left|Right) == Left:
		f.Action, f.T = Walking, 0
		f.X -= walkSpeed
	case in&(Left|Right) == Right:
		f.Action, f.T = Walking, 0
		f.X += walkSpeed
	case f.Action != Idle:
		f.Action, f.T = Idle, 0
	}
}

// inReach reports whether a's jab reaches d: in front of a, close enough.
func inReach(a, d *Fighter) bool {
	dx := d.X.Sub(a.X)
	if a.Facing < 0 {
		dx = dx.Neg()
	}
	return dx > 0 && dx <= fixed.FromInt(Reach)
}

// land applies a's jab to d.
func (g *Game) land(a, d *Fighter) {
	a.Hit = true
	push := fixed.FromInt(12)
	if a.Facing < 0 {
		push = push.Neg()
	}
	if d.Action == Blocking || d.Action == BlockStunned {
		d.Action, d.T = BlockStunned, 0
		d.X += push.DivInt(2)
		a.Blocks++
		return
	}
	a.Hits++
	d.Health -= JabDamage
	d.X += push
	d.Action, d.T = HitStunned, 0
	if d.Health <= 0 {
		d.Health, d.Action = 0, KnockedOut
		a.Wins++
		g.pause = RoundPause
		if a.Wins >= Rounds {
			g.winner, g.pause = int8(a.index(g)), MatchPause
		}
	}
}

func (f *Fighter) index(g *Game) int {
	if f == &g.f[0] {
		return 0
	}
	return 1
}

// separate keeps the bodies apart and on the stage.
func (g *Game) separate() {
	a, b := &g.f[0], &g.f[1]
	left, right := a, b
	if b.X < a.X {
		left, right = b, a
	}
	if gap := right.X.Sub(left.X); gap < fixed.FromInt(Width) {
		over := fixed.FromInt(Width).Sub(gap)
		left.X -= over.DivInt(2)
		right.X = left.X.Add(fixed.FromInt(Width))
	}
	lo, hi := fixed.FromInt(Width/2), fixed.FromInt(StageWidth-Width/2)
	for i := range g.f {
		g.f[i].X = g.f[i].X.Clamp(lo, hi)
	}
	if gap := right.X.Sub(left.X); gap < fixed.FromInt(Width) { // pinned to a wall
		if left.X == lo {
			right.X = lo.Add(fixed.FromInt(Width))
		} else {
			left.X = hi.Sub(fixed.FromInt(Width))
		}
	}
}

// stateBytes is the size of a saved state.
const stateBytes = 8 + 4 + 4 + 1 + Players*fighterBytes

const fighterBytes = 8 + 1 + 4 + 1 + 4 + 1 + 1 + 4*4

// SaveState appends the whole state to dst.
func (g *Game) SaveState(dst []byte) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, uint64(g.frame))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(g.round))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(g.pause))
	dst = append(dst, byte(g.winner))
	for i := range g.f {
		f := &g.f[i]
		dst = binary.LittleEndian.AppendUint64(dst, uint64(f.X.Raw()))
		dst = append(dst, byte(f.Facing))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.Health))
		dst = append(dst, byte(f.Action))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(f.T))
		var hit byte
		if f.Hit {
			hit = 1
		}
		dst = append(dst, hit, byte(f.Held))
		for _, v := range [...]int32{f.Wins, f.Jabs, f.Hits, f.Blocks} {
			dst = binary.LittleEndian.AppendUint32(dst, uint32(v))
		}
	}
	return dst
}

// ErrState is returned for bytes that are not a saved duel.
var ErrState = errors.New("duel: not a saved state")

// LoadState replaces the state with one SaveState wrote.
func (g *Game) LoadState(b []byte) error {
	if len(b) != stateBytes {
		return fmt.Errorf("%w: %d bytes, want %d", ErrState, len(b), stateBytes)
	}
	var n Game
	n.frame = int64(binary.LittleEndian.Uint64(b))
	n.round = int32(binary.LittleEndian.Uint32(b[8:]))
	n.pause = int32(binary.LittleEndian.Uint32(b[12:]))
	n.winner = int8(b[16])
	b = b[17:]
	for i := range n.f {
		f := &n.f[i]
		f.X = fixed.FromRaw(int64(binary.LittleEndian.Uint64(b)))
		f.Facing = int8(b[8])
		f.Health = int32(binary.LittleEndian.Uint32(b[9:]))
		f.Action = Action(b[13])
		f.T = int32(binary.LittleEndian.Uint32(b[14:]))
		f.Hit, f.Held = b[18] == 1, Input(b[19])
		f.Wins = int32(binary.LittleEndian.Uint32(b[20:]))
		f.Jabs = int32(binary.LittleEndian.Uint32(b[24:]))
		f.Hits = int32(binary.LittleEndian.Uint32(b[28:]))
		f.Blocks = int32(binary.LittleEndian.Uint32(b[32:]))
		b = b[fighterBytes:]
		if f.Action > KnockedOut || f.Health < 0 || f.Health > MaxHealth || (f.Facing != 1 && f.Facing != -1) {
			return fmt.Errorf("%w: fighter %d", ErrState, i)
		}
	}
	if n.winner < -1 || n.winner >= Players {
		return fmt.Errorf("%w: winner %d", ErrState, n.winner)
	}
	*g = n
	return nil
}

// Hash returns an FNV-1a hash of the whole state, for desync detection.
func (g *Game) Hash() uint64 {
	var buf [stateBytes]byte
	h := fnv.New64a()
	h.Write(g.SaveState(buf[:0]))
	return h.Sum64()
}

// Snapshot returns the state, for the room's catch-up of a reconnecting
// player.
func (g *Game) Snapshot() []byte { return g.SaveState(nil) }

// Restore replaces the state with a snapshot.
func (g *Game) Restore(b []byte) error { return g.LoadState(b) }

// Name is the game's name in replay headers, under which Register makes
// it known.
const Name = "duel"

// Register makes the duel known, by Name, to a program's registry of the
// games whose replays it verifies (the demo's `replay verify`).
func Register(g *replay.Games) error {
	return g.Register(Name, func(players int, params []byte) (lockstep.Simulation, error) {
		if players != Players {
			return nil, fmt.Errorf("duel: %d players, want %d", players, Players)
		}
		return New(), nil
	})
}

// RoomConfig is the room a duel is played in: 60 Hz, one byte of input a
// frame, a late player's controller held as it was (FillRepeat), and a
// late input moved to the next frame rather than lost. The match starts
// when both players are there, not while one is still loading. The room
// runs the game too, so its hash names a player who diverges and a
// reconnecting player is caught up from a snapshot.
func RoomConfig() lockstep.Config {
	return lockstep.Config{
		Players: Players, Hz: Hz, Fill: lockstep.FillRepeat, Late: lockstep.LateNextFrame,
		Start:      lockstep.StartAllPlayers,
		InputBytes: 1, HashEvery: 30,
		Simulation: func() lockstep.Simulation { return New() },
	}
}

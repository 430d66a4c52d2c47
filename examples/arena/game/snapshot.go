package game

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// snapshotVersion is the first byte of a snapshot.
const snapshotVersion = 1

// Snapshot bounds.
const (
	maxFrame = 1<<40 - 1 // 2,300 years at 15 Hz
	maxCount = 1<<40 - 1 // kills, deaths, hits
)

// Snapshot returns the whole game state, bit-packed with codec:
//
//	version   8 bits, 1
//	players   uint, max MaxPlayers (at least MinPlayers)
//	frame     uint, max 2^40-1
//	rand      4 x 64 bits, the generator state (not all zero)
//	players x {
//	  pos, prev   raw Q44.20 x and y, each an int in [radius, size-radius]
//	  aim         uint, max AimSteps-1
//	  input       the InputSize bytes of the latest input (see Input)
//	  alive       bool
//	  health      uint, max MaxHealth (1.. when alive, 0 when dead)
//	  respawn in  uint, max RespawnDelay (0 when alive, 1.. when dead)
//	  shield      uint, max SpawnShield (0 when dead)
//	  cooldown    uint, max Cooldown
//	  kills, deaths, hits  uint, max 2^40-1
//	}
//	shots     uint, max MaxShots
//	shots x {
//	  owner       uint, max players-1
//	  pos, prev   raw Q44.20 x and y, each an int in [0, size]
//	  aim         uint, max AimSteps-1
//	  life        uint, max ShotLife (at least 1)
//	}
//
// then zero padding to the byte. Restore accepts exactly what Snapshot
// writes: a snapshot restored and taken again gives the same bytes.
func (g *Game) Snapshot() []byte {
	var w codec.Writer
	w.WriteUint(snapshotVersion, 255)
	w.WriteUint(uint64(len(g.players)), MaxPlayers)
	w.WriteUint(uint64(g.frame), maxFrame)
	for _, s := range g.rand.State() {
		w.WriteBits(s, 64)
	}
	for i := range g.players {
		p := &g.players[i]
		writePos(&w, p.Pos, playerR)
		writePos(&w, p.Prev, playerR)
		w.WriteUint(uint64(p.Aim), AimSteps-1)
		var in [InputSize]byte
		for _, b := range p.input.Append(in[:0]) {
			w.WriteBits(uint64(b), 8)
		}
		w.WriteBool(p.Alive)
		w.WriteUint(uint64(p.Health), MaxHealth)
		w.WriteUint(uint64(p.RespawnIn), RespawnDelay)
		w.WriteUint(uint64(p.Shield), SpawnShield)
		w.WriteUint(uint64(p.Cooldown), Cooldown)
		w.WriteUint(uint64(p.Kills), maxCount)
		w.WriteUint(uint64(p.Deaths), maxCount)
		w.WriteUint(uint64(p.Hits), maxCount)
	}
	w.WriteUint(uint64(len(g.shots)), MaxShots)
	for _, s := range g.shots {
		w.WriteUint(uint64(s.Owner), uint64(len(g.players)-1))
		writePos(&w, s.Pos, 0)
		writePos(&w, s.Prev, 0)
		w.WriteUint(uint64(s.Aim), AimSteps-1)
		w.WriteUint(uint64(s.Life), ShotLife)
	}
	return w.Bytes()
}

// writePos writes a position that lies at least margin inside the arena.
func writePos(w *codec.Writer, p fixed.Vec, margin fixed.Fixed) {
	w.WriteInt(p.X.Raw(), margin.Raw(), arenaW.Sub(margin).Raw())
	w.WriteInt(p.Y.Raw(), margin.Raw(), arenaH.Sub(margin).Raw())
}

func readPos(r *codec.Reader, margin fixed.Fixed) fixed.Vec {
	x := r.ReadInt(margin.Raw(), arenaW.Sub(margin).Raw())
	y := r.ReadInt(margin.Raw(), arenaH.Sub(margin).Raw())
	return fixed.V(fixed.FromRaw(x), fixed.FromRaw(y))
}

// Restore replaces the game's state with a snapshot from Snapshot,
// including its number of players. Bytes that are not a valid snapshot
// (truncated, a field out of range, a dead player with health, trailing
// data) return an error wrapping ErrSnapshot and leave the game unchanged.
func (g *Game) Restore(b []byte) error {
	r := codec.NewReader(b)
	if v := r.ReadUint(255); r.Err() == nil && v != snapshotVersion {
		return fmt.Errorf("%w: version %d, want %d", ErrSnapshot, v, snapshotVersion)
	}
	n := int(r.ReadUint(MaxPlayers))
	if r.Err() == nil && n < MinPlayers {
		return fmt.Errorf("%w: %d players, want at least %d", ErrSnapshot, n, MinPlayers)
	}
	frame := int(r.ReadUint(maxFrame))
	var st [4]uint64
	for i := range st {
		st[i] = r.ReadBits(64)
	}
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: header: %w", ErrSnapshot, err)
	}
	if st == [4]uint64{} {
		return fmt.Errorf("%w: all-zero generator state", ErrSnapshot)
	}
	players := make([]Player, n) // n is at most MaxPlayers
	for i := range players {
		p := &players[i]
		p.Pos = readPos(r, playerR)
		p.Prev = readPos(r, playerR)
		p.Aim = uint16(r.ReadUint(AimSteps - 1))
		var in [InputSize]byte
		for k := range in {
			in[k] = byte(r.ReadBits(8))
		}
		p.Alive = r.ReadBool()
		p.Health = int(r.ReadUint(MaxHealth))
		p.RespawnIn = int(r.ReadUint(RespawnDelay))
		p.Shield = int(r.ReadUint(SpawnShield))
		p.Cooldown = int(r.ReadUint(Cooldown))
		p.Kills = int(r.ReadUint(maxCount))
		p.Deaths = int(r.ReadUint(maxCount))
		p.Hits = int(r.ReadUint(maxCount))
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: player %d: %w", ErrSnapshot, i, err)
		}
		var err error
		if p.input, err = DecodeInput(in[:]); err != nil {
			return fmt.Errorf("%w: player %d: %w", ErrSnapshot, i, err)
		}
		if p.Alive && (p.Health == 0 || p.RespawnIn != 0) {
			return fmt.Errorf("%w: player %d alive with health %d, respawn in %d", ErrSnapshot, i, p.Health, p.RespawnIn)
		}
		if !p.Alive && (p.Health != 0 || p.RespawnIn == 0 || p.Shield != 0) {
			return fmt.Errorf("%w: player %d dead with health %d, respawn in %d, shield %d", ErrSnapshot, i, p.Health, p.RespawnIn, p.Shield)
		}
	}
	k := int(r.ReadUint(MaxShots))
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: shot count: %w", ErrSnapshot, err)
	}
	shots := make([]Shot, k, MaxShots) // k is at most MaxShots
	for i := range shots {
		s := &shots[i]
		s.Owner = int(r.ReadUint(uint64(n - 1)))
		s.Pos = readPos(r, 0)
		s.Prev = readPos(r, 0)
		s.Aim = uint16(r.ReadUint(AimSteps - 1))
		s.Life = int(r.ReadUint(ShotLife))
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: shot %d: %w", ErrSnapshot, i, err)
		}
		if s.Life == 0 {
			return fmt.Errorf("%w: shot %d has no life left", ErrSnapshot, i)
		}
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrSnapshot, err)
	}
	g.frame, g.players, g.shots, g.fired = frame, players, shots, 0
	g.rand.SetState(st)
	return nil
}

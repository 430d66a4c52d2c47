// Package codecbench holds the seed-000 character update that measures the
// codec, and the baselines it is compared with. The Go benchmarks of this
// package and `tongbu bench codec` run the same code.
package codecbench

import "github.com/tongbu/tongbu/codec"

// Character is a character's logic data as in seed 000 section 5.3
// (G2C_NEW_CHARACTER_INTO_REGION), with the ranges of section 5.1.4.
//
// Positions are world units: 64 regions x 32 cells x 32 units a side, so
// [0, 65535]. Velocity and state take the seed's 5 bits. The destination is
// held in world units and sent as an offset from the position within
// +-1 region (the seed's REGION_GRID + CELL + 1 sign bits, 11 bits an axis);
// an axis costs one bit when the destination is the position (standing
// still), and nothing in a delta while the destination does not change. Life, mana and rage are
// percentages; the magic state is one of 256 visible states.
//
//go:generate go run github.com/tongbu/tongbu/cmd/codecgen -type Character
type Character struct {
	X        uint16 `codec:"uint,max=65535,delta=8"`
	Y        uint16 `codec:"uint,max=65535,delta=8"`
	Velocity uint8  `codec:"uint,max=31"`
	State    uint8  `codec:"uint,max=31"`
	DestX    uint16 `codec:"int,rel=X,min=-1024,max=1023,opt"`
	DestY    uint16 `codec:"int,rel=Y,min=-1024,max=1023,opt"`
	Life     uint8  `codec:"uint,max=100"`
	Mana     uint8  `codec:"uint,max=100"`
	Rage     uint8  `codec:"uint,max=100"`
	Magic    uint8
}

// MaxID is the largest entity handle of a world. The seed's peak is 6,400
// players and 28,800 active NPCs, so a 16-bit world-local handle replaces
// the seed's 32-bit ID.
const MaxID = 65535

// Update is one character update on the wire: the entity handle, then the
// character in full or as a delta against the baseline the receiver
// acknowledged. Which of the two it is, the message type says.
type Update struct {
	ID uint16
	Character
}

// EncodeFull writes the handle and every field.
func (u *Update) EncodeFull(w *codec.Writer) {
	w.WriteUint(uint64(u.ID), MaxID)
	u.Character.EncodeFull(w)
}

// DecodeFull reads an update written by EncodeFull.
func (u *Update) DecodeFull(r *codec.Reader) error {
	id := uint16(r.ReadUint(MaxID))
	if err := u.Character.DecodeFull(r); err != nil {
		return err
	}
	u.ID = id
	return nil
}

// EncodeDelta writes the handle and the delta of the character against base.
func (u *Update) EncodeDelta(w *codec.Writer, base *Character) {
	w.WriteUint(uint64(u.ID), MaxID)
	u.Character.EncodeDelta(w, base)
}

// DecodeDelta reads an update written by EncodeDelta. baseline looks up the
// acknowledged baseline of a handle; a handle without one fails with
// codec.ErrNoBaseline.
func (u *Update) DecodeDelta(r *codec.Reader, baseline func(id uint16) *Character) error {
	id := uint16(r.ReadUint(MaxID))
	if err := r.Err(); err != nil {
		return codec.FieldError("Update.ID", err)
	}
	base := baseline(id)
	if base == nil {
		r.Fail(codec.ErrNoBaseline)
		return codec.FieldError("Update", r.Err())
	}
	if err := u.Character.DecodeDelta(r, base); err != nil {
		return err
	}
	u.ID = id
	return nil
}

// Standing is a character at rest, in combat: the record forced sync sends
// for an entity that has not broadcast since the receiver arrived.
var Standing = Update{ID: 4711, Character: Character{
	X: 20000, Y: 31000, Velocity: 0, State: 1, DestX: 20000, DestY: 31000,
	Life: 73, Mana: 41, Rage: 88, Magic: 17,
}}

// Moving is a character running to a destination 5 m ahead.
var Moving = Update{ID: 4711, Character: Character{
	X: 20000, Y: 31000, Velocity: 12, State: 3, DestX: 20300, DestY: 30880,
	Life: 73, Mana: 41, Rage: 88, Magic: 17,
}}

// MovedOneFrame is Moving one frame (1/16 s) later: only the position changed.
var MovedOneFrame = Update{ID: 4711, Character: Character{
	X: 20009, Y: 30996, Velocity: 12, State: 3, DestX: 20300, DestY: 30880,
	Life: 73, Mana: 41, Rage: 88, Magic: 17,
}}

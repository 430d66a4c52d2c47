package game

import (
	"fmt"

	"github.com/tongbu/tongbu/lockstep/fixed"
)

// AimSteps is the resolution of an aim direction: a full turn is AimSteps
// steps, so one step is about 0.09 degrees.
const AimSteps = 4096

// InputSize is the encoded size of an Input in bytes.
const InputSize = 3

// Input is what one player does in one frame: a movement direction (one of
// eight, or none), an aim direction and whether the trigger is held.
//
// Encoding (InputSize bytes):
//
//	byte 0   bits 0-1  MoveX: 0 none, 1 left (-1), 2 right (+1); 3 is invalid
//	         bits 2-3  MoveY: 0 none, 1 up (-1), 2 down (+1); 3 is invalid
//	         bit  4    Fire
//	         bits 5-7  zero
//	byte 1-2 Aim, little-endian, below AimSteps (the top four bits zero)
//
// Angles follow the screen: Aim 0 points along +x and Aim grows toward +y
// (clockwise on a screen whose y axis points down).
type Input struct {
	MoveX, MoveY int8   // -1, 0 or +1 each; the game moves along the unit vector of (MoveX, MoveY)
	Fire         bool   // trigger held: fire whenever the weapon is ready
	Aim          uint16 // direction in AimSteps of a turn, 0 to AimSteps-1
}

// Append appends the encoding of in to dst. A field out of range is
// normalised rather than rejected: MoveX and MoveY by their sign, Aim
// modulo AimSteps.
func (in Input) Append(dst []byte) []byte {
	b := moveBits(in.MoveX) | moveBits(in.MoveY)<<2
	if in.Fire {
		b |= 1 << 4
	}
	aim := in.Aim % AimSteps
	return append(dst, b, byte(aim), byte(aim>>8))
}

func moveBits(v int8) byte {
	switch {
	case v < 0:
		return 1
	case v > 0:
		return 2
	}
	return 0
}

// DecodeInput decodes an Input. Anything but exactly InputSize bytes with
// valid fields and zero reserved bits is an error wrapping ErrInput.
func DecodeInput(b []byte) (Input, error) {
	if len(b) != InputSize {
		return Input{}, fmt.Errorf("%w: %d bytes, want %d", ErrInput, len(b), InputSize)
	}
	if b[0]>>5 != 0 {
		return Input{}, fmt.Errorf("%w: reserved bits %#x set", ErrInput, b[0]>>5)
	}
	x, y := b[0]&3, b[0]>>2&3
	if x == 3 || y == 3 {
		return Input{}, fmt.Errorf("%w: movement field 3", ErrInput)
	}
	aim := uint16(b[1]) | uint16(b[2])<<8
	if aim >= AimSteps {
		return Input{}, fmt.Errorf("%w: aim %d, want below %d", ErrInput, aim, AimSteps)
	}
	return Input{MoveX: moveValue(x), MoveY: moveValue(y), Fire: b[0]&(1<<4) != 0, Aim: aim}, nil
}

func moveValue(b byte) int8 {
	switch b {
	case 1:
		return -1
	case 2:
		return 1
	}
	return 0
}

// AimOf returns the aim step nearest to the direction of v (Aim 0 for the
// zero vector). It uses fixed-point math only, so bots may call it.
func AimOf(v fixed.Vec) uint16 {
	if v.X == 0 && v.Y == 0 {
		return 0
	}
	steps := v.Angle().MulInt(AimSteps).Div(fixed.TwoPi).Round().Int()
	steps %= AimSteps
	if steps < 0 {
		steps += AimSteps
	}
	return uint16(steps)
}

// AimVec returns the unit vector of an aim step (taken modulo AimSteps).
func AimVec(aim uint16) fixed.Vec {
	return aimTable[aim%AimSteps]
}

// aimTable holds the unit vector of every aim step, computed once with the
// package's integer trigonometry: the same bits on every platform.
var aimTable = func() (t [AimSteps]fixed.Vec) {
	for i := range t {
		t[i] = fixed.FromAngle(fixed.TwoPi.MulInt(int64(i)).DivInt(AimSteps))
	}
	return t
}()

package game

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrInput is returned by DecodeInput for bytes that are not an Input:
	// a wrong length, a reserved bit set, an out-of-range field.
	ErrInput = errors.New("arena: malformed input")

	// ErrPlayers is returned for a player count outside MinPlayers to
	// MaxPlayers, or a slot outside the game.
	ErrPlayers = errors.New("arena: invalid player count or slot")

	// ErrFrame is returned by Game.Step for a frame that is not the next
	// one, or that has the wrong number of slots. The game is unchanged.
	ErrFrame = errors.New("arena: frame out of sequence")

	// ErrSnapshot is returned by Game.Restore for bytes that are not a
	// valid snapshot. The game is unchanged.
	ErrSnapshot = errors.New("arena: malformed snapshot")
)

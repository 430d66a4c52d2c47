package world

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrNotPlayer is returned by Demo.Despawn for an entity that is not a
	// human player spawned by SpawnPlayer (an NPC or a bot).
	ErrNotPlayer = errors.New("mmo: not a human player")

	// ErrNoRoute is returned by the Demo's Sender for a packet to a player
	// that is not a bot when Config.Sender is nil.
	ErrNoRoute = errors.New("mmo: no sender for human players")
)

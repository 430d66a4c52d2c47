package lockstep

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrConfig is returned for a room configuration that cannot work.
	ErrConfig = errors.New("lockstep: invalid configuration")

	// ErrMalformed is returned for a packet that does not decode: wrong
	// kind, truncated, a count or length over its bound. It is dropped.
	ErrMalformed = errors.New("lockstep: malformed packet")

	// ErrSlot is returned when a packet arrives for a slot the room does
	// not have.
	ErrSlot = errors.New("lockstep: no such player slot")

	// ErrInputTooLarge is returned by Client.Input for an input longer than
	// the room's limit.
	ErrInputTooLarge = errors.New("lockstep: input over the room's size limit")

	// ErrBacklog is returned by Client.Input when too many inputs await
	// acknowledgement: the uplink is down.
	ErrBacklog = errors.New("lockstep: too many unacknowledged inputs")

	// ErrEvent is returned by Client.ReportEvent for an event the room
	// would refuse: too big, for a frame not being run, or in a room that
	// does not verify events.
	ErrEvent = errors.New("lockstep: bad game event")

	// ErrSpectatorsFull is returned by Room.AddSpectator when the room has
	// as many spectators watching as it takes (4,096).
	ErrSpectatorsFull = errors.New("lockstep: too many spectators")

	// ErrSpectator is returned by Client.Input on a spectator's client.
	ErrSpectator = errors.New("lockstep: spectators send no input")
)

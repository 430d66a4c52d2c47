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
)

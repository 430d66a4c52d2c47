package interest

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrConfig is returned for a world configuration that cannot work.
	ErrConfig = errors.New("interest: invalid configuration")

	// ErrMalformed is returned for a packet that does not decode: wrong
	// kind, truncated, a count, length or range over its bound. It is
	// dropped.
	ErrMalformed = errors.New("interest: malformed packet")

	// ErrUnknown is returned for an entity ID the world does not hold.
	ErrUnknown = errors.New("interest: unknown entity")

	// ErrFull is returned by World.Spawn when every entity ID is in use.
	ErrFull = errors.New("interest: world full")

	// ErrOffMap is returned for a position outside the world.
	ErrOffMap = errors.New("interest: position off the map")

	// ErrGhost is returned for a change to a ghost: an entity another
	// cell owns, which this world only mirrors (Border).
	ErrGhost = errors.New("interest: entity owned by another cell")

	// ErrNotObserver is returned by World.Deliver for an entity that has
	// no client attached (see World.Join).
	ErrNotObserver = errors.New("interest: entity has no client")
)

package replica

import "errors"

// Sentinel errors. The package wraps them with context (which subject, which
// collection, which version), so test them with errors.Is.
var (
	// ErrConfig is returned for a configuration that cannot work: an empty
	// or malformed name, a collection registered twice or after Start.
	ErrConfig = errors.New("replica: invalid configuration")

	// ErrSchema is returned when a message or a file was written for other
	// collections or other record types than this process registered.
	ErrSchema = errors.New("replica: schema mismatch")

	// ErrUnknownCollection is returned when a message names a collection
	// index this process does not have.
	ErrUnknownCollection = errors.New("replica: unknown collection")

	// ErrImpossibleVersion is returned when a message carries a version that
	// no honest peer can send: a subscriber ahead of its publisher, a
	// version beyond 2^63-2, deltas that do not follow their snapshot.
	ErrImpossibleVersion = errors.New("replica: impossible version")

	// ErrMalformed is returned for a message that does not decode: a bad
	// checksum, a bad frame, a count or length over its bound, trailing
	// bytes. The message is dropped.
	ErrMalformed = errors.New("replica: malformed message")

	// ErrBadFile is returned when a persisted file cannot be used: wrong
	// magic or format, a bad checksum, a truncated body. The process starts
	// without it (a publisher with a new epoch, a subscriber empty).
	ErrBadFile = errors.New("replica: unusable file")

	// ErrClosed is returned by operations on a closed publisher, subscriber
	// or bus.
	ErrClosed = errors.New("replica: closed")
)

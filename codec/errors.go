package codec

import "errors"

// Sentinel errors. Decoders wrap them with context (which field, which
// bound), so test them with errors.Is.
var (
	// ErrTruncated is returned when a read needs more bits than remain in
	// the input.
	ErrTruncated = errors.New("codec: input truncated")

	// ErrOutOfRange is returned when a decoded value lies outside the range
	// the field declares, or when an encoder is handed such a value (the
	// writer then records the error and writes the nearest bound).
	ErrOutOfRange = errors.New("codec: value out of range")

	// ErrTooLong is returned when a length or count read from the input
	// exceeds the bound the caller gave.
	ErrTooLong = errors.New("codec: length over bound")

	// ErrOverflow is returned when a varint does not fit in 64 bits.
	ErrOverflow = errors.New("codec: varint overflows 64 bits")

	// ErrTrailing is returned by Reader.Done when input remains after the
	// last field, or when the padding bits of the last byte are not zero.
	ErrTrailing = errors.New("codec: trailing data")

	// ErrInvalid is returned for a parameter that cannot describe a field,
	// such as a quantizer whose step is not positive.
	ErrInvalid = errors.New("codec: invalid field description")

	// ErrNoBaseline is returned when a delta arrives and the receiver holds
	// no baseline to apply it to. The delta must be dropped and a full
	// record requested.
	ErrNoBaseline = errors.New("codec: delta without baseline")

	// ErrBadFrame is returned for a frame header that is malformed: a part
	// index not below its part count, a length longer than the packet, an
	// unknown flag.
	ErrBadFrame = errors.New("codec: malformed frame")

	// ErrTooManyParts is returned when a split message claims more parts
	// than the reassembler allows.
	ErrTooManyParts = errors.New("codec: too many parts")

	// ErrPartMismatch is returned when a part disagrees with earlier parts
	// of the same message (type or part count).
	ErrPartMismatch = errors.New("codec: part disagrees with its message")

	// ErrDuplicatePart is returned when a part that is already held arrives
	// again. It is harmless on an unreliable channel; the copy is dropped.
	ErrDuplicatePart = errors.New("codec: duplicate part")

	// ErrPeerBudget is returned when holding a part would take the bytes
	// held for one peer over the reassembler's cap, or a message over the
	// message size cap. The whole message is dropped.
	ErrPeerBudget = errors.New("codec: reassembly budget exceeded")

	// ErrTooLarge is returned when a compressed payload claims a decoded
	// length above the caller's cap. Nothing is allocated.
	ErrTooLarge = errors.New("codec: decoded payload over cap")

	// ErrCorrupt is returned when a compressed payload is malformed.
	ErrCorrupt = errors.New("codec: corrupt compressed payload")
)

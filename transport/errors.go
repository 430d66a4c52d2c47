package transport

import "errors"

// Sentinel errors; test them with errors.Is.
var (
	// ErrClosed is returned by operations on a closed connection or
	// listener.
	ErrClosed = errors.New("transport: closed")

	// ErrTooLarge is returned when a message is longer than the channel
	// takes (DefaultMaxUnreliable for the unreliable channel).
	ErrTooLarge = errors.New("transport: message too large for channel")

	// ErrDropped is returned when an unreliable message was dropped because
	// the channel was backed up. It is counted in Stats.DroppedUnreliable;
	// callers usually ignore it.
	ErrDropped = errors.New("transport: unreliable message dropped, channel backed up")

	// ErrEmpty is returned for an empty message: empty messages are the
	// transport's keepalives and are never delivered.
	ErrEmpty = errors.New("transport: empty message")

	// ErrIdle is the reason a connection closed when nothing arrived within
	// the idle timeout.
	ErrIdle = errors.New("transport: idle timeout")

	// ErrHandshakeTimeout is the reason a connection closed when its
	// channels did not open within the handshake timeout.
	ErrHandshakeTimeout = errors.New("transport: handshake timeout")

	// ErrHandshake is the reason a lean-stack connection closed when its
	// handshake failed before the timeout: the peer's DTLS certificate did
	// not match the fingerprint its SDP gave, or the peer ended the
	// handshake with an alert. Retrying the same server will not help. (On
	// the pion stack such a handshake ends in ErrHandshakeTimeout.)
	ErrHandshake = errors.New("transport: handshake failed")

	// ErrQueueFull is returned when the reliable queue is over its limit.
	ErrQueueFull = errors.New("transport: reliable queue full")
)

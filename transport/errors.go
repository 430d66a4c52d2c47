package transport

import "github.com/tongbu/tongbu/transport/internal/conn"

// Sentinel errors; test them with errors.Is.
var (
	// ErrClosed is returned by operations on a closed connection or
	// listener.
	ErrClosed = conn.ErrClosed

	// ErrTooLarge is returned when a message is longer than the channel
	// takes (DefaultMaxUnreliable for the unreliable channel).
	ErrTooLarge = conn.ErrTooLarge

	// ErrDropped is returned when an unreliable message was dropped because
	// the channel was backed up. It is counted in Stats.DroppedUnreliable;
	// callers usually ignore it.
	ErrDropped = conn.ErrDropped

	// ErrEmpty is returned for an empty message: empty messages are the
	// transport's keepalives and are never delivered.
	ErrEmpty = conn.ErrEmpty

	// ErrIdle is the reason a connection closed when nothing arrived within
	// the idle timeout.
	ErrIdle = conn.ErrIdle

	// ErrPathLost is the reason a connection closed when its path ended
	// under it: its ICE-TCP connection closed or failed, or ICE found no
	// path left (a browser's peer connection "failed": the network
	// changed or went), as opposed to the other side closing it.
	ErrPathLost = conn.ErrPathLost

	// ErrHandshakeTimeout is the reason a connection closed when its
	// channels did not open within the handshake timeout.
	ErrHandshakeTimeout = conn.ErrHandshakeTimeout

	// ErrHandshake is the reason a lean-stack connection closed when its
	// handshake failed before the timeout: the peer's DTLS certificate did
	// not match the fingerprint its SDP gave, or the peer ended the
	// handshake with an alert. Retrying the same server will not help. (On
	// the pion stack such a handshake ends in ErrHandshakeTimeout.)
	ErrHandshake = conn.ErrHandshake

	// ErrQueueFull is returned when the reliable queue is over its limit.
	ErrQueueFull = conn.ErrQueueFull
)

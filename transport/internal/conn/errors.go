package conn

import "errors"

// The sentinel errors of every connection, which the transport package
// exports under the same names (with when each happens); test them with
// errors.Is.
var (
	// ErrClosed: the connection or listener is closed.
	ErrClosed = errors.New("transport: closed")
	// ErrTooLarge: a message is longer than its channel takes.
	ErrTooLarge = errors.New("transport: message too large for channel")
	// ErrDropped: an unreliable message was dropped, the channel backed up.
	ErrDropped = errors.New("transport: unreliable message dropped, channel backed up")
	// ErrEmpty: an empty message, which only keepalives are.
	ErrEmpty = errors.New("transport: empty message")
	// ErrIdle: nothing arrived within the idle timeout.
	ErrIdle = errors.New("transport: idle timeout")
	// ErrPathLost: the connection's path ended under it (its TCP
	// connection closed or failed), not by the other side's close.
	ErrPathLost = errors.New("transport: the path to the peer was lost")
	// ErrHandshakeTimeout: the channels did not open within the handshake
	// timeout.
	ErrHandshakeTimeout = errors.New("transport: handshake timeout")
	// ErrHandshake: a lean-stack handshake failed before the timeout.
	ErrHandshake = errors.New("transport: handshake failed")
	// ErrQueueFull: the reliable queue is over its limit.
	ErrQueueFull = errors.New("transport: reliable queue full")
)

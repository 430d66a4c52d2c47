package transport

import (
	"context"
	"net"
	"net/url"

	"github.com/tongbu/tongbu/transport/internal/conn"
)

// PeerID identifies a connection for its whole life; the side that accepts
// connections assigns it.
type PeerID = conn.PeerID

// Channel names one of the two channels of a connection: Unreliable or
// Reliable. Its String is "u" or "r", the channel's label.
type Channel = conn.Channel

const (
	// Unreliable is the "u" channel: unordered, never retransmitted. Inputs,
	// frames and state go here; the modes add their own reliability.
	Unreliable = conn.Unreliable
	// Reliable is the "r" channel: ordered and retransmitted until
	// delivered. Control and bulk catch-up go here.
	Reliable = conn.Reliable
)

// DefaultMaxUnreliable is the largest message the unreliable channel takes
// by default: codec.MaxPacket, one SCTP chunk on a typical path, so a
// message is never fragmented.
const DefaultMaxUnreliable = conn.DefaultMaxUnreliable

// Message is one received message: its Channel, and its Data, which the
// receiver owns.
type Message = conn.Message

// Conn is one peer connection with its two channels. Every transport
// (WebRTC, in-memory) provides it; the engine uses nothing else.
//
// Send methods copy the message, so the caller may reuse its buffer. They
// are safe to call from several goroutines, as are Stats and Close; Receive
// is meant for one reader.
type Conn interface {
	// ID returns the connection's peer id.
	ID() PeerID
	// SendUnreliable sends msg on the unreliable channel. A message longer
	// than the channel's limit fails with ErrTooLarge. When the channel is
	// backed up the message is dropped at once, counted in
	// Stats.DroppedUnreliable, and ErrDropped is returned: stale unreliable
	// data is never queued to go out late.
	SendUnreliable(msg []byte) error
	// SendReliable queues msg on the reliable channel. It fails with
	// ErrQueueFull when the reliable queue is over its limit.
	SendReliable(msg []byte) error
	// Receive returns the next message from either channel. It fails with
	// ErrClosed once the connection is closed and drained of nothing more.
	Receive(ctx context.Context) (Message, error)
	// TryReceive returns the next message if one is queued, without
	// waiting: a room or world goroutine drains its connections on its tick
	// instead of waking for every message.
	TryReceive() (Message, bool)
	// Close closes the connection and releases everything it holds.
	Close() error
	// Done is closed when the connection closes, from either side or by
	// timeout.
	Done() <-chan struct{}
	// Stats returns the connection's counters.
	Stats() Stats
}

// Handler is implemented by connections that can hand each message to a
// function as it arrives, in the goroutine that read it, instead of
// queueing it for Receive: the lean stack's connections, whose one reading
// goroutine serves every peer. A server that takes its messages this way
// saves a goroutine wake-up per message, and its game loops are not
// queued behind one goroutine per peer.
type Handler interface {
	// Handle makes f take every message from now on, one at a time and in
	// order: first those already queued (in Handle's own goroutine), then
	// each as it arrives (in the transport's). f must not block, for it
	// holds up every peer's traffic; it may send on the connection and
	// close it. After Handle, Receive and TryReceive return nothing: call
	// it once, before reading. Done still tells when the connection
	// closes; a call to f may be under way as it does.
	Handle(f func(Message))
	// HandleClose makes f run once the connection has closed, in a
	// goroutine of its own that lasts as long as f (at once if it is
	// closed already): a server learns of each close without a goroutine
	// per connection waiting on Done. A call to Handle's function may be
	// under way as f starts.
	HandleClose(f func())
}

// Warmer is implemented by connections that can ask the CPU for the
// memory a send touches before the send: a server about to send to many
// connections at once (a room's cut, a world's tick) calls Warm on each
// first, so that their state, which thousands of connections have pushed
// out of the cache since their last send, is fetched side by side instead
// of one connection after another. It is a hint: it changes nothing. The
// lean stack's connections implement it.
type Warmer interface {
	Warm()
}

// Stats counts a connection's traffic: the smoothed round-trip estimate
// (RTT, 0 before the first sample), the messages and bytes sent (both
// channels) and received, and the unreliable sends dropped because the
// channel was backed up.
type Stats = conn.Stats

// isLoopbackAddr reports whether a is a loopback address.
func isLoopbackAddr(a net.Addr) bool {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// isLoopbackURL reports whether a URL's host is a loopback address or
// localhost.
func isLoopbackURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

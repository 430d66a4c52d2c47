package conn

import (
	"context"

	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/transport/internal/inbox"
)

// Core is what every network Conn (pion's and the lean stack's) keeps
// alike: the id, limits, inbox, close state and counters. A connection
// embeds it and calls Init; it then has the Conn methods ID, Receive,
// TryReceive and Done, and Err and Meta.
type Core struct {
	id PeerID
	// Lim are the connection's limits, with their defaults.
	Lim Limits
	// Log receives the connection's logs.
	Log  *slog.Logger
	meta any

	// In holds the received messages for Receive and TryReceive.
	In       *inbox.Inbox[Message]
	done     chan struct{}
	closed   atomic.Bool  // done is closed (or about to be): read on every send, without the channel's cache line
	closeErr atomic.Value // error: why it closed

	lastRecv, lastSend                                atomic.Int64 // unix nanoseconds
	sentMsgs, sentBytes, recvMsgs, recvBytes, dropped atomic.Uint64
}

// isReliable tells an inbox a message's channel.
func isReliable(m Message) bool { return m.Channel == Reliable }

// Init readies the core of connection id; lim has its defaults.
func (c *Core) Init(id PeerID, lim Limits, log *slog.Logger) {
	c.id, c.Lim, c.Log = id, lim, log
	c.done = make(chan struct{})
	c.In = inbox.New(c.done, lim.InboxUnreliable, lim.InboxReliable, isReliable, ErrClosed)
	now := time.Now().UnixNano()
	c.lastRecv.Store(now)
	c.lastSend.Store(now)
}

// ID returns the connection's peer id.
func (c *Core) ID() PeerID { return c.id }

// Receive returns the next message from either channel.
func (c *Core) Receive(ctx context.Context) (Message, error) { return c.In.Pop(ctx) }

// TryReceive returns the next message if one is queued.
func (c *Core) TryReceive() (Message, bool) { return c.In.TryPop() }

// Done is closed when the connection closes.
func (c *Core) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed, or nil while it is open or after
// a plain Close.
func (c *Core) Err() error {
	if v, ok := c.closeErr.Load().(error); ok {
		return v
	}
	return nil
}

// Meta returns what the server's Authorize hook returned for this
// connection.
func (c *Core) Meta() any { return c.meta }

// SetMeta sets what Meta returns; call it before the connection is
// handed out.
func (c *Core) SetMeta(meta any) { c.meta = meta }

// IsDone reports whether the connection has closed.
func (c *Core) IsDone() bool { return c.closed.Load() }

// Closing records why the connection is closing, for Err, and logs it;
// a plain Close (reason nil) records nothing. Call it once, before
// Finish.
func (c *Core) Closing(reason error) {
	if reason != nil {
		c.closeErr.Store(reason)
		c.Log.Debug("transport: connection closed", "peer", c.id, "reason", reason)
	}
}

// Finish closes Done and drops what the inbox holds; call it once.
func (c *Core) Finish() {
	c.closed.Store(true)
	close(c.done)
	c.In.Clear()
}

// CheckSend refuses a message the connection cannot send now.
func (c *Core) CheckSend(msg []byte, max int, open bool) error {
	switch {
	case c.IsDone():
		return ErrClosed
	case len(msg) == 0:
		return ErrEmpty
	case len(msg) > max:
		return fmt.Errorf("%w: %d bytes > %d", ErrTooLarge, len(msg), max)
	case !open:
		return ErrClosed
	}
	return nil
}

// MaxFor returns the size limit of a channel.
func (c *Core) MaxFor(ch Channel) int {
	if ch == Reliable {
		return c.Lim.MaxReliable
	}
	return c.Lim.MaxUnreliable
}

// Sent counts a message sent now.
func (c *Core) Sent(n int) { c.SentAtNano(n, time.Now().UnixNano()) }

// SentAtNano counts a message sent at ns (unix nanoseconds): a stack
// with a clock of its own, coarser and cheaper than time.Now, which
// decides only when a keepalive is due.
func (c *Core) SentAtNano(n int, ns int64) {
	c.lastSend.Store(ns)
	c.sentMsgs.Add(1)
	c.sentBytes.Add(uint64(n))
}

// SentAt notes that something (a keepalive) went out at now.
func (c *Core) SentAt(now time.Time) { c.lastSend.Store(now.UnixNano()) }

// CountDropped counts an unreliable send dropped because the channel was
// backed up.
func (c *Core) CountDropped() { c.dropped.Add(1) }

// Check takes a received message: a keepalive (empty) or one over its
// channel's limit (the caller closes the connection) is not for the
// reader; otherwise it is counted.
func (c *Core) Check(ch Channel, data []byte) (bool, error) {
	return c.CheckAt(time.Now(), ch, data)
}

// CheckAt is Check for a message that came at now (a batch's time).
func (c *Core) CheckAt(now time.Time, ch Channel, data []byte) (bool, error) {
	c.lastRecv.Store(now.UnixNano())
	if len(data) == 0 {
		return false, nil
	}
	if len(data) > c.MaxFor(ch) {
		return false, fmt.Errorf("%w: received %d bytes on %s", ErrTooLarge, len(data), ch)
	}
	c.recvMsgs.Add(1)
	c.recvBytes.Add(uint64(len(data)))
	return true, nil
}

// Idle reports why the connection should close (silent too long) and
// whether a keepalive is due, at now.
func (c *Core) Idle(now time.Time) (error, bool) {
	if idle := now.Sub(time.Unix(0, c.lastRecv.Load())); idle > c.Lim.IdleTimeout {
		return fmt.Errorf("%w: idle for %v", ErrIdle, idle.Round(time.Millisecond)), false
	}
	return nil, now.Sub(time.Unix(0, c.lastSend.Load())) >= c.Lim.KeepAlive
}

// Snapshot returns the connection's counters, with rtt, the transport's
// round-trip estimate.
func (c *Core) Snapshot(rtt time.Duration) Stats {
	return Stats{
		RTT:               rtt,
		SentMessages:      c.sentMsgs.Load(),
		SentBytes:         c.sentBytes.Load(),
		RecvMessages:      c.recvMsgs.Load(),
		RecvBytes:         c.recvBytes.Load(),
		DroppedUnreliable: c.dropped.Load(),
	}
}

package transport

import (
	"context"

	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/transport/internal/inbox"
)

// connCore is what every network Conn (pion's and the lean stack's)
// keeps alike: the id, limits, inbox, close state and counters.
type connCore struct {
	id   PeerID
	lim  Limits
	log  *slog.Logger
	meta any

	in       *inbox.Inbox[Message]
	done     chan struct{}
	closeErr atomic.Value // error: why it closed

	lastRecv, lastSend                                atomic.Int64 // unix nanoseconds
	sentMsgs, sentBytes, recvMsgs, recvBytes, dropped atomic.Uint64
}

// isReliable tells an inbox a message's channel.
func isReliable(m Message) bool { return m.Channel == Reliable }

func (c *connCore) init(id PeerID, lim Limits, log *slog.Logger) {
	c.id, c.lim, c.log = id, lim, log
	c.done = make(chan struct{})
	c.in = inbox.New(c.done, lim.InboxUnreliable, lim.InboxReliable, isReliable, ErrClosed)
	now := time.Now().UnixNano()
	c.lastRecv.Store(now)
	c.lastSend.Store(now)
}

func (c *connCore) ID() PeerID { return c.id }

func (c *connCore) Receive(ctx context.Context) (Message, error) { return c.in.Pop(ctx) }

func (c *connCore) TryReceive() (Message, bool) { return c.in.TryPop() }

func (c *connCore) Done() <-chan struct{} { return c.done }

// Err returns why the connection closed, or nil while it is open or after
// a plain Close.
func (c *connCore) Err() error {
	if v, ok := c.closeErr.Load().(error); ok {
		return v
	}
	return nil
}

// Meta returns what the server's Authorize hook returned for this
// connection.
func (c *connCore) Meta() any { return c.meta }

func (c *connCore) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// checkSend refuses a message the connection cannot send now.
func (c *connCore) checkSend(msg []byte, max int, open bool) error {
	switch {
	case c.isDone():
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

// maxFor returns the size limit of a channel.
func (c *connCore) maxFor(ch Channel) int {
	if ch == Reliable {
		return c.lim.MaxReliable
	}
	return c.lim.MaxUnreliable
}

// sent counts a message sent.
func (c *connCore) sent(n int) {
	c.lastSend.Store(time.Now().UnixNano())
	c.sentMsgs.Add(1)
	c.sentBytes.Add(uint64(n))
}

// check takes a received message: a keepalive (empty) or one over its
// channel's limit (the caller closes the connection) is not for the
// reader; otherwise it is counted.
func (c *connCore) check(ch Channel, data []byte) (bool, error) {
	c.lastRecv.Store(time.Now().UnixNano())
	if len(data) == 0 {
		return false, nil
	}
	if len(data) > c.maxFor(ch) {
		return false, fmt.Errorf("%w: received %d bytes on %s", ErrTooLarge, len(data), ch)
	}
	c.recvMsgs.Add(1)
	c.recvBytes.Add(uint64(len(data)))
	return true, nil
}

// idle reports why the connection should close (silent too long) and
// whether a keepalive is due, at now.
func (c *connCore) idle(now time.Time) (error, bool) {
	if idle := now.Sub(time.Unix(0, c.lastRecv.Load())); idle > c.lim.IdleTimeout {
		return fmt.Errorf("%w: idle for %v", ErrIdle, idle.Round(time.Millisecond)), false
	}
	return nil, now.Sub(time.Unix(0, c.lastSend.Load())) >= c.lim.KeepAlive
}

func (c *connCore) stats(rtt time.Duration) Stats {
	return Stats{
		RTT:               rtt,
		SentMessages:      c.sentMsgs.Load(),
		SentBytes:         c.sentBytes.Load(),
		RecvMessages:      c.recvMsgs.Load(),
		RecvBytes:         c.recvBytes.Load(),
		DroppedUnreliable: c.dropped.Load(),
	}
}

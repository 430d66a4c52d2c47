// Package natsbus carries messages between processes on core NATS (no
// JetStream): a Bus whose Publish and Subscribe are those of the bus
// interface replica runs its protocol over, so that a world server
// and its game servers in separate processes share one NATS server.
//
// Delivery is core NATS's: at most once, in order per publisher and
// subject, to the subscribers present when the message reaches the NATS
// server. The replica protocol's versions and resync requests make up for
// what is lost.
//
// NewSealed seals what the bus carries with the cluster's secret, so
// that no NATS client without it can read or feed a replica. Auth gives
// a process's NATS credentials (a .creds file, an nkey seed,
// a user and password, a token; TLS) as nats.Options, for Dial or
// nats.Connect: a cluster's NATS server admits only the cluster's own
// processes (examples/serve/nats.conf).
package natsbus

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/seal"
)

// ErrClosed is returned by a Bus whose connection is closed.
var ErrClosed = errors.New("natsbus: connection closed")

// Bus publishes and subscribes on one NATS connection. It is safe for
// concurrent use.
type Bus struct {
	nc    *nats.Conn
	owned bool       // Close closes nc
	c     *seal.Conn // NewSealed's: what it sends is sealed, what it takes must open
}

// New returns a Bus on nc. Closing the Bus leaves nc open: its owner
// closes it. Its messages travel as they are: on a NATS server that
// anyone but the cluster can reach, use NewSealed.
func New(nc *nats.Conn) *Bus { return &Bus{nc: nc} }

// NewSealed returns a Bus on nc whose messages are sealed with the
// cluster's secret (at least 16 bytes; accept are secrets also taken,
// during a rotation), as package cluster seals its own: encrypted,
// authenticated, fresh. A message a subscription receives that does not
// open, is stale or is a replay is dropped and counted (Dropped), so
// that no NATS client without the secret can feed a replica's
// subscribers. Every process of the bus must use NewSealed with the same
// secret.
func NewSealed(nc *nats.Conn, secret []byte, accept ...[]byte) (*Bus, error) {
	k, err := seal.NewKeys(secret, accept...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	var b [6]byte
	rand.Read(b[:])
	c, err := seal.NewConn(nc, k, seal.RoleBus, "b"+hex.EncodeToString(b[:]), seal.Config{Name: "natsbus"})
	if err != nil {
		return nil, fmt.Errorf("natsbus: %w", err)
	}
	return &Bus{nc: nc, c: c}, nil
}

// Dropped counts the messages a sealed Bus's subscriptions dropped, by
// reason: "forged", "stale", "replayed" (nil for a Bus of New).
func (b *Bus) Dropped() map[string]uint64 {
	if b.c == nil {
		return nil
	}
	return b.c.Stats().Dropped()
}

// Dial connects to the NATS server at url (for example
// "nats://127.0.0.1:4222"; nats.DefaultURL) with opts and returns a Bus
// that owns the connection: Close closes it.
func Dial(url string, opts ...nats.Option) (*Bus, error) {
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsbus: connect %s: %w", url, err)
	}
	return &Bus{nc: nc, owned: true}, nil
}

// Conn returns the underlying connection.
func (b *Bus) Conn() *nats.Conn { return b.nc }

// Publish sends msg to every current subscriber of subject. msg is copied
// into the connection's buffer before Publish returns, so the caller may
// reuse it at once. A message larger than the server's maximum payload
// (nats.Conn.MaxPayload, 1 MiB by default) is refused with an error.
func (b *Bus) Publish(subject string, msg []byte) error {
	var err error
	if b.c != nil {
		err = b.c.Publish(subject, msg)
	} else {
		err = b.nc.Publish(subject, msg)
	}
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return fmt.Errorf("%w: publish %s", ErrClosed, subject)
		}
		return fmt.Errorf("natsbus: publish %s (%d bytes): %w", subject, len(msg), err)
	}
	return nil
}

// Subscribe calls fn for every message published on subject (NATS
// wildcards allowed), from one goroutine per subscription, until cancel is
// called. The subscription is in place at the NATS server when Subscribe
// returns, so that a message published after it returns is delivered.
// After cancel returns no new call of fn begins (one already running
// finishes). fn must not retain msg after it returns.
func (b *Bus) Subscribe(subject string, fn func(msg []byte)) (cancel func(), err error) {
	if fn == nil {
		return nil, errors.New("natsbus: Subscribe with a nil func")
	}
	var done atomic.Bool
	var sub *nats.Subscription
	if b.c != nil {
		sub, err = b.c.Subscribe(subject, func(m *seal.Msg) {
			if !done.Load() {
				fn(m.Data)
			}
		})
	} else {
		sub, err = b.nc.Subscribe(subject, func(m *nats.Msg) {
			if !done.Load() {
				fn(m.Data)
			}
		})
	}
	if err != nil {
		if errors.Is(err, nats.ErrConnectionClosed) {
			return nil, fmt.Errorf("%w: subscribe %s", ErrClosed, subject)
		}
		return nil, fmt.Errorf("natsbus: subscribe %s: %w", subject, err)
	}
	// A round trip to the server: the subscription is registered there.
	if err := b.nc.Flush(); err != nil {
		sub.Unsubscribe()
		return nil, fmt.Errorf("natsbus: subscribe %s: %w", subject, err)
	}
	return func() {
		if done.Swap(true) {
			return
		}
		sub.Unsubscribe() // fails only if the connection is closed: nothing is delivered then
	}, nil
}

// Close closes the connection if the Bus opened it (Dial), after sending
// what is buffered; a Bus from New leaves its connection open.
func (b *Bus) Close() error {
	if b.c != nil {
		b.c.Close()
	}
	if !b.owned {
		return nil
	}
	err := b.nc.Flush()
	b.nc.Close()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("natsbus: close: %w", err)
	}
	return nil
}

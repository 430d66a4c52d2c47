// Package conn holds what every network connection of the transport
// shares, whichever stack serves it: its identity, its two channels, the
// messages and counters it hands out, its limits, the sentinel errors it
// fails with, and Core, the state every connection keeps alike. The
// transport package names these types in its public API (as aliases),
// and the stacks under it build their connections on them.
package conn

import (
	"time"

	"github.com/tongbu/tongbu/codec"
)

// PeerID identifies a connection for its whole life; the side that accepts
// connections assigns it.
type PeerID uint64

// Channel names one of the two channels of a connection.
type Channel uint8

const (
	// Unreliable is the "u" channel: unordered, never retransmitted. Inputs,
	// frames and state go here; the modes add their own reliability.
	Unreliable Channel = iota
	// Reliable is the "r" channel: ordered and retransmitted until
	// delivered. Control and bulk catch-up go here.
	Reliable
)

func (c Channel) String() string {
	switch c {
	case Unreliable:
		return "u"
	case Reliable:
		return "r"
	default:
		return "?"
	}
}

// DefaultMaxUnreliable is the largest message the unreliable channel takes
// by default: codec.MaxPacket, one SCTP chunk on a typical path, so a
// message is never fragmented.
const DefaultMaxUnreliable = codec.MaxPacket

// Message is one received message.
type Message struct {
	Channel Channel
	Data    []byte // owned by the receiver
}

// Stats counts a connection's traffic.
type Stats struct {
	RTT               time.Duration // smoothed round-trip estimate; 0 before the first sample
	SentMessages      uint64        // both channels
	SentBytes         uint64
	RecvMessages      uint64
	RecvBytes         uint64
	DroppedUnreliable uint64 // unreliable sends dropped because the channel was backed up
}

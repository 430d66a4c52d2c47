//go:build !js

package transport

import (
	"time"

	"github.com/tongbu/tongbu/transport/internal/lean"
)

// DataPathStats describes the work of the lean stack's reader and the
// protection it applied: how long each datagram took to handle (every
// protocol of its peer, and the Handler the message went to), the most
// chunks one peer's SCTP held for reassembly, and the address moves made
// and refused. A server on the pion stack reports zeros.
type DataPathStats struct {
	// Sockets is how many sockets the server reads (ServerConfig.Sockets):
	// the figures below are summed over them.
	Sockets int
	// Datagrams counts the datagrams the reader handled.
	Datagrams uint64
	// DatagramBuckets[i] counts the datagrams handled in at most
	// DatagramBounds[i]; the last counts the rest.
	DatagramBuckets []uint64
	// DatagramTime is the time spent on all of them.
	DatagramTime time.Duration
	// MaxDatagram is the longest one datagram took.
	MaxDatagram time.Duration
	// HeldChunksMax is the most chunks one peer's SCTP association held
	// for reassembly or order at once (bounded per association).
	HeldChunksMax int
	// Moves counts peers that moved to a new address they proved theirs;
	// MovesRefused the proven moves refused (too many in a minute, or the
	// address taken meanwhile); ChecksRefused the authenticated ICE
	// checks from an address another peer holds (forged to take it).
	Moves, MovesRefused, ChecksRefused uint64
	// FlushesDeferred counts the times the flusher found a peer busy and
	// left it to be queued again, rather than wait for it.
	FlushesDeferred uint64
	// TCPConns counts the TCP connections accepted (ICE-TCP, for players
	// whose network blocks UDP: ServerConfig.TCPAddr), TCPRefused those
	// closed at once because too many had yet to send an authenticated
	// check, and TCPPaths the times a peer took a TCP connection as its
	// path.
	TCPConns, TCPRefused, TCPPaths uint64
}

// DatagramBounds are the upper bounds of DataPathStats.DatagramBuckets:
// 1, 2, 5, 10, 20, 50, 100, 200 and 500 µs, 1 ms and 5 ms.
var DatagramBounds = lean.DatagramBounds

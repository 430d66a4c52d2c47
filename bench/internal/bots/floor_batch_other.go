//go:build !linux && !js

package bots

import (
	"net"

	"golang.org/x/net/ipv4"
)

// newBatchConn: where the raw calls are not wired up, x/net's batches
// (one datagram a call outside Linux).
func newBatchConn(c *net.UDPConn) (batchConn, error) { return ipv4.NewPacketConn(c), nil }

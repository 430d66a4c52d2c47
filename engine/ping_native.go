//go:build !js

package engine

import (
	"context"
	"net"
)

// canUDP: a native client pings the game's UDP port.
const canUDP = true

func dialUDP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "udp", addr)
}

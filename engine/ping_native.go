//go:build !js

package engine

import (
	"context"
	"net"
	"time"
)

// probeUDP pings the game's UDP port natively: region pings (§6.5).
func probeUDP(ctx context.Context, addr string, c *MeasureConfig) ([]time.Duration, int, error) {
	return udpPings(ctx, addr, c)
}

func dialUDP(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "udp", addr)
}

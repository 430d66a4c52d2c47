//go:build !js

package lean

import (
	"net/netip"
	"time"

	"github.com/tongbu/tongbu/transport/internal/probe"
)

// probe answers a region ping or a STUN binding request without
// credentials from ap (package probe: a client measuring its path to
// this server), within the socket's rate.
func (s *socket) probe(now time.Time, b []byte, ap netip.AddrPort) {
	if !s.pings.Take(now) {
		return
	}
	var buf [64]byte
	if out, ok := probe.Answer(buf[:0], b, ap); ok {
		s.conn.WriteToUDPAddrPort(out, ap)
	}
}

//go:build !js

package lean

import (
	"net/netip"
	"sync"
	"time"
)

// A region ping (SPEC.md §6.5): a client sends PingSize bytes, PingMagic
// then any 12 bytes of its own (a nonce and a sequence number); the
// server's socket sends them back with the fourth byte 'R'. The first
// byte, 'T' (84), is one RFC 7983 gives to no protocol, so a ping never
// reaches ICE or DTLS. The answer is no larger than the request (no
// amplification), and a socket answers at most pingRate a second.
const (
	// PingSize is the size of a ping and of its answer.
	PingSize = 16
	// PingMagic begins a ping; PongMagic its answer.
	PingMagic = "TBPQ"
	PongMagic = "TBPR"
)

// pingRate bounds the pings one socket answers a second: a flood of
// spoofed pings reflects at most pingRate * PingSize bytes a second.
const pingRate = 4096

// pingLimit is a socket's bucket of ping answers.
type pingLimit struct {
	mu     sync.Mutex
	tokens float64
	at     time.Time
}

// take reports whether a ping may be answered at now.
func (l *pingLimit) take(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tokens = min(pingRate, l.tokens+now.Sub(l.at).Seconds()*pingRate)
	l.at = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// isPing reports whether b is a region ping.
func isPing(b []byte) bool { return len(b) == PingSize && string(b[:4]) == PingMagic }

// pong answers a region ping from ap, within the socket's rate.
func (s *socket) pong(now time.Time, b []byte, ap netip.AddrPort) {
	if !s.pings.take(now) {
		return
	}
	var out [PingSize]byte
	copy(out[:], b)
	copy(out[:4], PongMagic)
	s.conn.WriteToUDPAddrPort(out[:], ap)
}

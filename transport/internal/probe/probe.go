// Package probe answers what a player's client sends a server's UDP port
// to measure the path to it (SPEC.md §6.5), ahead of any connection: a
// region ping (engine.MeasureRegions), and a STUN binding request with
// no credentials, which a browser sends to a STUN server (the network
// test page, engine.NetTestPath). Both stacks answer them on the port
// their peers use, within one rate a socket.
package probe

import (
	"encoding/binary"
	"net/netip"
	"sync"
	"time"

	"github.com/tongbu/tongbu/internal/tokens"
)

// A region ping: a client sends PingSize bytes, PingMagic then any 12
// bytes of its own (a nonce and a sequence number); the server sends
// them back with the fourth byte 'R'. The first byte, 'T' (84), is one
// RFC 7983 gives to no protocol, so a ping never reaches ICE or DTLS.
const (
	// PingSize is the size of a ping and of its answer.
	PingSize = 16
	// PingMagic begins a ping; PongMagic its answer.
	PingMagic = "TBPQ"
	PongMagic = "TBPR"
)

// Rate bounds the probes one socket answers a second: a flood of spoofed
// probes reflects at most Rate answers a second, each no larger than its
// request (a ping) or 12 bytes larger (a STUN answer to IPv4, 20-byte
// requests: 32 bytes).
const Rate = 4096

// Limit is a socket's bucket of probe answers; the zero value is ready.
type Limit struct {
	mu sync.Mutex
	b  tokens.Bucket
}

// Take reports whether a probe may be answered at now.
func (l *Limit) Take(now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Take(now, Rate, Rate)
}

// IsPing reports whether b is a region ping.
func IsPing(b []byte) bool { return len(b) == PingSize && string(b[:4]) == PingMagic }

// Pong appends the answer to ping b to dst.
func Pong(dst, b []byte) []byte {
	dst = append(dst, PongMagic...)
	return append(dst, b[4:PingSize]...)
}

// STUN (RFC 8489): the header, and the attributes this package reads.
const (
	stunHeader      = 20
	stunCookie      = 0x2112A442
	bindingRequest  = 0x0001
	bindingSuccess  = 0x0101
	attrUsername    = 0x0006
	attrIntegrity   = 0x0008
	attrIntegrity2  = 0x001C
	attrXORMapped   = 0x0020
	maxAnonymousLen = 256
)

// IsAnonymousBinding reports whether b is a STUN binding request without
// credentials (no USERNAME, no MESSAGE-INTEGRITY): what a browser sends a
// STUN server to learn its public address. ICE's own checks carry
// credentials, and go to the stack.
func IsAnonymousBinding(b []byte) bool {
	if len(b) < stunHeader || len(b) > maxAnonymousLen || b[0] >= 4 {
		return false
	}
	if binary.BigEndian.Uint16(b) != bindingRequest || int(binary.BigEndian.Uint16(b[2:]))+stunHeader != len(b) ||
		binary.BigEndian.Uint32(b[4:]) != stunCookie {
		return false
	}
	for a := b[stunHeader:]; len(a) > 0; {
		if len(a) < 4 {
			return false
		}
		typ, n := binary.BigEndian.Uint16(a), int(binary.BigEndian.Uint16(a[2:]))
		if typ == attrUsername || typ == attrIntegrity || typ == attrIntegrity2 {
			return false
		}
		n = (n + 3) &^ 3 // attributes are padded to 4 bytes
		if 4+n > len(a) {
			return false
		}
		a = a[4+n:]
	}
	return true
}

// BindingAnswer appends the answer to anonymous binding request b (see
// IsAnonymousBinding) from ap to dst: a binding success with the same
// transaction ID and ap as its XOR-MAPPED-ADDRESS, nothing else.
func BindingAnswer(dst, b []byte, ap netip.AddrPort) []byte {
	addr := ap.Addr().Unmap()
	family, size := byte(1), 4
	if addr.Is6() {
		family, size = 2, 16
	}
	dst = binary.BigEndian.AppendUint16(dst, bindingSuccess)
	dst = binary.BigEndian.AppendUint16(dst, uint16(4+4+size))
	dst = append(dst, b[4:stunHeader]...) // the cookie and transaction ID
	dst = binary.BigEndian.AppendUint16(dst, attrXORMapped)
	dst = binary.BigEndian.AppendUint16(dst, uint16(4+size))
	dst = append(dst, 0, family)
	dst = binary.BigEndian.AppendUint16(dst, ap.Port()^(stunCookie>>16))
	ip := addr.AsSlice()
	for i := range ip {
		ip[i] ^= b[4+i] // the cookie, then (IPv6) the transaction ID
	}
	return append(dst, ip...)
}

// Answer appends the answer to probe b from ap to dst and reports true,
// or reports false when b is no probe. The caller applies its Limit.
func Answer(dst, b []byte, ap netip.AddrPort) ([]byte, bool) {
	switch {
	case IsPing(b):
		return Pong(dst, b), true
	case IsAnonymousBinding(b):
		return BindingAnswer(dst, b, ap), true
	}
	return dst, false
}

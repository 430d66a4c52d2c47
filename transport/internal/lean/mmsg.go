//go:build !js

package lean

import "net/netip"

// The socket's batched system calls: recvmmsg and sendmmsg on Linux, a
// datagram a call elsewhere. Neither allocates: the headers, the
// addresses' storage and the buffers are made once, with the batch, and
// an address is a netip.AddrPort, a value.

// inDatagram is one datagram a batch read: its bytes (a buffer of the
// batch's own, valid until the next read), where it came from, and its
// control messages (a shared socket's, for IP_PKTINFO).
type inDatagram struct {
	b    []byte
	from netip.AddrPort
	oob  []byte
}

// outDatagram is one datagram to send: its bytes, where to, and the
// control message that picks its source address (a shared socket's
// client), or nil.
type outDatagram struct {
	b   []byte
	to  netip.AddrPort
	oob []byte
}

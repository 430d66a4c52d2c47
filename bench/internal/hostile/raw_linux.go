//go:build linux

package hostile

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"syscall"
)

// Spoofer sends UDP datagrams with any IPv4 source address through a raw
// socket: what an attacker on a network that does not filter source
// addresses can do. It needs CAP_NET_RAW (root).
type Spoofer struct{ fd int }

// NewSpoofer opens the raw socket.
func NewSpoofer() (*Spoofer, error) {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		return nil, fmt.Errorf("hostile: raw socket (needs root): %w", err)
	}
	return &Spoofer{fd: fd}, nil
}

// Send sends payload from from to to. The kernel fills in the IP
// header's checksum, length and id; the UDP checksum is left zero, which
// IPv4 allows.
func (s *Spoofer) Send(from, to netip.AddrPort, payload []byte) error {
	if !from.Addr().Is4() || !to.Addr().Is4() {
		return fmt.Errorf("hostile: IPv4 only")
	}
	pkt := make([]byte, 28+len(payload))
	pkt[0] = 0x45 // IPv4, 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))
	pkt[8] = 64 // TTL
	pkt[9] = syscall.IPPROTO_UDP
	src, dst := from.Addr().As4(), to.Addr().As4()
	copy(pkt[12:], src[:])
	copy(pkt[16:], dst[:])
	binary.BigEndian.PutUint16(pkt[20:], from.Port())
	binary.BigEndian.PutUint16(pkt[22:], to.Port())
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload)))
	copy(pkt[28:], payload)
	return syscall.Sendto(s.fd, pkt, 0, &syscall.SockaddrInet4{Addr: dst})
}

// Close closes the raw socket.
func (s *Spoofer) Close() error { return syscall.Close(s.fd) }

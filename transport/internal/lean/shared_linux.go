//go:build linux

package lean

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"sync"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// The shared client socket (transport.ClientConfig.SharedSocket): one UDP socket,
// bound to the wildcard address, from which each lean client of the
// process that dials a loopback server sends from an address of its own
// in 127.0.0.0/8. The server tells the clients apart by that address as
// it would tell apart clients on their own sockets; the socket's reader
// finds a datagram's client by the datagram's destination address, which
// IP_PKTINFO reports. One reader and one batched writer then serve all
// the clients, where their own sockets cost a wake-up and a system call
// for every datagram each way.
var (
	sharedOnce sync.Once
	sharedSock *socket
	sharedErr  error
)

// sharedClientSocket returns the process's shared client socket, made on
// first use.
func sharedClientSocket(ep *endpoint) (*socket, error) {
	sharedOnce.Do(func() {
		udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4zero})
		if err != nil {
			sharedErr = fmt.Errorf("transport: shared client socket: %w", err)
			return
		}
		if err := ipv4.NewPacketConn(udp).SetControlMessage(ipv4.FlagDst, true); err != nil {
			udp.Close()
			sharedErr = fmt.Errorf("transport: shared client socket: IP_PKTINFO: %w", err)
			return
		}
		udp.SetReadBuffer(sockBuf)
		udp.SetWriteBuffer(sockBuf)
		if sharedSock, sharedErr = newSharedSocket(ep, udp); sharedErr != nil {
			udp.Close()
			return
		}
		// Start at a random address: a server that still holds a former
		// process's clients does not see this one's at their addresses.
		var r [4]byte
		rand.Read(r[:])
		sharedSock.next = binary.BigEndian.Uint32(r[:]) % sharedCount
	})
	return sharedSock, sharedErr
}

// Local addresses are handed out in turn from 127.1.0.1 up (from a random
// one of them first), wrapping before 127.255.255.255; 127.0.0.0/16 is
// left to servers and other programs.
const (
	sharedFirst = 0x7f010001
	sharedCount = 0x7fffffff - sharedFirst
)

// attach gives p a local address of the shared socket s that no other
// client holds, and routes that address's datagrams to it.
func (s *socket) attach(p *Peer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.byLocal) >= sharedCount {
		return fmt.Errorf("transport: shared client socket: every local address is taken")
	}
	for {
		n := sharedFirst + s.next%sharedCount
		s.next++
		a := netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
		if s.byLocal[a] != nil {
			continue
		}
		s.byLocal[a] = p
		p.local = a
		p.oob = (&ipv4.ControlMessage{Src: a.AsSlice()}).Marshal()
		return nil
	}
}

// pktinfoDst returns the destination address that IP_PKTINFO reports in
// a received datagram's control messages.
func pktinfoDst(oob []byte) (netip.Addr, bool) {
	for len(oob) >= unix.CmsgLen(0) {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return netip.Addr{}, false
		}
		if h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO && len(data) >= unix.SizeofInet4Pktinfo {
			return netip.AddrFrom4([4]byte(data[8:12])), true // ipi_addr: the header's destination
		}
		oob = rest
	}
	return netip.Addr{}, false
}

//go:build !js

package lean

import (
	"context"
	"fmt"
	"net"
	"runtime"
)

// Listen opens the server's UDP sockets on addr: n of them on the same
// address where the system can share a port among sockets
// (SO_REUSEPORT, on Linux), each then served by its own reader and
// flusher, with the kernel spreading the peers over them by address; one
// elsewhere, or when n is 1. n = 0 is one a core (GOMAXPROCS).
func Listen(addr string, n int) ([]*net.UDPConn, error) {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	if !reusePortWorks {
		n = 1
	}
	if n == 1 {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
		}
		return []*net.UDPConn{pc.(*net.UDPConn)}, nil
	}
	// A socket with SO_REUSEPORT may share its port with any other of
	// this user's that has it too, another server's (one left running,
	// or started twice): the port is first bound alone, which fails as
	// any server's would when it is taken, and the sockets then bind the
	// port it got. Another process taking it in between (a port just
	// freed) is tried again.
	var err error
	for try := 0; try < 3; try++ {
		var probe net.PacketConn
		if probe, err = net.ListenPacket("udp", addr); err != nil {
			return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
		}
		at := probe.LocalAddr().String()
		probe.Close()
		var socks []*net.UDPConn
		if socks, err = listenShared(at, n); err == nil {
			return socks, nil
		}
	}
	return nil, err
}

// listenShared binds n sockets with SO_REUSEPORT to addr.
func listenShared(addr string, n int) ([]*net.UDPConn, error) {
	lc := net.ListenConfig{Control: reusePort}
	var socks []*net.UDPConn
	for range n {
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			for _, c := range socks {
				c.Close()
			}
			return nil, fmt.Errorf("transport: listen %s: %w", addr, err)
		}
		socks = append(socks, pc.(*net.UDPConn))
	}
	return socks, nil
}

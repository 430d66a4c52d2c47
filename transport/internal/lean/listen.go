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
	lc := net.ListenConfig{}
	if n > 1 {
		lc.Control = reusePort
	}
	var socks []*net.UDPConn
	fail := func(err error) ([]*net.UDPConn, error) {
		for _, c := range socks {
			c.Close()
		}
		return nil, err
	}
	for i := range n {
		at := addr
		if i > 0 {
			at = socks[0].LocalAddr().String() // the first's port, when addr's was 0
		}
		pc, err := lc.ListenPacket(context.Background(), "udp", at)
		if err != nil {
			return fail(fmt.Errorf("transport: listen %s: %w", at, err))
		}
		socks = append(socks, pc.(*net.UDPConn))
	}
	return socks, nil
}

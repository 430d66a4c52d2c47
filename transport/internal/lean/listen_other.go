//go:build !linux && !js

package lean

import "syscall"

// Elsewhere than Linux a port is not spread over sockets by the kernel
// (BSD's SO_REUSEPORT gives every datagram to the last socket bound).
const reusePortWorks = false

func reusePort(_, _ string, _ syscall.RawConn) error { return nil }

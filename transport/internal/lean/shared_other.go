//go:build !linux && !js

package lean

import (
	"errors"
	"net/netip"
)

var errNoShared = errors.New("transport: a shared client socket needs Linux")

// sharedClientSocket: elsewhere than Linux each client has its own socket.
func sharedClientSocket(*endpoint) (*socket, error) { return nil, errNoShared }

func (s *socket) attach(*Peer) error { return errNoShared }

func pktinfoDst([]byte) (netip.Addr, bool) { return netip.Addr{}, false }

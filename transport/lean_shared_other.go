//go:build !linux && !js

package transport

import (
	"errors"
	"net/netip"
)

var errNoShared = errors.New("transport: a shared client socket needs Linux")

// sharedClientSocket: elsewhere than Linux each client has its own socket.
func sharedClientSocket(*leanEndpoint) (*leanSocket, error) { return nil, errNoShared }

func (s *leanSocket) attach(*leanPeer) error { return errNoShared }

func pktinfoDst([]byte) (netip.Addr, bool) { return netip.Addr{}, false }

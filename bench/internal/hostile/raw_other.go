//go:build !linux && !js

package hostile

import (
	"errors"
	"net/netip"
)

// Spoofer sends datagrams with forged source addresses: Linux only.
type Spoofer struct{}

// NewSpoofer fails here.
func NewSpoofer() (*Spoofer, error) { return nil, errors.New("hostile: forged sources need Linux") }

// Send fails here.
func (*Spoofer) Send(from, to netip.AddrPort, payload []byte) error {
	return errors.New("hostile: forged sources need Linux")
}

// Close does nothing.
func (*Spoofer) Close() error { return nil }

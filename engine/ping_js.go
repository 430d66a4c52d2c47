//go:build js

package engine

import (
	"context"
	"errors"
	"net"
)

// canUDP: a browser sends no raw UDP; it measures over HTTP.
const canUDP = false

func dialUDP(context.Context, string) (net.Conn, error) {
	return nil, errors.New("engine: no UDP in a browser")
}

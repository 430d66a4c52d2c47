//go:build !js

package transport

import (
	"context"
	"net"
	"net/http"

	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/lean"
)

// The lean stack (ServerConfig.Stack = StackLean) lives in
// transport/internal/lean; here it meets the Server and Dial.

// A lean peer is a Conn, a Handler and a Warmer.
var (
	_ Conn    = (*lean.Peer)(nil)
	_ Handler = (*lean.Peer)(nil)
	_ Warmer  = (*lean.Peer)(nil)
)

// leanStack is the lean stack's server as a Server's serverStack.
type leanStack struct{ *lean.Server }

// listenLean opens the lean stack's sockets on addr (ServerConfig.Sockets).
func listenLean(addr string, n int) ([]*net.UDPConn, error) { return lean.Listen(addr, n) }

// newLeanServer serves s's peers on udps with the lean stack.
func newLeanServer(s *Server, udps []*net.UDPConn, tcp *net.TCPListener) (leanStack, error) {
	l, err := lean.NewServer(udps, lean.ServerConfig{
		TCP:    tcp,
		Limits: conn.Limits(s.lim), Logger: s.log,
		PublicIPs: s.cfg.PublicIPs, IncludeLoopback: s.cfg.IncludeLoopback,
		Refused: s.cfg.Refused, Admit: s.cfg.Admit,
		Network: s.cfg.ClientNetworks.key,
		Opened:  func(p *lean.Peer, refuse func()) { s.opened(p, refuse) },
	})
	return leanStack{l}, err
}

// DataPath returns the lean stack's figures.
func (l leanStack) DataPath() DataPathStats { return DataPathStats(l.Server.DataPath()) }

// leanNative says the lean client runs here (natively; in the browser the
// browser's own stack serves).
const leanNative = true

// dialLean is Dial over the lean stack: the client's half of the same
// state machines, for load generators that drive thousands of peers.
func dialLean(ctx context.Context, url string, cfg *ClientConfig, lim Limits, hc *http.Client, maxAnswer int64) (Conn, error) {
	p, err := lean.Dial(ctx, lean.DialConfig{
		Limits: conn.Limits(lim), Logger: cfg.Logger, SharedSocket: cfg.SharedSocket, Loopback: isLoopbackURL(url),
		Network: cfg.Network,
		Post: func(ctx context.Context, offer string) (string, error) {
			return postOffer(ctx, hc, url, cfg.Header, offer, maxAnswer)
		},
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

//go:build !js

package transport

import (
	"net"
	"sync"
)

// DefaultConnsPerAddr is a limit for LimitListener that a player's
// browser (a few parallel fetches and the signaling request) never
// reaches.
const DefaultConnsPerAddr = 32

// LimitListener returns a listener that accepts at most perAddr open
// connections from one IP address: a further connection from it is closed
// at once. Players behind one NAT share an address, so leave room for
// them. Loopback addresses are not limited (local bots, tests, a reverse
// proxy on the same host: behind a proxy, limit at the proxy).
func LimitListener(ln net.Listener, perAddr int) net.Listener {
	return &limitListener{Listener: ln, per: perAddr, open: make(map[string]int)}
}

type limitListener struct {
	net.Listener
	per int

	mu   sync.Mutex
	open map[string]int // open connections by IP address
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		addr := limitKey(c.RemoteAddr().String())
		if addr == "" {
			return c, nil
		}
		l.mu.Lock()
		full := l.open[addr] >= l.per
		if !full {
			l.open[addr]++
		}
		l.mu.Unlock()
		if full {
			c.Close()
			continue
		}
		return &limitConn{Conn: c, l: l, addr: addr}, nil
	}
}

// limitConn gives its place back when closed, once.
type limitConn struct {
	net.Conn
	l    *limitListener
	addr string
	once sync.Once
}

func (c *limitConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		if c.l.open[c.addr]--; c.l.open[c.addr] <= 0 {
			delete(c.l.open, c.addr)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}

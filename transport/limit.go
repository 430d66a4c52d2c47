//go:build !js

package transport

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/transport/internal/netlimit"
)

// DefaultConnsPerAddr is a limit for LimitListener that a player's
// browser (a few parallel fetches and the signaling request) never
// reaches.
const DefaultConnsPerAddr = 32

// DefaultMaxConns is a Listener's default bound on the connections open
// at once: well under a server's usual descriptor limit, and about 30 MiB
// of idle HTTP connections. Signaling needs a connection for one request;
// pages keep theirs alive, but idle ones make room for new ones.
const DefaultMaxConns = 2048

// ListenerConfig bounds the connections a Listener keeps open.
type ListenerConfig struct {
	// PerNetwork bounds the connections open from one client network (an
	// IPv4 address or IPv6 /64, as Networks counts them; default
	// DefaultConnsPerAddr). Players behind one NAT share an address, so
	// leave room for them.
	PerNetwork int
	// MaxConns bounds the connections open at once (default
	// DefaultMaxConns). At the bound, a new connection from a network
	// that holds few (under a quarter of PerNetwork) takes the place of an
	// idle one (between requests, as the HTTP server reports through
	// ConnState; engine.HTTPServer sets it): of the network that holds the
	// most, the one idle the longest. A new connection from a network that
	// holds more, or when none is idle, is closed at once. So idle
	// keep-alives from many addresses never lock players out, and cannot
	// make the server cycle through connections either.
	MaxConns int
	// ConnRate bounds how many new connections one client network may
	// open a second, after a burst of twice as many (default 8: a page
	// load opens a few, a join one); more are closed as they are
	// accepted, before the HTTP server spends anything on them. A negative
	// value leaves the rate unbounded.
	ConnRate int
	// Networks finds and groups clients' addresses.
	Networks ClientNetworks
}

// LimitListener returns a listener that accepts at most perAddr open
// connections from one client network (an IPv4 address, an IPv6 /64) and
// DefaultMaxConns in all: see NewListener. Loopback addresses are not
// limited per address (local bots, tests; a reverse proxy on the same
// host: list it in ListenerConfig.Networks.TrustedProxies).
func LimitListener(ln net.Listener, perAddr int) net.Listener {
	return NewListener(ln, ListenerConfig{PerNetwork: perAddr})
}

// NewListener returns a listener that bounds the connections open per
// client network and in all, as cfg says. A further connection is
// closed at once (or, at MaxConns, takes the place of the longest idle
// one). Serve HTTP on it with an http.Server whose ConnState hook calls
// ConnState (engine.HTTPServer does), so that it knows which connections
// sit idle.
func NewListener(ln net.Listener, cfg ListenerConfig) net.Listener {
	if cfg.PerNetwork <= 0 {
		cfg.PerNetwork = DefaultConnsPerAddr
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.ConnRate == 0 {
		cfg.ConnRate = 8
	}
	return &limitListener{Listener: ln, cfg: cfg, open: make(map[netip.Prefix]int), conns: make(map[*limitConn]struct{}),
		rate: netlimit.Rate{Rate: cfg.ConnRate}}
}

type limitListener struct {
	net.Listener
	cfg     ListenerConfig
	evicted atomic.Uint64

	mu    sync.Mutex
	open  map[netip.Prefix]int // open connections by client network
	conns map[*limitConn]struct{}
	rate  netlimit.Rate // new connections by client network
}

// allow takes a token for a new connection from key; l.mu is held.
func (l *limitListener) allow(key netip.Prefix, now time.Time) bool { return l.rate.Allow(key, now) }

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, bounded := l.cfg.Networks.connKey(c.RemoteAddr())
		lc := &limitConn{Conn: c, l: l, key: key, bounded: bounded}
		var evict *limitConn
		l.mu.Lock()
		ok := !bounded || l.open[key] < l.cfg.PerNetwork && l.allow(key, time.Now())
		if ok && len(l.conns) >= l.cfg.MaxConns {
			if bounded && l.open[key] >= max(1, l.cfg.PerNetwork/4) {
				ok = false // it holds its share: it makes no room
			} else if evict = l.idlest(); evict == nil {
				ok = false
			}
		}
		if ok {
			if bounded {
				l.open[key]++
			}
			l.conns[lc] = struct{}{}
		}
		l.mu.Unlock()
		if evict != nil {
			l.evicted.Add(1)
			evict.Close()
		}
		if !ok {
			c.Close()
			continue
		}
		return lc, nil
	}
}

// idlest returns the idle connection to close for a new one: of the
// network that holds the most connections, the one idle the longest; nil
// when none is idle. l.mu is held. It looks at every connection, which
// it does only at MaxConns.
func (l *limitListener) idlest() *limitConn {
	var best *limitConn
	var since int64
	most := -1
	for c := range l.conns {
		t := c.idleSince.Load()
		if t == 0 {
			continue
		}
		n := 0
		if c.bounded {
			n = l.open[c.key]
		}
		if n > most || n == most && t < since {
			best, since, most = c, t, n
		}
	}
	return best
}

// limitConn gives its place back when closed, once.
type limitConn struct {
	net.Conn
	l         *limitListener
	key       netip.Prefix
	bounded   bool
	idleSince atomic.Int64 // unix nanoseconds since it sits between requests; 0 when not
	once      sync.Once
}

func (c *limitConn) Close() error {
	c.release()
	return c.Conn.Close()
}

func (c *limitConn) release() {
	c.once.Do(func() {
		l := c.l
		l.mu.Lock()
		delete(l.conns, c)
		if c.bounded {
			if l.open[c.key]--; l.open[c.key] <= 0 {
				delete(l.open, c.key)
			}
		}
		l.mu.Unlock()
	})
}

// ConnState is an http.Server ConnState hook that tells a Listener's
// connections when they sit idle between requests (those are the ones
// it closes to make room at its MaxConns). Other connections are left
// alone. It sees through TLS: an HTTPS server on a Listener is bounded
// the same way.
func ConnState(c net.Conn, st http.ConnState) {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	lc, ok := c.(*limitConn)
	if !ok {
		return
	}
	switch st {
	case http.StateIdle:
		lc.idleSince.Store(time.Now().UnixNano())
	case http.StateActive:
		lc.idleSince.Store(0)
	case http.StateHijacked, http.StateClosed:
		lc.idleSince.Store(0)
		lc.release()
	}
}

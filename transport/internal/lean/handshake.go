//go:build !js

package lean

import (
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// hsConn is the net.PacketConn pion/dtls runs its handshake on, for one
// peer of the lean stack: the socket's reader feeds it the peer's
// handshake datagrams, and its writes go straight to the socket. Once the
// handshake is done it is handed off: writes are dropped (pion's
// close_notify must not reach the peer, whose connection goes on), and
// the last flight written is kept, to answer a peer that did not get it.
type hsConn struct {
	sock  *socket
	oob   []byte // the source address of a shared socket's client
	local net.Addr
	in    chan []byte

	mu        sync.Mutex
	raddr     *net.UDPAddr // where the peer is: it may move while the handshake runs
	rap       netip.AddrPort
	tcp       *tcpPath // the peer's TCP path, when it is on one
	handed    bool
	flight    [][]byte // the datagrams written since the last read
	readSince bool
	deadline  time.Time
	poke      chan struct{} // the read deadline changed
	closed    chan struct{}
	once      sync.Once
}

func newHSConn(sock *socket, raddr *net.UDPAddr, oob []byte, tp *tcpPath) *hsConn {
	return &hsConn{sock: sock, oob: oob, local: sock.conn.LocalAddr(), raddr: raddr, rap: raddr.AddrPort(), tcp: tp,
		in: make(chan []byte, 32), poke: make(chan struct{}, 1), closed: make(chan struct{})}
}

// feed queues a datagram for the handshake; it is dropped when the
// handshake is behind (the peer retransmits).
func (c *hsConn) feed(b []byte) {
	select {
	case c.in <- b:
	default:
	}
}

// handoff stops the handshake's writes and returns its last flight.
func (c *hsConn) handoff() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.handed = true
	return c.flight
}

type timeoutError struct{}

func (timeoutError) Error() string   { return "transport: handshake read timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
func (timeoutError) Unwrap() error   { return os.ErrDeadlineExceeded }

func (c *hsConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		c.mu.Lock()
		dl := c.deadline
		c.mu.Unlock()
		var timer <-chan time.Time
		if !dl.IsZero() {
			d := time.Until(dl)
			if d <= 0 {
				return 0, nil, timeoutError{}
			}
			t := time.NewTimer(d)
			defer t.Stop()
			timer = t.C
		}
		select {
		case p := <-c.in:
			c.mu.Lock()
			c.readSince = true
			from := c.raddr
			c.mu.Unlock()
			return copy(b, p), from, nil
		case <-c.closed:
			return 0, nil, net.ErrClosed
		case <-c.poke:
		case <-timer:
			return 0, nil, timeoutError{}
		}
	}
}

func (c *hsConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	c.mu.Lock()
	if c.handed {
		c.mu.Unlock()
		return len(b), nil
	}
	if c.readSince {
		c.flight, c.readSince = nil, false
	}
	if len(c.flight) < 8 {
		c.flight = append(c.flight, append([]byte(nil), b...))
	}
	to, tp := c.rap, c.tcp
	c.mu.Unlock()
	select {
	case <-c.closed:
		return 0, net.ErrClosed
	default:
	}
	if tp != nil {
		tp.send(b)
		return len(b), nil
	}
	return c.sock.writeTo(b, to, c.oob)
}

// addr returns where the peer is.
func (c *hsConn) addr() *net.UDPAddr {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raddr
}

// moveTo sends the rest of the handshake to ap: the peer's checks moved
// it before the handshake was done.
func (c *hsConn) moveTo(ap netip.AddrPort, tp *tcpPath) {
	c.mu.Lock()
	c.raddr, c.rap, c.tcp = net.UDPAddrFromAddrPort(ap), ap, tp
	c.mu.Unlock()
}

func (c *hsConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *hsConn) LocalAddr() net.Addr { return c.local }

func (c *hsConn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *hsConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.deadline = t
	c.mu.Unlock()
	select {
	case c.poke <- struct{}{}:
	default:
	}
	return nil
}

func (c *hsConn) SetWriteDeadline(time.Time) error { return nil }

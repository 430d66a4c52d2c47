//go:build !js

package lean

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/netlimit"
)

// ICE over TCP (RFC 6544): a player whose network blocks UDP reaches the
// server on a TCP port instead. The server offers passive TCP host
// candidates beside its UDP ones, at a lower priority, so that a browser
// uses TCP only when UDP fails. On a TCP connection every STUN message
// and DTLS record travels in an RFC 4571 frame: a 16-bit length, then the
// bytes that would have been one datagram.
//
// A connection is a path of a peer, as an address is over UDP: its
// first frame must be an authenticated ICE check, which names the peer
// by its credentials, and from then on the peer's datagrams are its
// frames, through the same state machines (records, SCTP, limits). It
// costs a goroutine that waits in Read, as any TCP connection does in
// Go; its writes need one only while the kernel's buffer is full.

const (
	// maxFrame bounds a frame read: a DTLS datagram, a STUN message.
	maxFrame = 4096
	// tcpQueued bounds the bytes waiting for a slow connection's writer;
	// beyond, frames are dropped, as a full socket buffer drops
	// datagrams (SCTP retransmits what was reliable).
	tcpQueued = 512 << 10
	// tcpWriteTimeout closes a connection that takes no bytes for this
	// long.
	tcpWriteTimeout = 10 * time.Second
	// maxUnbound bounds the server's TCP connections that have not yet
	// sent an authenticated check, and maxUnboundPerNetwork those of one
	// client network (ServerConfig.Network), so that one address's idle
	// connections cannot lock every other player out; tcpConnRate bounds
	// the connections a network may open a second, after a burst of twice
	// as many (a reconnect loop is closed as it is accepted).
	// maxEarlyFrames bounds the frames one may send before its check.
	maxUnbound           = 256
	maxUnboundPerNetwork = 16
	tcpConnRate          = 8
	maxEarlyFrames       = 4
)

// tcpPath is one framed TCP connection: a path of one peer.
type tcpPath struct {
	c  *net.TCPConn
	rc syscall.RawConn // for writes that do not wait (tryWrite)
	ap netip.AddrPort  // the other end
	// net is the client network ap is counted under while the connection
	// waits for its first check, when bounded.
	net     netip.Prefix
	bounded bool

	mu      sync.Mutex
	out     []byte // frames the writer has yet to write
	spare   []byte
	writing bool // a writer goroutine runs
	ending  bool // close once what is queued is written
	dead    bool
	once    sync.Once
}

func newTCPPath(c *net.TCPConn) *tcpPath {
	c.SetNoDelay(true)
	ra := c.RemoteAddr().(*net.TCPAddr).AddrPort()
	rc, _ := c.SyscallConn()
	return &tcpPath{c: c, rc: rc, ap: netip.AddrPortFrom(ra.Addr().Unmap(), ra.Port())}
}

// send writes b, one datagram's bytes, as a frame: at once when the
// kernel's buffer takes it, else queued for a writer goroutine, started
// then. It never blocks: a connection too slow to take what is queued
// loses the frame, as a datagram would be lost.
func (t *tcpPath) send(b []byte) {
	if len(b) > 0xffff {
		return
	}
	t.mu.Lock()
	if t.dead || len(t.out)+2+len(b) > tcpQueued {
		t.mu.Unlock()
		return
	}
	t.out = binary.BigEndian.AppendUint16(t.out, uint16(len(b)))
	t.out = append(t.out, b...)
	if t.writing {
		t.mu.Unlock()
		return
	}
	n, err := tryWrite(t.rc, t.out)
	t.out = t.out[:copy(t.out, t.out[n:])]
	start := err == nil && len(t.out) > 0
	t.writing = start
	t.mu.Unlock()
	switch {
	case err != nil:
		t.close()
	case start:
		go t.drain()
	}
}

// drain writes what is queued until nothing is, then ends.
func (t *tcpPath) drain() {
	for {
		t.mu.Lock()
		if len(t.out) == 0 || t.dead {
			t.writing = false
			end := t.ending
			t.mu.Unlock()
			if end {
				t.close()
			}
			return
		}
		buf := t.out
		t.out, t.spare = t.spare[:0], nil
		t.mu.Unlock()
		t.c.SetWriteDeadline(time.Now().Add(tcpWriteTimeout))
		_, err := t.c.Write(buf)
		t.mu.Lock()
		t.spare = buf[:0]
		t.mu.Unlock()
		if err != nil {
			t.close()
		}
	}
}

// finish closes the connection once what is queued is written (a
// peer's last words: its ABORT and close_notify).
func (t *tcpPath) finish() {
	t.mu.Lock()
	t.ending = true
	now := !t.writing
	t.mu.Unlock()
	if now {
		t.close()
	}
}

func (t *tcpPath) close() {
	t.once.Do(func() {
		t.mu.Lock()
		t.dead = true
		t.out, t.spare = nil, nil
		t.mu.Unlock()
		t.c.Close()
	})
}

// frames reads the connection's frames and hands each to f until the
// connection ends or f returns false.
func (t *tcpPath) frames(f func(b []byte) bool) error { return readFrames(t.c, f) }

// readFrames reads RFC 4571 frames from r and hands each to f, until r
// ends, a frame is empty or over maxFrame, or f returns false.
func readFrames(r io.Reader, f func(b []byte) bool) error {
	br := bufio.NewReaderSize(r, 8<<10)
	buf := make([]byte, maxFrame)
	var hdr [2]byte
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			return err
		}
		n := int(binary.BigEndian.Uint16(hdr[:]))
		if n == 0 || n > maxFrame {
			return fmt.Errorf("transport: TCP frame of %d bytes", n)
		}
		if _, err := io.ReadFull(br, buf[:n]); err != nil {
			return err
		}
		if !f(buf[:n]) {
			return nil
		}
	}
}

// tcpServer accepts the lean server's TCP connections.
type tcpServer struct {
	l  *Server
	ln *net.TCPListener
	// unbound counts the connections waiting for their first check, by
	// client network, with the networks' connect rate.
	unbound netlimit.Share

	mu     sync.Mutex
	conns  map[*tcpPath]struct{}
	closed bool
}

// newTCPServer serves ICE-TCP on ln for l.
func newTCPServer(l *Server, ln *net.TCPListener) *tcpServer {
	ts := &tcpServer{l: l, ln: ln}
	ts.unbound.PerNetwork, ts.unbound.Max = maxUnboundPerNetwork, maxUnbound
	ts.unbound.SetRate(tcpConnRate)
	return ts
}

// network returns the client network a connection from a is counted
// under, and false when it is not bounded (ServerConfig.Network).
func (ts *tcpServer) network(a netip.Addr) (netip.Prefix, bool) {
	if ts.l.cfg.Network == nil {
		return netip.Prefix{}, false
	}
	return ts.l.cfg.Network(a)
}

// closeAll closes every connection (the server closes).
func (ts *tcpServer) closeAll() {
	ts.ln.Close()
	ts.mu.Lock()
	ts.closed = true
	conns := ts.conns
	ts.conns = nil
	ts.mu.Unlock()
	for t := range conns {
		t.close()
	}
}

func (ts *tcpServer) acceptLoop() {
	defer ts.l.ep.wg.Done()
	for {
		c, err := ts.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			time.Sleep(10 * time.Millisecond) // out of descriptors: let some close
			continue
		}
		t := newTCPPath(c)
		t.net, t.bounded = ts.network(t.ap.Addr())
		if ts.unbound.Take(t.net, t.bounded, time.Now()) != netlimit.OK {
			c.Close()
			ts.l.ep.stats.tcpRefused.Add(1)
			continue
		}
		ts.l.ep.stats.tcpConns.Add(1)
		ts.mu.Lock()
		if ts.closed {
			ts.mu.Unlock()
			c.Close()
			return
		}
		if ts.conns == nil {
			ts.conns = map[*tcpPath]struct{}{}
		}
		ts.conns[t] = struct{}{}
		ts.mu.Unlock()
		ts.l.ep.wg.Add(1)
		go ts.serve(t)
	}
}

// serve reads one connection: until its first authenticated check, under
// the ICE timeout; then as a path of the peer the check named.
func (ts *tcpServer) serve(t *tcpPath) {
	ep := ts.l.ep
	defer func() {
		ts.mu.Lock()
		delete(ts.conns, t)
		ts.mu.Unlock()
		ep.wg.Done()
	}()
	in := tcpIn{ts: ts, t: t, rd: reading{slabSize: clientSlab}}
	t.c.SetReadDeadline(time.Now().Add(conn.WithDefaults(ep.lim).ICETimeout))
	err := t.frames(in.frame)
	if in.p == nil {
		ts.unbound.Give(t.net, t.bounded)
	}
	t.close()
	if in.p != nil {
		in.p.pathEnded(t, err)
	}
}

// tcpIn is what the server's reader of one TCP connection keeps.
type tcpIn struct {
	ts    *tcpServer
	t     *tcpPath
	p     *Peer // the peer whose path t is, once a check named it
	early int   // frames before that
	stun  stun.Message
	rd    reading
}

// frame takes one frame, and reports false when the connection is to
// close: a stranger's that sent maxEarlyFrames frames but no
// authenticated check.
func (in *tcpIn) frame(b []byte) bool {
	switch {
	case b[0] < 4:
		q, ok := in.ts.check(&in.stun, b, in.t)
		if in.p == nil && ok {
			in.p = q
			in.ts.unbound.Give(in.t.net, in.t.bounded)
			in.t.c.SetReadDeadline(time.Time{}) // the peer's idle timeout bounds it from now on
		}
	case b[0] >= 20 && b[0] <= 63 && in.p != nil:
		if in.p.datagramOn(time.Now(), b, in.t.ap, in.t, &in.rd) {
			in.rd.handOver(in.p)
		}
		return true
	}
	if in.p == nil {
		in.early++
		return in.early < maxEarlyFrames
	}
	return true
}

// check answers an authenticated binding request that came on t, and
// returns the peer it names; anything else is dropped.
func (ts *tcpServer) check(m *stun.Message, b []byte, t *tcpPath) (*Peer, bool) {
	m.Raw = append(m.Raw[:0], b...)
	if m.Decode() != nil || m.Type != stun.BindingRequest {
		return nil, false
	}
	var user stun.Username
	if user.GetFrom(m) != nil {
		return nil, false
	}
	local, remote, ok := strings.Cut(user.String(), ":")
	if !ok {
		return nil, false
	}
	p := ts.l.ufrags.get(local)
	if p == nil || remote != p.remote.ufrag {
		return nil, false
	}
	if stun.Fingerprint.Check(m) != nil || stun.NewShortTermIntegrity(p.pwd).Check(m) != nil {
		return nil, false
	}
	if !p.checkedOn(nil, t.ap, t, m.Contains(stun.AttrUseCandidate)) {
		return nil, false
	}
	out, err := stun.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
		&stun.XORMappedAddress{IP: t.ap.Addr().AsSlice(), Port: int(t.ap.Port())},
		stun.NewShortTermIntegrity(p.pwd), stun.Fingerprint)
	if err != nil {
		return nil, false
	}
	t.send(out.Raw)
	return p, true
}

// dialTCP opens a client's TCP path to the server at ap and reads it
// for p until it ends.
func (p *Peer) dialTCP(ctx context.Context, ap netip.AddrPort) (*tcpPath, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", ap.String())
	if err != nil {
		return nil, fmt.Errorf("transport: TCP to %v: %w", ap, err)
	}
	t := newTCPPath(c.(*net.TCPConn))
	go func() {
		var m stun.Message
		rd := reading{slabSize: clientSlab}
		err := t.frames(func(b []byte) bool {
			now := time.Now()
			switch {
			case b[0] < 4:
				m.Raw = append(m.Raw[:0], b...)
				if m.Decode() == nil && m.Type == stun.BindingSuccess {
					p.bindingResponseOn(&m, t.ap, t)
				}
			case b[0] >= 20 && b[0] <= 63:
				if p.datagramOn(now, b, t.ap, t, &rd) {
					rd.handOver(p)
				}
			}
			return true
		})
		t.close()
		p.pathEnded(t, err)
	}()
	return t, nil
}

// pathEnded: t, a TCP path of p, ended. The peer closes when it was its
// path (it has no other); a candidate path is forgotten.
func (p *Peer) pathEnded(t *tcpPath, err error) {
	p.mu.Lock()
	current := p.tcp == t
	if p.candTCP == t {
		p.candTCP, p.cand = nil, netip.AddrPort{}
	}
	p.unlock()
	if current {
		if err == nil || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
			err = fmt.Errorf("%w: its TCP connection closed", conn.ErrPathLost)
		} else {
			err = fmt.Errorf("%w: its TCP connection failed: %w", conn.ErrPathLost, err)
		}
		p.closeWith(err)
	}
}

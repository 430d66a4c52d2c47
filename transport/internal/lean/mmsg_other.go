//go:build !linux && !js

package lean

import (
	"errors"
	"net"
)

// Elsewhere than Linux, a datagram a system call (recvmmsg and sendmmsg
// are Linux's), with the socket's AddrPort calls, which allocate nothing.

type rawSocket struct{ c *net.UDPConn }

func newRawSocket(c *net.UDPConn) (rawSocket, error) { return rawSocket{c}, nil }

type batchReader struct {
	c   *net.UDPConn
	in  []inDatagram
	oob []byte
}

func newBatchReader(rs rawSocket, n, oobSize int) *batchReader {
	b := &batchReader{c: rs.c, in: []inDatagram{{b: make([]byte, bufSize)}}}
	if oobSize > 0 {
		b.oob = make([]byte, oobSize)
	}
	return b
}

func (b *batchReader) read(int) (int, error) {
	d := &b.in[0]
	n, oobn, _, from, err := b.c.ReadMsgUDPAddrPort(d.b[:cap(d.b)], b.oob)
	if err != nil {
		return 0, err
	}
	d.b, d.from = d.b[:n], from
	if b.oob != nil {
		d.oob = b.oob[:oobn]
	}
	return 1, nil
}

type batchSender struct{}

func newBatchSender(int) *batchSender { return &batchSender{} }

func (*batchSender) write(rs rawSocket, ds []outDatagram) (int, error) {
	for i, d := range ds {
		if _, _, err := rs.c.WriteMsgUDPAddrPort(d.b, d.oob, d.to); err != nil {
			return i, err
		}
	}
	return len(ds), nil
}

func errClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

//go:build linux

package lean

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// mmsghdr is the kernel's struct mmsghdr: Go lays the two fields out as C
// does (padded to the pointer size on 64-bit systems).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// batchReader reads one socket's datagrams in batches, with recvmmsg on
// the socket's non-blocking descriptor through the runtime's poller
// (syscall.RawConn): a read that finds nothing parks the goroutine until
// the socket is readable, as net.UDPConn's own reads do. It is the
// socket's reader's alone.
type batchReader struct {
	rc     syscall.RawConn
	in     []inDatagram
	rh     []mmsghdr
	riov   []unix.Iovec
	rname  []unix.RawSockaddrInet6
	roob   [][]byte
	ask    int
	got    int
	rerr   syscall.Errno
	readFn func(fd uintptr) bool
}

// batchSender sends datagrams in batches with sendmmsg, to whichever
// socket a batch is for. It is one flusher's.
type batchSender struct {
	wh      []mmsghdr
	wiov    []unix.Iovec
	wname   []unix.RawSockaddrInet6
	wcount  int
	sent    int
	werr    syscall.Errno
	writeFn func(fd uintptr) bool
}

// rawSocket is what the batches need of a socket: its descriptor, and
// whether it is AF_INET6 (addresses go as sockaddr_in6, IPv4 ones mapped).
type rawSocket struct {
	rc syscall.RawConn
	v6 bool
}

func newRawSocket(c *net.UDPConn) (rawSocket, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return rawSocket{}, fmt.Errorf("transport: socket: %w", err)
	}
	var v6 bool
	var serr error
	if err := rc.Control(func(fd uintptr) {
		var sa unix.Sockaddr
		if sa, serr = unix.Getsockname(int(fd)); serr == nil {
			_, v6 = sa.(*unix.SockaddrInet6)
		}
	}); err != nil {
		return rawSocket{}, fmt.Errorf("transport: socket: %w", err)
	}
	if serr != nil {
		return rawSocket{}, fmt.Errorf("transport: socket name: %w", serr)
	}
	return rawSocket{rc: rc, v6: v6}, nil
}

// newBatchReader prepares batches of up to n datagrams of bufSize bytes
// to read from rs, with oobSize bytes of control messages each (0: none).
func newBatchReader(rs rawSocket, n, oobSize int) *batchReader {
	b := &batchReader{rc: rs.rc, in: make([]inDatagram, n), rh: make([]mmsghdr, n), riov: make([]unix.Iovec, n),
		rname: make([]unix.RawSockaddrInet6, n)}
	buf := make([]byte, n*bufSize)
	for i := range n {
		b.in[i].b = buf[i*bufSize : (i+1)*bufSize : (i+1)*bufSize]
		b.riov[i].Base = &b.in[i].b[0]
		b.riov[i].SetLen(bufSize)
		h := &b.rh[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&b.rname[i]))
		h.Iov = &b.riov[i]
		h.SetIovlen(1)
		if oobSize > 0 {
			b.roob = append(b.roob, make([]byte, oobSize))
			h.Control = &b.roob[i][0]
		}
	}
	b.readFn = b.recv
	return b
}

// newBatchSender prepares batches of up to n datagrams to send.
func newBatchSender(n int) *batchSender {
	b := &batchSender{wh: make([]mmsghdr, n), wiov: make([]unix.Iovec, n), wname: make([]unix.RawSockaddrInet6, n)}
	for i := range n {
		b.wh[i].hdr.Name = (*byte)(unsafe.Pointer(&b.wname[i]))
		b.wh[i].hdr.Iov = &b.wiov[i]
		b.wh[i].hdr.SetIovlen(1)
	}
	b.writeFn = b.send
	return b
}

// read reads up to n datagrams, waiting for the first; they are b.in[:k].
func (b *batchReader) read(n int) (int, error) {
	b.ask = min(n, len(b.rh))
	for i := range b.ask {
		b.rh[i].hdr.Namelen = unix.SizeofSockaddrInet6
		if b.roob != nil {
			b.rh[i].hdr.SetControllen(len(b.roob[i]))
		}
		b.rh[i].hdr.Flags = 0
	}
	if err := b.rc.Read(b.readFn); err != nil {
		return 0, err // closed
	}
	if b.rerr != 0 {
		return 0, fmt.Errorf("transport: recvmmsg: %w", b.rerr)
	}
	for i := range b.got {
		d := &b.in[i]
		d.b = d.b[:b.rh[i].n]
		d.from = sockaddrAddrPort(&b.rname[i])
		if b.roob != nil {
			d.oob = b.roob[i][:min(int(b.rh[i].hdr.Controllen), len(b.roob[i]))]
		}
	}
	return b.got, nil
}

// recv is the read's system call: false, to wait for the socket, when
// nothing is there.
func (b *batchReader) recv(fd uintptr) bool {
	n, e, done := mmsg(unix.SYS_RECVMMSG, fd, b.rh, b.ask)
	if done {
		b.got, b.rerr = n, e
	}
	return done
}

// mmsg makes the system call trap, recvmmsg or sendmmsg, on fd for the
// first n headers of hs, and returns how many messages it took, or its
// error; done is false, to wait for the socket, when it would block.
//
// The call is raw: the goroutine keeps its P through it, as the runtime
// is not told of it. The socket does not block (a full or empty one
// returns EAGAIN, and the poller waits), so the call is bounded by its
// batch: tens of microseconds, a few hundred for 64 datagrams on
// loopback, where a send does the receiver's kernel work too. Told of it,
// the runtime hands the P to another thread once a call passes 20
// microseconds, as a batch of tens of datagrams does: at 2,500 relay
// players that was 8,500 context switches a second on the server's core
// (sysmon waking 4,000 times, threads parking on futexes) against 700
// raw, and a fifth of the server's CPU a message (BENCHMARKS.md, fifth
// round). What it costs: while a batch is in the kernel, no other
// goroutine runs on that P, and a GC stop waits for the batch to end.
func mmsg(trap, fd uintptr, hs []mmsghdr, n int) (k int, errno syscall.Errno, done bool) {
	for {
		r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(n), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return 0, 0, false
		case 0:
			return int(r), 0, true
		}
		return 0, e, true
	}
}

// write sends ds, and returns how many went before the first the kernel
// refused (its error is returned with it).
func (b *batchSender) write(rs rawSocket, ds []outDatagram) (int, error) {
	b.wcount = min(len(ds), len(b.wh))
	for i, d := range ds[:b.wcount] {
		h := &b.wh[i].hdr
		h.Namelen = putSockaddr(&b.wname[i], d.to, rs.v6)
		b.wiov[i].Base = unsafe.SliceData(d.b)
		b.wiov[i].SetLen(len(d.b))
		if len(d.oob) > 0 {
			h.Control = &d.oob[0]
			h.SetControllen(len(d.oob))
		} else {
			h.Control = nil
			h.SetControllen(0)
		}
	}
	err := rs.rc.Write(b.writeFn)
	for i := range b.wcount { // the buffers are the caller's: hold none of them
		b.wiov[i].Base, b.wh[i].hdr.Control = nil, nil
	}
	if err != nil {
		return 0, err
	}
	if b.werr != 0 {
		return b.sent, fmt.Errorf("transport: sendmmsg: %w", b.werr)
	}
	return b.sent, nil
}

// send is the write's system call: false, to wait for room in the
// socket's buffer, when there is none.
func (b *batchSender) send(fd uintptr) bool {
	n, e, done := mmsg(unix.SYS_SENDMMSG, fd, b.wh, b.wcount)
	if done {
		b.sent, b.werr = n, e
	}
	return done
}

// sockaddrAddrPort reads an address the kernel wrote.
func sockaddrAddrPort(sa *unix.RawSockaddrInet6) netip.AddrPort {
	port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
	switch sa.Family {
	case unix.AF_INET:
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		return netip.AddrPortFrom(netip.AddrFrom4(sa4.Addr), port)
	case unix.AF_INET6:
		return netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), port)
	}
	return netip.AddrPort{}
}

// putSockaddr writes ap into sa as the socket's family takes it, and
// returns its length.
func putSockaddr(sa *unix.RawSockaddrInet6, ap netip.AddrPort, v6 bool) uint32 {
	if !v6 {
		if !ap.Addr().Unmap().Is4() {
			return 0 // an IPv6 address on an IPv4 socket: the kernel refuses it
		}
		sa4 := (*unix.RawSockaddrInet4)(unsafe.Pointer(sa))
		*sa4 = unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().Unmap().As4()}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa4.Port))[:], ap.Port())
		return unix.SizeofSockaddrInet4
	}
	*sa = unix.RawSockaddrInet6{Family: unix.AF_INET6, Addr: ap.Addr().As16()}
	binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], ap.Port())
	return unix.SizeofSockaddrInet6
}

// errClosed reports whether err is the socket's close.
func errClosed(err error) bool { return errors.Is(err, net.ErrClosed) }

//go:build linux

package bots

import (
	"encoding/binary"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// rawBatch reads and writes the floor's datagrams in batches, recvmmsg and
// sendmmsg made as raw system calls as the lean stack makes them: the
// socket does not block, and the runtime, not told of the call, does not
// hand its P to another thread while a batch is in the kernel. So the
// floor is the kernel's work a datagram and no more: made through the
// runtime, a batch of more than 20 us costs a context switch or two
// besides (5,000 to 12,000 a second at the relay's 2,500 players).
type rawBatch struct {
	rc   syscall.RawConn
	r, w mmsgs // the reader's and the writer's: they run at once
	// from is the reader's address of each sender heard from, handed out
	// again rather than made a datagram (the floor keeps the addresses it
	// is given, so one per datagram would be an allocation each); up to
	// maxFrom senders, past which each datagram gets its own.
	from map[netip.AddrPort]*net.UDPAddr
}

// maxFrom bounds rawBatch.from: more senders than a bench's bots.
const maxFrom = 1 << 16

// mmsgs are a batch call's headers and what they point at.
type mmsgs struct {
	hs    []mmsghdr
	iov   []unix.Iovec
	names []unix.RawSockaddrInet4
}

// mmsghdr is the kernel's struct mmsghdr: a message header and the bytes
// the call moved for it (Go pads it as C does).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

// newBatchConn makes c's batches raw calls.
func newBatchConn(c *net.UDPConn) (batchConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &rawBatch{rc: rc}, nil
}

// prep points the first len(ms) headers at ms's first buffers and at
// names.
func (b *mmsgs) prep(ms []ipv4.Message) {
	if len(b.hs) < len(ms) {
		b.hs = make([]mmsghdr, len(ms))
		b.iov = make([]unix.Iovec, len(ms))
		b.names = make([]unix.RawSockaddrInet4, len(ms))
	}
	for i := range ms {
		buf := ms[i].Buffers[0]
		b.iov[i].Base = unsafe.SliceData(buf)
		b.iov[i].SetLen(len(buf))
		h := &b.hs[i].hdr
		h.Name = (*byte)(unsafe.Pointer(&b.names[i]))
		h.Namelen = unix.SizeofSockaddrInet4
		h.Iov = &b.iov[i]
		h.SetIovlen(1)
		h.Control = nil
		h.SetControllen(0)
		h.Flags = 0
	}
}

// mmsg makes the call trap on the first n headers, waiting for the
// socket (with wait, the RawConn's Read or Write) while it would block.
func (b *mmsgs) mmsg(trap uintptr, n int, wait func(func(uintptr) bool) error) (int, error) {
	var got int
	var errno syscall.Errno
	err := wait(func(fd uintptr) bool {
		for {
			r, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&b.hs[0])), uintptr(n), 0, 0, 0)
			switch e {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false
			}
			got, errno = int(r), e
			return true
		}
	})
	if err != nil {
		return 0, err
	}
	if errno != 0 {
		return 0, errno
	}
	return got, nil
}

// ReadBatch reads up to len(ms) datagrams into ms's first buffers, waiting
// for the first.
func (b *rawBatch) ReadBatch(ms []ipv4.Message, _ int) (int, error) {
	r := &b.r
	r.prep(ms)
	n, err := r.mmsg(unix.SYS_RECVMMSG, len(ms), b.rc.Read)
	for i := range n {
		sa := &r.names[i]
		port := binary.BigEndian.Uint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:])
		ms[i].N = int(r.hs[i].n)
		ms[i].Addr = b.addr(netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), port))
	}
	return n, err
}

// addr returns the reader's *net.UDPAddr for ap.
func (b *rawBatch) addr(ap netip.AddrPort) *net.UDPAddr {
	if a := b.from[ap]; a != nil {
		return a
	}
	a := net.UDPAddrFromAddrPort(ap)
	if b.from == nil {
		b.from = map[netip.AddrPort]*net.UDPAddr{}
	}
	if len(b.from) < maxFrom {
		b.from[ap] = a
	}
	return a
}

// WriteBatch sends ms's first buffers to their IPv4 addresses, waiting
// while the socket is full; it returns how many went.
func (b *rawBatch) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	w := &b.w
	w.prep(ms)
	for i := range ms {
		a := ms[i].Addr.(*net.UDPAddr)
		sa := &w.names[i]
		sa.Family = unix.AF_INET
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&sa.Port))[:], uint16(a.Port))
		copy(sa.Addr[:], a.IP.To4())
	}
	return w.mmsg(unix.SYS_SENDMMSG, len(ms), b.rc.Write)
}

//go:build unix

package lean

import (
	"errors"
	"syscall"
)

// tryWrite writes what of b the socket's buffer takes now, without
// waiting (the runtime's sockets are non-blocking): n may be short, or 0
// when the buffer is full.
func tryWrite(rc syscall.RawConn, b []byte) (n int, err error) {
	if rc == nil {
		return 0, nil
	}
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		n, werr = syscall.Write(int(fd), b)
		return true // one try: never wait for the buffer
	}); err != nil {
		return 0, err
	}
	if errors.Is(werr, syscall.EAGAIN) || errors.Is(werr, syscall.EINTR) {
		return 0, nil
	}
	return max(n, 0), werr
}

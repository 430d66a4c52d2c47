//go:build !js

package transport

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// remoteAs makes every connection a listener accepts report addr as its
// remote address: a test's loopback connections stand for a client on the
// internet.
type remoteAs struct {
	net.Listener
	addr net.Addr
}

func (l remoteAs) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return remoteConn{c, l.addr}, nil
}

type remoteConn struct {
	net.Conn
	addr net.Addr
}

func (c remoteConn) RemoteAddr() net.Addr { return c.addr }

// TestLimitListener: a third connection from one address is closed at
// once while two are open, and is taken again once one of them closes;
// loopback connections are not limited.
func TestLimitListener(t *testing.T) {
	for _, tt := range []struct {
		name    string
		remote  string
		limited bool
	}{
		{"internet address", "203.0.113.7:40000", true},
		{"loopback", "127.0.0.1:40000", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			remote, _ := net.ResolveTCPAddr("tcp", tt.remote)
			hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })}
			go hs.Serve(LimitListener(remoteAs{ln, remote}, 2))
			defer hs.Close()

			get := func(c net.Conn) error {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
					return err
				}
				_, err := io.ReadFull(c, make([]byte, 12))
				return err
			}
			dial := func() net.Conn {
				c, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			}
			a, b := dial(), dial()
			for _, c := range []net.Conn{a, b} { // both served, and kept alive
				if err := get(c); err != nil {
					t.Fatal(err)
				}
			}
			if err := get(dial()); (err != nil) != tt.limited {
				t.Fatalf("a third connection: %v, want limited %v", err, tt.limited)
			}
			if !tt.limited {
				return
			}
			a.Close()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err := get(dial()); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no connection taken after one of the two closed")
				}
			}
		})
	}
}

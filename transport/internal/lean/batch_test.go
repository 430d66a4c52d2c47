//go:build !js

package lean

import (
	"net"
	"testing"
	"time"

	"net/netip"
)

// TestBatchWriterSkipsRefused: a datagram the kernel refuses (port 0
// here) in the middle of a batch is dropped, and the datagrams after it,
// other peers', still go.
func TestBatchWriterSkipsRefused(t *testing.T) {
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	conn, a, b := listen(), listen(), listen()
	raw, err := newRawSocket(conn)
	if err != nil {
		t.Fatal(err)
	}
	sock := &socket{conn: conn, raw: raw}
	var w batchWriter
	to := []netip.AddrPort{a.LocalAddr().(*net.UDPAddr).AddrPort(), netip.MustParseAddrPort("127.0.0.1:0"), b.LocalAddr().(*net.UDPAddr).AddrPort()}
	for i, addr := range to {
		w.commit(sock, addr, nil, append(w.buf(), byte(i)))
	}
	w.send()
	for _, r := range []struct {
		c    *net.UDPConn
		want byte
	}{{a, 0}, {b, 2}} {
		r.c.SetReadDeadline(time.Now().Add(2 * time.Second))
		buf := make([]byte, 16)
		n, _, err := r.c.ReadFromUDP(buf)
		if err != nil || n != 1 || buf[0] != r.want {
			t.Fatalf("got %v %v, want datagram %d", buf[:n], err, r.want)
		}
	}
}

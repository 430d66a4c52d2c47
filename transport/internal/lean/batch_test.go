//go:build !js

package lean

import (
	"net"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
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
	sock := &socket{conn: conn, batch: ipv4.NewPacketConn(conn)}
	var w batchWriter
	to := []*net.UDPAddr{a.LocalAddr().(*net.UDPAddr), {IP: net.IPv4(127, 0, 0, 1), Port: 0}, b.LocalAddr().(*net.UDPAddr)}
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

package udpimpair_test

import (
	"fmt"
	"net"
	"net/netip"
	"time"

	"github.com/tongbu/tongbu/transport/udpimpair"
)

// A relay on 127.0.0.2 in front of a server on 127.0.0.1: a client sends
// to the relay's address, and what it sends reaches the server 20 ms
// later (or not, at the loss given).
func Example() {
	server, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	defer server.Close()
	target := server.LocalAddr().(*net.UDPAddr).AddrPort()
	way := udpimpair.Link{Delay: 20 * time.Millisecond, Loss: 0}
	relay, err := udpimpair.New("127.0.0.2:0", target, way, way, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer relay.Close()

	client, _ := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	defer client.Close()
	sent := time.Now()
	client.WriteToUDPAddrPort([]byte("hello"), relay.Addr())
	buf := make([]byte, 64)
	server.SetReadDeadline(time.Now().Add(time.Second))
	n, from, _ := server.ReadFromUDPAddrPort(buf)
	fmt.Println(string(buf[:n]), time.Since(sent) >= 20*time.Millisecond, from.Addr() == netip.MustParseAddr("127.0.0.1"))
	// Output: hello true true
}

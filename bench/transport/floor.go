//go:build !js

package transport

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
)

// floorBatch is how many datagrams the floor server reads or writes a
// system call.
const floorBatch = 64

// startUDPFloor runs the floor every WebRTC server on this machine sits
// on: plain UDP, no encryption, no SCTP, no session state. One reader
// drains the socket with recvmmsg, and on the echo tick every datagram
// read since the last is sent back with sendmmsg, as the engine's server
// sends on its room's tick. On loopback a send also pays the receiving
// socket's kernel work, for both this server and the engine's.
func startUDPFloor() (echoServer, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return echoServer{}, err
	}
	conn.SetReadBuffer(8 << 20)
	conn.SetWriteBuffer(8 << 20)
	pc := ipv4.NewPacketConn(conn)
	var msgs atomic.Uint64
	var mu sync.Mutex
	var pending []ipv4.Message // read since the last tick
	var spare [][]byte
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		in := make([]ipv4.Message, floorBatch)
		for i := range in {
			in[i].Buffers = [][]byte{make([]byte, 1500)}
		}
		for {
			n, err := pc.ReadBatch(in, 0)
			if err != nil {
				return // closed
			}
			msgs.Add(uint64(n))
			mu.Lock()
			for _, m := range in[:n] {
				var b []byte
				if k := len(spare); k > 0 {
					b, spare = spare[k-1], spare[:k-1]
				} else {
					b = make([]byte, 0, 1500)
				}
				b = append(b[:0], m.Buffers[0][:m.N]...)
				pending = append(pending, ipv4.Message{Buffers: [][]byte{b}, Addr: m.Addr})
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / echoTickHz)
		defer tick.Stop()
		var out []ipv4.Message
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			out, pending = pending, out[:0]
			mu.Unlock()
			for rest := out; len(rest) > 0; {
				n, err := pc.WriteBatch(rest[:min(len(rest), floorBatch)], 0)
				if err != nil || n <= 0 {
					break
				}
				msgs.Add(uint64(n))
				rest = rest[n:]
			}
			mu.Lock()
			for _, m := range out {
				spare = append(spare, m.Buffers[0])
			}
			mu.Unlock()
			clear(out)
		}
	}()
	return echoServer{url: "udp://" + conn.LocalAddr().String(), msgs: &msgs, stop: func() {
		close(stop)
		conn.Close()
		wg.Wait()
	}}, nil
}

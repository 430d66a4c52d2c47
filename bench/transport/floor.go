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
	var spare []ipv4.Message   // sent, their one-buffer lists kept: a datagram allocates nothing
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		in := make([]ipv4.Message, floorBatch)
		for i := range in {
			in[i].Buffers = [][]byte{make([]byte, 1500)}
		}
		ask := floorBatch // as the lean stack asks: twice what the last read brought
		for {
			n, err := pc.ReadBatch(in[:ask], 0)
			if err != nil {
				return // closed
			}
			ask = min(max(2*n, 2), floorBatch)
			msgs.Add(uint64(n))
			mu.Lock()
			for _, m := range in[:n] {
				var e ipv4.Message
				if k := len(spare); k > 0 {
					e, spare = spare[k-1], spare[:k-1]
				} else {
					e.Buffers = [][]byte{make([]byte, 0, 1500)}
				}
				e.Buffers[0] = append(e.Buffers[0][:0], m.Buffers[0][:m.N]...)
				e.Addr = m.Addr
				pending = append(pending, e)
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
				m.Addr = nil
				spare = append(spare, m)
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

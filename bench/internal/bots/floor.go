//go:build !js

package bots

import (
	"crypto/aes"
	"crypto/cipher"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"

	"github.com/tongbu/tongbu/bench/internal/harness"
)

// floorBatch is how many datagrams the floor server reads or writes a
// system call.
const floorBatch = 64

// batchConn reads and writes datagrams in batches.
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// FloorConfig shapes the floor server's traffic after a scenario's.
type FloorConfig struct {
	// TickHz is how often it sends, as the scenario's server sends on
	// its room's or world's tick.
	TickHz int
	// Reply, when set, is the size of the datagram it sends back for each
	// one received (a relay: a frame down for an input up); else it
	// echoes each as it came (the transport's echo).
	Reply int
	// Stream, when set, is the size of the datagram it sends every bot
	// that has sent it anything, every tick, whatever it received (a
	// world: a packet down a player a tick); what it receives is only
	// counted.
	Stream int
	// AEAD, when set, has the floor do the one cryptographic step a
	// WebRTC server cannot skip: each datagram in and each out goes
	// through AES-128-GCM under a key of its bot's own (a seal each way,
	// which costs what an open does: the bots send plaintext). No DTLS
	// records, no SCTP, no rooms.
	AEAD bool
}

// floorAEAD seals b under a's key into scratch[:0] (b itself, in place,
// or a buffer kept for reuse): the cost of a record's open or seal.
func floorAEAD(a cipher.AEAD, scratch, b []byte) []byte {
	var nonce [12]byte
	return a.Seal(scratch[:0], nonce[:], b, nil)
}

// newFloorAEAD is a bot's AES-128-GCM, under a key of its own.
func newFloorAEAD(k netip.AddrPort) cipher.AEAD {
	var key [16]byte
	b := k.Addr().As16()
	copy(key[:], b[:])
	key[0] ^= byte(k.Port())
	key[1] ^= byte(k.Port() >> 8)
	block, err := aes.NewCipher(key[:])
	if err != nil {
		panic(err) // a 16-byte key
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return a
}

// Floor is a running floor server: its udp:// URL, a count of the
// datagrams it received and sent, and a stop function.
type Floor struct {
	URL  string
	Msgs *atomic.Uint64
	Stop func()
}

// StartFloor runs the floor every WebRTC server on this machine sits
// on: plain UDP, no encryption, no SCTP, no session state. One reader
// drains the socket with recvmmsg, and on each tick what is due goes out
// with sendmmsg, as an engine server sends on its room's or world's tick;
// on Linux both are raw system calls, as the lean stack's (rawBatch).
// On loopback a send also pays the receiving socket's kernel work, for
// both this server and the engine's.
func StartFloor(cfg FloorConfig) (Floor, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return Floor{}, err
	}
	conn.SetReadBuffer(8 << 20)
	conn.SetWriteBuffer(8 << 20)
	pc, err := newBatchConn(conn)
	if err != nil {
		conn.Close()
		return Floor{}, err
	}
	var msgs atomic.Uint64
	var mu sync.Mutex
	var pending []ipv4.Message // to send on the next tick
	var spare []ipv4.Message   // sent, their one-buffer lists kept: a datagram allocates nothing
	known := map[netip.AddrPort]net.Addr{}
	aeads := map[netip.AddrPort]cipher.AEAD{} // AEAD: each bot's; mu guards it
	aeadOf := func(a net.Addr) cipher.AEAD {  // mu is held
		k := a.(*net.UDPAddr).AddrPort()
		c := aeads[k]
		if c == nil {
			c = newFloorAEAD(k)
			aeads[k] = c
		}
		return c
	}
	var everyone []net.Addr // the stream's bots
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	queue := func(to net.Addr, b []byte, n int) { // mu is held
		var e ipv4.Message
		if k := len(spare); k > 0 {
			e, spare = spare[k-1], spare[:k-1]
		} else {
			e.Buffers = [][]byte{make([]byte, 0, 1500)}
		}
		if b != nil {
			e.Buffers[0] = append(e.Buffers[0][:0], b...)
		} else {
			e.Buffers[0] = e.Buffers[0][:n]
		}
		e.Addr = to
		pending = append(pending, e)
	}
	go func() {
		defer wg.Done()
		in := make([]ipv4.Message, floorBatch)
		for i := range in {
			in[i].Buffers = [][]byte{make([]byte, 1500)}
		}
		ask := floorBatch // as the lean stack asks: twice what the last read brought
		var sealed []byte
		for {
			n, err := pc.ReadBatch(in[:ask], 0)
			if err != nil {
				return // closed
			}
			ask = min(max(2*n, 2), floorBatch)
			msgs.Add(uint64(n))
			mu.Lock()
			for _, m := range in[:n] {
				if cfg.AEAD {
					sealed = floorAEAD(aeadOf(m.Addr), sealed, m.Buffers[0][:m.N])
				}
				switch {
				case cfg.Stream > 0:
					if k := m.Addr.(*net.UDPAddr).AddrPort(); known[k] == nil {
						known[k] = m.Addr
						everyone = append(everyone, m.Addr)
					}
				case cfg.Reply > 0:
					queue(m.Addr, nil, cfg.Reply)
				default:
					queue(m.Addr, m.Buffers[0][:m.N], 0)
				}
			}
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Second / time.Duration(cfg.TickHz))
		defer tick.Stop()
		var out []ipv4.Message
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mu.Lock()
			for _, a := range everyone {
				queue(a, nil, cfg.Stream)
			}
			out, pending = pending, out[:0]
			if cfg.AEAD {
				for i := range out {
					m := &out[i]
					m.Buffers[0] = floorAEAD(aeadOf(m.Addr), m.Buffers[0], m.Buffers[0]) // in place, its tag after it
				}
			}
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
	return Floor{URL: "udp://" + conn.LocalAddr().String(), Msgs: &msgs, Stop: func() {
		close(stop)
		conn.Close()
		wg.Wait()
	}}, nil
}

// FloorRun is what RunFloor measured: the server's CPU time and its
// messages (datagrams received and sent) over the bots' sending window.
type FloorRun struct {
	CPU  time.Duration
	Sys  time.Duration // the part of CPU in the kernel
	Msgs uint64
}

// CPUPerMsg is the floor server's CPU per message, in microseconds.
func (r FloorRun) CPUPerMsg() float64 {
	return float64(r.CPU.Nanoseconds()) / 1e3 / float64(max(r.Msgs, 1))
}

// SysPerMsg is the part of CPUPerMsg in the kernel.
func (r FloorRun) SysPerMsg() float64 {
	return float64(r.Sys.Nanoseconds()) / 1e3 / float64(max(r.Msgs, 1))
}

// RunFloor measures the floor at a scenario's shape: the floor server in
// this process, with cfg, and n plain-UDP bots in a second process, each
// sending a datagram of size bytes hz times a second for seconds.
func RunFloor(cfg FloorConfig, n, hz, size int, seconds float64) (FloorRun, error) {
	var r FloorRun
	fl, err := StartFloor(cfg)
	if err != nil {
		return r, err
	}
	defer fl.Stop()
	exe, err := os.Executable()
	if err != nil {
		return r, err
	}
	cmd := exec.Command(exe, "-url", fl.URL, "-clients", strconv.Itoa(n), "-hz", strconv.Itoa(hz),
		"-size", strconv.Itoa(size), "-seconds", strconv.FormatFloat(seconds, 'f', -1, 64), "-stack", "udp")
	cmd.Env = append(os.Environ(), harness.BotsEnv+"=1")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return r, err
	}
	if err := cmd.Start(); err != nil {
		return r, err
	}
	exited := make(chan error, 1)
	ready := make(chan struct{})
	done := make(chan [2]uint64, 1)
	go ReadLines(stdout, ready, done, os.Stderr)
	go func() { exited <- cmd.Wait() }()
	kill := func(err error) (FloorRun, error) {
		cmd.Process.Kill()
		<-exited
		return r, err
	}
	select {
	case <-ready:
	case err := <-exited:
		return r, fmt.Errorf("floor bots exited before starting: %v", err)
	case <-time.After(2 * time.Minute):
		return kill(fmt.Errorf("floor bots did not start within 2 minutes"))
	}
	user0, sys0 := harness.CPUTimes()
	msgs0 := fl.Msgs.Load()
	select {
	case <-done:
	case err := <-exited:
		return r, fmt.Errorf("floor bots exited without a result: %v", err)
	case <-time.After(time.Duration(seconds*float64(time.Second)) + 2*time.Minute):
		return kill(fmt.Errorf("floor bots did not finish"))
	}
	user1, sys1 := harness.CPUTimes()
	r.CPU, r.Sys, r.Msgs = user1+sys1-user0-sys0, sys1-sys0, fl.Msgs.Load()-msgs0
	if err := <-exited; err != nil {
		return r, fmt.Errorf("floor bots: %w", err)
	}
	return r, nil
}

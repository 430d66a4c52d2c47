// Package udpimpair is a user-space UDP relay that impairs what it
// forwards: loss (independent or in bursts), delay and jitter, each way.
// Kernel netem is not always there; this is, for tests and benchmarks of
// real WebRTC paths on loopback: a game's tests can play a match through
// it as tongbu's do (advertise the relay's address as the server's public
// address, transport.ServerConfig.PublicIPs).
//
// Clients send to the relay's front address; each client gets its own
// upstream socket to the target, so the target tells clients apart as it
// would without the relay.
package udpimpair

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Link is one direction's impairment.
type Link struct {
	Loss   float64       // mean loss
	Burst  float64       // mean burst length in packets (<= 1: independent loss)
	Delay  time.Duration // one-way delay
	Jitter time.Duration // uniform, +- around Delay
	// Drop, when set, drops every datagram it reports true for, besides
	// the random loss: to cut one protocol off a path (DTLS records, say)
	// and see what the ends say. One that always reports false sees every
	// datagram: a tap.
	Drop func(b []byte) bool
}

// Stats counts what the relay forwarded and dropped.
type Stats struct {
	Up, Down         uint64 // datagrams forwarded
	UpLost, DownLost uint64
	Flows            int
}

// Relay is a running relay.
type Relay struct {
	front  *net.UDPConn
	target netip.AddrPort
	up     Link
	down   Link

	mu     sync.Mutex
	rng    *rand.Rand
	bad    [2]bool // Gilbert-Elliott state per direction
	flows  map[netip.AddrPort]*net.UDPConn
	closed bool
	wg     sync.WaitGroup
	stats  [4]atomic.Uint64
}

// New listens on front (for example "127.0.0.2:0" or the target's port on
// another loopback address) and forwards to target.
func New(front string, target netip.AddrPort, up, down Link, seed uint64) (*Relay, error) {
	addr, err := net.ResolveUDPAddr("udp", front)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, err
	}
	r := &Relay{front: c, target: target, up: up, down: down, rng: rand.New(rand.NewPCG(seed, 7)),
		flows: map[netip.AddrPort]*net.UDPConn{}}
	r.wg.Add(1)
	go r.readFront()
	return r, nil
}

// Addr returns the front address.
func (r *Relay) Addr() netip.AddrPort { return r.front.LocalAddr().(*net.UDPAddr).AddrPort() }

// SetLinks changes the impairment from now on.
func (r *Relay) SetLinks(up, down Link) {
	r.mu.Lock()
	r.up, r.down = up, down
	r.mu.Unlock()
}

// Stats returns the counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	n := len(r.flows)
	r.mu.Unlock()
	return Stats{Up: r.stats[0].Load(), Down: r.stats[1].Load(), UpLost: r.stats[2].Load(), DownLost: r.stats[3].Load(), Flows: n}
}

// Close stops the relay.
func (r *Relay) Close() error {
	r.mu.Lock()
	r.closed = true
	for _, f := range r.flows {
		f.Close()
	}
	r.mu.Unlock()
	r.front.Close()
	r.wg.Wait()
	return nil
}

// fate decides the fate of datagram b in direction dir: dropped, or the delay
// to deliver it after.
func (r *Relay) fate(dir int, b []byte) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.up
	if dir == 1 {
		l = r.down
	}
	if l.Drop != nil && l.Drop(b) {
		return 0, true
	}
	lost := false
	if l.Burst > 1 && l.Loss > 0 {
		// Gilbert-Elliott: a lossless good state, a lossy bad one, mean
		// burst Burst and mean loss Loss.
		b2g := 1 / l.Burst
		g2b := l.Loss * b2g / (1 - l.Loss)
		if r.bad[dir] {
			r.bad[dir] = r.rng.Float64() >= b2g
		} else {
			r.bad[dir] = r.rng.Float64() < g2b
		}
		lost = r.bad[dir]
	} else {
		lost = r.rng.Float64() < l.Loss
	}
	d := l.Delay
	if l.Jitter > 0 {
		d += time.Duration((r.rng.Float64()*2 - 1) * float64(l.Jitter))
	}
	return max(d, 0), lost
}

func (r *Relay) readFront() {
	defer r.wg.Done()
	buf := make([]byte, 2048)
	for {
		n, from, err := r.front.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		up, err := r.flow(from)
		if err != nil {
			continue
		}
		r.send(0, buf[:n], func(b []byte) { up.WriteToUDPAddrPort(b, r.target) })
	}
}

// flow returns the upstream socket of a client, making it on first use.
func (r *Relay) flow(client netip.AddrPort) (*net.UDPConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.flows[client]; ok {
		return c, nil
	}
	if r.closed {
		return nil, net.ErrClosed
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: r.target.Addr().AsSlice()})
	if err != nil {
		return nil, err
	}
	r.flows[client] = c
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		buf := make([]byte, 2048)
		for {
			n, _, err := c.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			r.send(1, buf[:n], func(b []byte) { r.front.WriteToUDPAddrPort(b, client) })
		}
	}()
	return c, nil
}

func (r *Relay) send(dir int, b []byte, write func([]byte)) {
	d, lost := r.fate(dir, b)
	if lost {
		r.stats[2+dir].Add(1)
		return
	}
	r.stats[dir].Add(1)
	if d == 0 {
		write(b)
		return
	}
	p := append([]byte(nil), b...)
	time.AfterFunc(d, func() { write(p) })
}

//go:build !js

package lean

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/tongbu/tongbu/transport/internal/conn"
)

// The lean stack (transport.StackLean) serves every peer from
// one UDP socket with no goroutine per peer once the DTLS handshake is
// done: one reader takes datagrams in batches and feeds each to its
// peer's state machines (ICE-lite, inline DTLS records, sans-IO SCTP) in
// its own goroutine; one flusher seals and sends what the peers have
// queued, in batches. See SPEC.md, "The lean stack".

const (
	readBatch       = 64
	clientReadBatch = 8
	writeBatch      = 64
	bufSize         = 1500
	sweepEvery      = 10 * time.Millisecond
	// readHold is the longest the server's reader (or flusher) keeps
	// going before it lets the server's other goroutines (a room due to
	// cut) run; a read that took over readWaited is taken to have waited,
	// letting them run. Measured on one core with the relay's rooms: 500 us
	// made cuts late (p99 over 5 ms) from 3,430 players at 0.68 of the
	// core; 200 us held 3,960 at 0.75; 100 us yielded so often that the
	// flusher fell behind and frames were dropped.
	readHold   = 200 * time.Microsecond
	readWaited = 50 * time.Microsecond
	// sockBuf holds a burst of every peer's datagrams in the server's
	// socket. (Sleeping to let datagrams gather before a read was
	// measured, and costs more than the wake-ups it saves.)
	sockBuf = 4 << 20
)

// endpoint is the peers one flusher serves: a server's, or a group
// of lean clients'.
type endpoint struct {
	lim       conn.Limits
	log       *slog.Logger
	cert      tls.Certificate
	fp        []byte // SHA-256 of cert
	cookieKey []byte

	mu     sync.Mutex
	peers  map[*Peer]int32 // each peer's slot in timers
	timers timerTable

	dmu   sync.Mutex
	dirty []*Peer
	wake  chan struct{}
	// clock is the flusher's last reading of the time (unix nanoseconds),
	// at most sweepEvery old while it runs: what a send notes as its
	// peer's last (which only decides when a keepalive is due), without a
	// clock read a message.
	clock atomic.Int64

	closed    chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
	idleEvery time.Duration // how often the idle and keepalive checks run

	stats dataPathCounters

	// The flusher's, reused from sweep to sweep.
	due, closing, alive []*Peer
	closeErr            []error
}

// identity is what a server's answers and handshakes name it by: its
// DTLS certificate and the certificate's fingerprint, and the key of
// SCTP's state cookies. A server's shards share it.
type identity struct {
	cert      tls.Certificate
	fp        []byte // SHA-256 of cert
	cookieKey []byte
}

func newIdentity() (*identity, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS key: %w", err)
	}
	cert, err := selfsign.SelfSign(key)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS certificate: %w", err)
	}
	fp := sha256.Sum256(cert.Certificate[0])
	id := &identity{cert: cert, fp: fp[:], cookieKey: make([]byte, 32)}
	rand.Read(id.cookieKey)
	return id, nil
}

// newEndpoint starts a flusher for peers of id (nil: a new identity).
func newEndpoint(lim conn.Limits, log *slog.Logger, id *identity) (*endpoint, error) {
	if id == nil {
		var err error
		if id, err = newIdentity(); err != nil {
			return nil, err
		}
	}
	ep := &endpoint{lim: lim, log: log, cert: id.cert, fp: id.fp, cookieKey: id.cookieKey,
		peers: map[*Peer]int32{}, wake: make(chan struct{}, 1), closed: make(chan struct{})}
	// The idle and keepalive checks run every second, or often enough to
	// keep alive at the limits' KeepAlive: a check a second would send a
	// keepalive due every 500 ms only every second.
	ep.idleEvery = max(sweepEvery, min(time.Second, conn.WithDefaults(lim).KeepAlive/2))
	ep.clock.Store(time.Now().UnixNano())
	ep.wg.Add(1)
	go ep.flushLoop()
	return ep, nil
}

func (ep *endpoint) add(p *Peer) bool {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	select {
	case <-ep.closed:
		return false
	default:
	}
	if _, ok := ep.peers[p]; !ok {
		ep.peers[p] = ep.timers.add(p)
	}
	return true
}

func (ep *endpoint) forget(p *Peer) {
	ep.mu.Lock()
	if slot, ok := ep.peers[p]; ok {
		delete(ep.peers, p)
		ep.timers.remove(slot)
	}
	ep.mu.Unlock()
}

// markDirty queues p for the next flush and wakes the flusher.
func (ep *endpoint) markDirty(p *Peer) {
	ep.dmu.Lock()
	ep.dirty = append(ep.dirty, p)
	ep.dmu.Unlock()
	select {
	case ep.wake <- struct{}{}:
	default:
	}
}

// flushLoop sends what peers queued, as soon as they queue it, and runs
// their timers: every sweepEvery the association deadlines that are due,
// every second the idle and keepalive checks.
func (ep *endpoint) flushLoop() {
	defer ep.wg.Done()
	var w batchWriter
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	var due []*Peer
	lastIdle := time.Now()
	for {
		sweep := false
		select {
		case <-ep.closed:
			return
		case <-ep.wake:
		case <-tick.C:
			sweep = true
		}
		now := time.Now()
		ep.clock.Store(now.UnixNano())
		ep.dmu.Lock()
		dirty := ep.dirty
		ep.dirty = due[:0]
		ep.dmu.Unlock()
		held := now
		for i, p := range dirty {
			warmAhead(dirty, i, false)
			p.flush(now, &w)
			// A flush of every peer after a busy tick would keep a game
			// loop whose time has come waiting (on a server with one P,
			// for milliseconds): as the reader does, let it run now and
			// then (the clock read every 16 peers).
			if i%16 == 15 {
				if t := time.Now(); t.Sub(held) > readHold {
					w.send()
					runtime.Gosched()
					held = time.Now()
				}
			}
		}
		due = dirty[:0]
		clear(dirty)
		if sweep {
			idle := now.Sub(lastIdle) >= ep.idleEvery
			if idle {
				lastIdle = now
			}
			ep.sweep(now, idle, &w)
		}
		w.send()
	}
}

// sweep flushes the peers whose association timers are due, and once a
// second closes the silent ones and sends keepalives.
func (ep *endpoint) sweep(now time.Time, idle bool, w *batchWriter) {
	ns := now.UnixNano()
	due, closing, closeErr, alive := ep.due[:0], ep.closing[:0], ep.closeErr[:0], ep.alive[:0]
	defer func() { // kept for the next sweep, emptied
		clear(due)
		clear(closing)
		clear(closeErr)
		clear(alive)
		ep.due, ep.closing, ep.closeErr, ep.alive = due[:0], closing[:0], closeErr[:0], alive[:0]
	}()
	ep.mu.Lock()
	due = ep.timers.due(ns, due)
	if idle {
		for p := range ep.peers {
			if !p.isOpen() {
				switch age := now.Sub(p.made); {
				case age > p.Lim.HandshakeTimeout:
					closing = append(closing, p)
					closeErr = append(closeErr, fmt.Errorf("%w: not open after %v", conn.ErrHandshakeTimeout, p.Lim.HandshakeTimeout))
				case age > p.Lim.ICETimeout && !p.client && p.inICE():
					closing = append(closing, p)
					closeErr = append(closeErr, fmt.Errorf("%w: no ICE check within %v", conn.ErrHandshakeTimeout, p.Lim.ICETimeout))
				}
				continue
			}
			switch err, keepalive := p.Idle(now); {
			case err != nil:
				closing = append(closing, p)
				closeErr = append(closeErr, err)
			case keepalive:
				alive = append(alive, p) // queued below, after the lock: it marks the peer to flush
			}
		}
	}
	ep.mu.Unlock()
	for i, p := range closing {
		p.closeWith(closeErr[i])
	}
	for _, p := range due {
		p.flush(now, w)
	}
	for _, p := range alive {
		p.keepalive()
	}
}

func (ep *endpoint) close() {
	ep.once.Do(func() {
		ep.mu.Lock()
		close(ep.closed)
		peers := make([]*Peer, 0, len(ep.peers))
		for p := range ep.peers {
			peers = append(peers, p)
		}
		ep.mu.Unlock()
		for _, p := range peers {
			p.closeWith(conn.ErrClosed)
		}
	})
}

// batchWriter gathers sealed datagrams and sends them with sendmmsg, a
// batch per socket. Its datagrams and their buffers are kept from batch
// to batch: queueing a datagram allocates nothing.
type batchWriter struct {
	sock *socket
	out  []outDatagram // out[:n] are queued
	bufs [][]byte      // bufs[i] backs out[i]
	n    int
	snd  *batchSender
}

// buf returns an empty buffer to seal the next datagram into.
func (w *batchWriter) buf() []byte {
	if w.n == len(w.bufs) {
		w.bufs = append(w.bufs, make([]byte, 0, bufSize+64))
		w.out = append(w.out, outDatagram{})
	}
	return w.bufs[w.n][:0]
}

// commit queues b, the buffer buf returned, for to on sock; oob is the
// sender's control message (its source address on a shared socket), or nil.
func (w *batchWriter) commit(sock *socket, to netip.AddrPort, oob, b []byte) {
	if w.sock != sock && w.n > 0 {
		w.send()
		n := copy(w.bufs[0][:cap(w.bufs[0])], b) // buf's slice is reused: keep b
		b = w.bufs[0][:n]
	}
	w.sock = sock
	w.out[w.n] = outDatagram{b: b, to: to, oob: oob}
	w.n++
	if w.n == writeBatch {
		w.send()
	}
}

// send sends the batch. A datagram the kernel refuses (its address is
// unreachable, say) is dropped, and the rest still go: they are other
// peers'. The peers' protocols repair what is lost.
func (w *batchWriter) send() {
	if w.n == 0 {
		return
	}
	if w.snd == nil {
		w.snd = newBatchSender(writeBatch)
	}
	for sent := 0; sent < w.n; {
		n, err := w.snd.write(w.sock.raw, w.out[sent:w.n])
		if err != nil || n <= 0 {
			n++ // sendmmsg reports the first refusal: skip that datagram
		}
		sent += n
	}
	clear(w.out[:w.n])
	w.n = 0
}

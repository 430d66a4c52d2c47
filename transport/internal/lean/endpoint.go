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
	"net"
	"net/netip"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/dtls/v3/pkg/crypto/selfsign"
	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"golang.org/x/net/ipv4"
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
	// readHold is the longest the server's reader keeps reading before it
	// lets the server's other goroutines (a room due to cut) run; a read
	// that took over readWaited is taken to have waited, letting them run.
	readHold   = 500 * time.Microsecond
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

// timerTable holds the next association deadline of each of an
// endpoint's peers densely, in chunks that never move, so that the sweep
// every sweepEvery reads a few contiguous kilobytes rather than every
// peer's struct. A peer stores its deadline in its slot (Peer.timer);
// the endpoint's mu guards the rest.
type timerTable struct {
	chunks []*timerChunk
	free   []int32
	used   int32 // slots handed out so far: the sweep reads up to here
}

const timerChunkSize = 256

type timerChunk struct {
	at   [timerChunkSize]atomic.Int64 // unix nanoseconds; 0: none
	peer [timerChunkSize]*Peer
}

// add gives p a slot and points p's timer at it.
func (t *timerTable) add(p *Peer) int32 {
	var slot int32
	if n := len(t.free); n > 0 {
		slot, t.free = t.free[n-1], t.free[:n-1]
	} else {
		slot = t.used
		t.used++
		if int(slot)/timerChunkSize == len(t.chunks) {
			t.chunks = append(t.chunks, new(timerChunk))
		}
	}
	c := t.chunks[slot/timerChunkSize]
	i := slot % timerChunkSize
	c.peer[i] = p
	c.at[i].Store(p.timerAt())
	p.timer.Store(&c.at[i])
	return slot
}

// remove frees slot.
func (t *timerTable) remove(slot int32) {
	c := t.chunks[slot/timerChunkSize]
	i := slot % timerChunkSize
	c.peer[i] = nil
	c.at[i].Store(0)
	t.free = append(t.free, slot)
}

// due appends the peers whose deadline is at or before ns.
func (t *timerTable) due(ns int64, out []*Peer) []*Peer {
	for k, c := range t.chunks {
		n := min(timerChunkSize, int(t.used)-k*timerChunkSize)
		for i := range n {
			if d := c.at[i].Load(); d != 0 && d <= ns && c.peer[i] != nil {
				out = append(out, c.peer[i])
			}
		}
	}
	return out
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
		ep.dmu.Lock()
		dirty := ep.dirty
		ep.dirty = due[:0]
		ep.dmu.Unlock()
		held := now
		for i, p := range dirty {
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
	for p := range ep.peers {
		if !idle {
			break
		}
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
		err, keepalive := p.Idle(now)
		switch {
		case err != nil:
			closing = append(closing, p)
			closeErr = append(closeErr, err)
		case keepalive:
			due = append(due, p)
			alive = append(alive, p)
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

// socket is one UDP socket and its reader: the server's, one
// client's, or the clients' shared socket (see transport.ClientConfig.SharedSocket).
type socket struct {
	ep     *endpoint
	conn   *net.UDPConn
	raw    rawSocket
	server bool
	client *Peer // a client's own socket serves one peer
	shared bool  // many clients, each at its own local address

	mu      sync.RWMutex
	byAddr  map[netip.AddrPort]*Peer // where each peer is
	byCand  map[netip.AddrPort]*Peer // a new address a peer's checks came from, not yet proven
	ufrags  *ufragTable              // a server's: its shards share it
	byLocal map[netip.Addr]*Peer     // a shared socket's clients
	next    uint32                   // the shared socket's next local address

	stunMsg stun.Message // the reader's
	stunOut stun.Message
}

// newSocket serves udp: a server's socket, whose peers the server's
// ufrags finds, or a client's own (ufrags nil).
func newSocket(ep *endpoint, udp *net.UDPConn, ufrags *ufragTable) (*socket, error) {
	raw, err := newRawSocket(udp)
	if err != nil {
		return nil, err
	}
	server := ufrags != nil
	s := &socket{ep: ep, conn: udp, raw: raw, server: server, ufrags: ufrags,
		byAddr: map[netip.AddrPort]*Peer{}, byCand: map[netip.AddrPort]*Peer{}}
	if server {
		udp.SetReadBuffer(sockBuf)
		udp.SetWriteBuffer(sockBuf)
	}
	ep.wg.Add(1)
	go s.readLoop()
	return s, nil
}

// newSharedSocket serves the clients of a shared socket, each at its own
// local address (the control message IP_PKTINFO is on for udp).
func newSharedSocket(ep *endpoint, udp *net.UDPConn) (*socket, error) {
	raw, err := newRawSocket(udp)
	if err != nil {
		return nil, err
	}
	s := &socket{ep: ep, conn: udp, raw: raw, shared: true, byLocal: map[netip.Addr]*Peer{}}
	ep.wg.Add(1)
	go s.readLoop()
	return s, nil
}

// ufragTable finds a server's peers by their ICE username fragment:
// every shard's socket looks a binding request's up in it.
type ufragTable struct {
	mu sync.RWMutex
	m  map[string]*Peer
}

func (t *ufragTable) get(ufrag string) *Peer {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.m[ufrag]
}

func (t *ufragTable) put(ufrag string, p *Peer) {
	t.mu.Lock()
	t.m[ufrag] = p
	t.mu.Unlock()
}

func (t *ufragTable) forget(p *Peer, ufrag string) {
	t.mu.Lock()
	if t.m[ufrag] == p {
		delete(t.m, ufrag)
	}
	t.mu.Unlock()
}

func (t *ufragTable) len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.m)
}

// peerKeys are what a socket's tables know a peer by, as the peer held
// them when it closed (read under its lock).
type peerKeys struct {
	local     netip.Addr
	ufrag     string
	rap, cand netip.AddrPort
}

// forget removes p, known by k, from the socket's tables.
func (s *socket) forget(p *Peer, k peerKeys) {
	s.mu.Lock()
	if k.local.IsValid() && s.byLocal[k.local] == p {
		delete(s.byLocal, k.local)
	}
	if s.byAddr[k.rap] == p {
		delete(s.byAddr, k.rap)
	}
	if s.byCand[k.cand] == p {
		delete(s.byCand, k.cand)
	}
	s.mu.Unlock()
	if s.ufrags != nil {
		s.ufrags.forget(p, k.ufrag)
	}
}

// rebind moves p from old, on the socket from, to ap, on s, and reports
// false, moving nothing, when another peer is at ap.
func (s *socket) rebind(p *Peer, from *socket, old, ap netip.AddrPort) bool {
	if s.shared {
		return true // its clients are found by their local address
	}
	s.mu.Lock()
	if q := s.byAddr[ap]; q != nil && q != p {
		s.mu.Unlock()
		s.ep.stats.checksRefused.Add(1)
		return false
	}
	if from == s && s.byAddr[old] == p {
		delete(s.byAddr, old)
	}
	if s.byCand[ap] == p {
		delete(s.byCand, ap)
	}
	s.byAddr[ap] = p
	s.mu.Unlock()
	if from != s && from != nil && old.IsValid() {
		from.unbind(p, old) // the peer's old address was another shard's
	}
	return true
}

// unbind forgets that p is at ap (it moved to a TCP path).
func (s *socket) unbind(p *Peer, ap netip.AddrPort) {
	s.mu.Lock()
	if s.byAddr[ap] == p {
		delete(s.byAddr, ap)
	}
	s.mu.Unlock()
}

// uncand forgets that ap is p's candidate path.
func (s *socket) uncand(p *Peer, ap netip.AddrPort) {
	s.mu.Lock()
	if s.byCand[ap] == p {
		delete(s.byCand, ap)
	}
	s.mu.Unlock()
}

// candidate makes ap p's candidate path in place of old, and reports
// false when another peer is at ap, or when over (p's checks from new
// addresses are over their rate) is set.
func (s *socket) candidate(p *Peer, old, ap netip.AddrPort, over bool) bool {
	if s.shared {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.byAddr[ap]; q != nil && q != p {
		s.ep.stats.checksRefused.Add(1)
		return false
	}
	if over {
		return false
	}
	if s.byCand[old] == p {
		delete(s.byCand, old)
	}
	s.byCand[ap] = p
	return true
}

func (s *socket) readLoop() {
	defer s.ep.wg.Done()
	// A client's own socket carries one peer's datagrams, a few a tick:
	// a smaller batch, for load generators that hold thousands of them.
	many := s.server || s.shared
	batch := readBatch
	if !many {
		batch = clientReadBatch
	}
	oob := 0
	if s.shared {
		oob = len(ipv4.NewControlMessage(ipv4.FlagDst))
	}
	r := newBatchReader(s.raw, batch, oob)
	// Packing a batch for recvmmsg costs for every message asked, not
	// only those that come: ask for twice what the last read brought, so
	// a read that fills its batch doubles the next, up to the batch.
	ask := batch
	held := time.Now()                  // since when this goroutine has run without waiting
	rd := reading{slabSize: clientSlab} // a datagram's messages for a Handler, and their bytes
	if many {
		rd.slabSize = serverSlab
	}
	for {
		asked := time.Now()
		n, err := r.read(ask)
		ask = min(max(2*n, 2), batch)
		now := time.Now()
		if now.Sub(asked) > readWaited {
			held = now // the read waited: the others ran meanwhile
		}
		if err != nil {
			if errClosed(err) {
				return
			}
			continue
		}
		began := now
		for i := range r.in[:n] {
			d := &r.in[i]
			if len(d.b) == 0 {
				continue
			}
			var dst netip.Addr
			if s.shared {
				var ok bool
				if dst, ok = pktinfoDst(d.oob); !ok {
					continue
				}
			}
			s.take(now, d.b, d.from, dst, &rd)
			if s.server {
				// What each datagram cost, for DataPathStats: one clock
				// read a datagram.
				done := time.Now()
				s.ep.stats.datagram(done.Sub(began))
				began = done
			}
		}
		// A burst of every peer's datagrams would keep the server's
		// reader reading for milliseconds, and a game loop whose time has
		// come would wait for it: let it run between batches, but not
		// after every one (the reader would then wait behind every
		// handshake's goroutines). A client's socket has one peer's
		// datagrams, and its reader waits after nearly every one.
		if t := time.Now(); many && t.Sub(held) > readHold {
			runtime.Gosched()
			held = t
		}
	}
}

// datagram routes one datagram by its first byte (RFC 7983): STUN to
// ICE, DTLS to the peer of its address; the rest is dropped. On a shared
// socket the peer is the one at dst, the datagram's local address, and
// the datagram must come from that peer's server.
func (s *socket) datagram(now time.Time, b []byte, from netip.AddrPort, dst netip.Addr) {
	rd := reading{slabSize: clientSlab}
	s.take(now, b, from, dst, &rd)
}

// take is datagram with the reader's state for the messages it hands
// over (reused from datagram to datagram).
func (s *socket) take(now time.Time, b []byte, from netip.AddrPort, dst netip.Addr, rd *reading) {
	ap := netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	var local *Peer
	if s.shared {
		s.mu.RLock()
		local = s.byLocal[dst]
		s.mu.RUnlock()
		if local == nil {
			return
		}
	}
	switch {
	case b[0] < 4:
		s.stunPacket(b, ap, local)
	case b[0] >= 20 && b[0] <= 63:
		p := local
		if !s.shared {
			s.mu.RLock()
			if p = s.byAddr[ap]; p == nil {
				p = s.byCand[ap]
			}
			s.mu.RUnlock()
		}
		if p != nil && p.datagram(now, b, ap, rd) {
			rd.handOver(p)
		}
	}
}

// stunPacket answers an authenticated binding request (the server, ICE
// lite) or takes a binding response (a client). Anything else, and
// anything that fails its integrity check, is dropped without a trace.
// local is the client a shared socket's datagram is for.
func (s *socket) stunPacket(b []byte, ap netip.AddrPort, local *Peer) {
	m := &s.stunMsg
	m.Raw = append(m.Raw[:0], b...)
	if err := m.Decode(); err != nil {
		return
	}
	switch m.Type {
	case stun.BindingRequest:
		if s.server {
			s.bindingRequest(m, ap)
		}
	case stun.BindingSuccess:
		switch {
		case local != nil:
			local.bindingResponse(m, ap)
		case s.client != nil:
			s.client.bindingResponse(m, ap)
		}
	}
}

func (s *socket) bindingRequest(m *stun.Message, ap netip.AddrPort) {
	var user stun.Username
	if err := user.GetFrom(m); err != nil {
		return
	}
	local, remote, ok := strings.Cut(user.String(), ":")
	if !ok {
		return
	}
	p := s.ufrags.get(local)
	if p == nil || remote != p.remote.ufrag {
		return
	}
	if stun.Fingerprint.Check(m) != nil || stun.NewShortTermIntegrity(p.pwd).Check(m) != nil {
		return
	}
	// The first authenticated check binds the peer, before the answer
	// goes (the client starts DTLS as soon as it has it); see checked
	// for one from another address.
	if !p.checked(s, ap) {
		return
	}
	out := &s.stunOut
	out.Reset()
	err := out.Build(stun.NewTransactionIDSetter(m.TransactionID), stun.BindingSuccess,
		&stun.XORMappedAddress{IP: ap.Addr().AsSlice(), Port: int(ap.Port())},
		stun.NewShortTermIntegrity(p.pwd), stun.Fingerprint)
	if err != nil {
		return
	}
	s.conn.WriteToUDPAddrPort(out.Raw, ap)
}

// writeTo sends one datagram to ap now, from oob's source address when
// oob is set (a shared socket's client).
func (s *socket) writeTo(b []byte, ap netip.AddrPort, oob []byte) (int, error) {
	if oob != nil {
		n, _, err := s.conn.WriteMsgUDPAddrPort(b, oob, ap)
		return n, err
	}
	return s.conn.WriteToUDPAddrPort(b, ap)
}

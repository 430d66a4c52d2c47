//go:build !js

package lean

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/dtls/v3"
	"github.com/pion/logging"
	"github.com/tongbu/tongbu/transport/internal/conn"
	"github.com/tongbu/tongbu/transport/internal/record"
	"github.com/tongbu/tongbu/transport/internal/sctp"
)

// The phases of a lean peer.
type phase uint8

const (
	phaseICE  phase = iota // waiting for an authenticated binding request (or response)
	phaseDTLS              // pion/dtls runs the handshake
	phaseSCTP              // records are protected inline; SCTP sets up
	phaseOpen              // both channels usable
	phaseClosed
)

// Bounds on what one peer's datagrams may cost.
const (
	maxEarly       = 16   // records held while the handshake finishes
	maxFlightSends = 10   // resends of the last handshake flight
	maxPacketRate  = 4000 // datagrams a second before a peer is throttled
	floodSeconds   = 3    // seconds over the rate before it is cut off
	// maxMoves bounds how often a peer moves to a new address (its NAT
	// rebound, or it changed networks): at most this many a minute.
	maxMoves = 4
	// maxCandChecks bounds the checks from new addresses a peer past its
	// handshake gets answered a second (a browser sends one every few
	// seconds a path): more are dropped, so that forged ones neither cost
	// the server much nor turn it into a reflector.
	maxCandChecks = 8
	// maxHandshakeTCP bounds the TCP connections a client may check
	// during the handshake (a connection from each of its addresses).
	maxHandshakeTCP = 4
)

// errFlood closes a peer that sends datagrams faster than any client
// would.
var errFlood = errors.New("transport: peer floods datagrams")

// Peer is one connection of the lean stack, and its transport.Conn.
type Peer struct {
	conn.Core

	// What a datagram in or out touches comes first, together after the
	// Core (whose limits and counters it touches too): a few cache lines,
	// which warm asks for before the reader or flusher comes to the peer
	// (warm.go). p.mu guards what is not atomic.
	ep      atomic.Pointer[endpoint] // its flusher's (home); a server's peer moves to its socket's shard at its first check
	mu      sync.Mutex
	phase   phase
	client  bool // the ICE controlling side, which sends SCTP's INIT
	dirty   bool
	skipped atomic.Bool // the flusher found the peer busy: whoever unlocks it queues it again
	opened  atomic.Bool
	inboxed atomic.Bool    // a message went to the inbox since handOver last looked
	rap     netip.AddrPort // where it is
	cand    netip.AddrPort // a new address the peer's ICE checks came from, not yet proven
	tcp     *tcpPath       // the TCP connection rap is, when the peer is on one (ICE-TCP)
	candTCP *tcpPath       // the TCP connection cand is, when it is one
	sock    *socket        // where its datagrams come in
	// oob: a shared socket's client sends from its own local address,
	// named in each datagram's control message (IP_PKTINFO).
	oob   []byte
	ciph  *record.Cipher
	assoc *sctp.Assoc
	keyed atomic.Pointer[keyed] // for warm, which does not hold mu: set with ciph and assoc
	fail  error                 // why to close, found under the lock
	taken []sctp.Message        // the association's messages, as the reader takes them
	rd    *reading              // while a reader holds the lock: where messages for the handler, and their bytes, go
	// The datagrams it sent this second, and the seconds it sent too many.
	rateSecond int64
	rateCount  int
	floods     int
	// The flusher's writer while it flushes the peer, and the functions
	// that build packets in its buffers and queue them (made once).
	w        *batchWriter
	nextBuf  func() []byte
	emit     func([]byte)
	timer    atomic.Pointer[atomic.Int64] // the slot of its endpoint's timer table: unix nanoseconds of the next timer; 0: none
	deadline int64                        // the last stored there, carried to another endpoint's table
	rtt      atomic.Int64
	handler  atomic.Pointer[func(conn.Message)] // set by Handle
	handleMu sync.Mutex                         // held while messages go to the handler, which takes them one at a time
	hotEnd   struct{}                           // where warm stops

	local netip.Addr // a shared socket's client's own address
	// dtlsClient: this side starts the DTLS handshake (setup active).
	dtlsClient  bool
	ufrag       string // this side's ICE credentials
	pwd         string
	remote      remoteSession
	made        time.Time
	reached     phase // the phase the peer was in when it closed
	raddr       *net.UDPAddr
	candSock    *socket    // the socket cand's datagrams come in on, when it is a UDP one
	hsTCP       []*tcpPath // TCP connections checked during the handshake, kept for the client's nomination (checkedOn)
	candSecond  int64      // the second candChecks counts
	candChecks  int
	moved       [maxMoves]time.Time // when it last moved, oldest first
	hs          *hsConn
	flight      [][]byte
	flightSent  int
	flightAt    time.Time
	early       [][]byte
	iceTx       [12]byte // the binding request's transaction
	iceCheck    []byte   // the binding request, resent as it is
	iceTries    int
	iceAnswered bool // the server answered the binding request
	open        chan struct{}
	once        sync.Once
	onOpen      func(*Peer)
	onClose     func(*Peer)
	closer      atomic.Pointer[func()] // set by HandleClose: runs once, after the close
}

func newPeer(ep *endpoint, sock *socket, id conn.PeerID, client bool, lim conn.Limits, log *slog.Logger) *Peer {
	p := &Peer{sock: sock, client: client, made: time.Now(), open: make(chan struct{}),
		ufrag: randToken(8), pwd: randToken(24)}
	p.ep.Store(ep)
	p.Init(id, conn.Limits(lim), log)
	return p
}

func randToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

func (p *Peer) isOpen() bool { return p.opened.Load() }

// home returns the endpoint whose flusher sends the peer's datagrams.
func (p *Peer) home() *endpoint { return p.ep.Load() }

// unlock releases p.mu and, when the flusher passed the peer by while
// the lock was held, queues it to flush again.
func (p *Peer) unlock() {
	p.mu.Unlock()
	if p.skipped.Load() && p.skipped.CompareAndSwap(true, false) {
		p.home().markDirty(p)
	}
}

// inICE reports whether no authenticated ICE check has arrived yet; a
// peer busy in another goroutine is taken to be past it (the flusher
// never waits for one: it looks again a second later).
func (p *Peer) inICE() bool {
	if !p.mu.TryLock() {
		return false
	}
	defer p.unlock()
	return p.phase == phaseICE
}

func (p *Peer) SendUnreliable(msg []byte) error {
	return p.send(conn.Unreliable, msg)
}

func (p *Peer) SendReliable(msg []byte) error {
	return p.send(conn.Reliable, msg)
}

func (p *Peer) send(ch conn.Channel, msg []byte) error {
	if err := p.CheckSend(msg, p.MaxFor(ch), p.isOpen()); err != nil {
		return err
	}
	p.mu.Lock()
	if p.assoc == nil || p.phase != phaseOpen {
		p.unlock()
		return conn.ErrClosed
	}
	var err error
	if ch == conn.Unreliable {
		if p.assoc.BufferedUnreliable() > p.Lim.MaxBufferedUnreliable {
			p.unlock()
			p.CountDropped()
			return conn.ErrDropped
		}
		err = p.assoc.SendUnordered(uint16(conn.Unreliable), sctp.PPIDBinary, msg)
	} else {
		if p.assoc.BufferedReliable() > p.Lim.MaxReliableQueue {
			p.unlock()
			return conn.ErrQueueFull
		}
		err = p.assoc.SendOrdered(uint16(conn.Reliable), sctp.PPIDBinary, msg)
	}
	mark := !p.dirty
	p.dirty = true
	p.unlock()
	if err != nil {
		return fmt.Errorf("transport: send on %s: %w", ch, err)
	}
	if mark {
		p.home().markDirty(p)
	}
	p.SentAtNano(len(msg), p.home().clock.Load())
	return nil
}

// keepalive queues an empty message on the reliable channel (WebRTC's
// empty binary message: one zero byte under its own PPID). The flusher
// sends it; a peer busy in another goroutine gets it on a later sweep.
func (p *Peer) keepalive() {
	if !p.mu.TryLock() {
		return
	}
	if p.phase == phaseOpen {
		p.assoc.SendOrdered(uint16(conn.Reliable), sctp.PPIDBinaryEmpty, []byte{0})
		p.SentAt(time.Now())
		if !p.dirty {
			p.dirty = true
			p.unlock()
			p.home().markDirty(p)
			return
		}
	}
	p.unlock()
}

func (p *Peer) Close() error {
	p.closeWith(nil)
	return nil
}

// Stats returns the connection's counters.
func (p *Peer) Stats() conn.Stats { return p.Snapshot(time.Duration(p.rtt.Load())) }

// closeWith closes the peer once: an ABORT and a close_notify go to the
// other side when the association was up.
func (p *Peer) closeWith(reason error) {
	p.once.Do(func() {
		p.Closing(reason)
		p.mu.Lock()
		var bye [][]byte
		if p.assoc != nil && p.ciph != nil {
			if closed, _ := p.assoc.Closed(); !closed {
				p.assoc.Close()
			}
			p.assoc.Flush(time.Now(), func(pkt []byte) {
				bye = append(bye, p.ciph.Seal(nil, record.ApplicationData, pkt))
			})
			bye = append(bye, p.ciph.Seal(nil, record.Alert, []byte{1, 0})) // close_notify
		}
		p.reached, p.phase = p.phase, phaseClosed
		p.dropStrays()
		hs := p.hs
		p.hs, p.early, p.flight = nil, nil, nil
		rap, tcp, candTCP, sock, candSock := p.rap, p.tcp, p.candTCP, p.sock, p.candSock
		keys := peerKeys{local: p.local, ufrag: p.ufrag, rap: p.rap, cand: p.cand} // read under p.mu: a TCP path's end clears cand
		p.unlock()
		if hs != nil {
			hs.Close()
		}
		for _, b := range bye {
			if tcp != nil {
				tcp.send(b)
			} else {
				sock.writeTo(b, rap, p.oob)
			}
		}
		if tcp != nil {
			tcp.finish() // after the bye
		}
		if candTCP != nil {
			candTCP.close()
		}
		p.Finish()
		sock.forget(p, keys)
		if candSock != nil && candSock != sock {
			candSock.uncand(p, keys.cand)
		}
		p.home().forget(p)
		if p.onClose != nil {
			p.onClose(p)
		}
		if f := p.closer.Load(); f != nil {
			go (*f)()
		}
	})
}

// dtlsConfig holds the handshake to the one suite the inline records
// serve, and checks the peer's certificate against its SDP fingerprint.
func (p *Peer) dtlsConfig() *dtls.Config {
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	return &dtls.Config{
		Certificates:         []tls.Certificate{p.home().cert},
		CipherSuites:         []dtls.CipherSuiteID{record.SuiteID},
		ClientAuth:           dtls.RequireAnyClientCert,
		InsecureSkipVerify:   true,
		ExtendedMasterSecret: dtls.RequireExtendedMasterSecret,
		LoggerFactory:        lf,
		// Browsers and pion ask for SRTP keys whether or not media flows,
		// and pion's server refuses a handshake that offers no profile.
		SRTPProtectionProfiles: []dtls.SRTPProtectionProfile{dtls.SRTP_AEAD_AES_128_GCM, dtls.SRTP_AES128_CM_HMAC_SHA1_80},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 || !fingerprintMatches(raw[0], p.remote.fingerprint) {
				return errors.New("transport: DTLS certificate does not match the SDP fingerprint")
			}
			return nil
		},
	}
}

// handshake runs pion/dtls's handshake on the peer's hsConn, then takes
// the keys and hands the records to the inline path.
func (p *Peer) handshake(hs *hsConn) {
	ctx, cancel := context.WithTimeout(context.Background(), p.Lim.HandshakeTimeout)
	defer cancel()
	var dc *dtls.Conn
	var err error
	if p.dtlsClient {
		dc, err = dtls.Client(hs, hs.addr(), p.dtlsConfig())
	} else {
		dc, err = dtls.Server(hs, hs.addr(), p.dtlsConfig())
	}
	if err == nil {
		err = dc.HandshakeContext(ctx)
	}
	var ciph *record.Cipher
	if err == nil {
		st, ok := dc.ConnectionState()
		if !ok {
			err = errors.New("no state")
		} else {
			ciph, err = record.FromState(&st)
		}
	}
	if err != nil {
		if dc != nil {
			dc.Close()
		}
		hs.Close()
		why := conn.ErrHandshake
		if ctx.Err() != nil {
			why = conn.ErrHandshakeTimeout
		}
		p.closeWith(fmt.Errorf("%w: DTLS: %w", why, err))
		return
	}
	now := time.Now()
	p.mu.Lock()
	if p.phase != phaseDTLS {
		p.unlock()
		dc.Close()
		hs.Close()
		return
	}
	p.flight = hs.handoff()
	p.hs = nil
	p.ciph = ciph
	p.assoc = sctp.New(sctp.Config{Client: p.client, CookieKey: p.home().cookieKey,
		MaxMessage: p.Lim.MaxReliable, RecvWindow: 256 << 10}, now)
	p.keyed.Store(newKeyed(p.ciph, p.assoc))
	p.phase = phaseSCTP
	p.dropStrays()
	early := p.early
	p.early = nil
	for _, b := range early {
		p.records(now, b)
	}
	close := p.settle()
	p.unlock()
	// pion's connection ends quietly: its writes are dropped now.
	dc.Close()
	hs.Close()
	p.after(close)
}

// fingerprintMatches reports whether cert's SHA-256 is fp.
func fingerprintMatches(cert, fp []byte) bool {
	sum := sha256.Sum256(cert)
	return len(fp) == len(sum) && string(sum[:]) == string(fp)
}

// datagram takes one DTLS datagram that came from `from`. It reports
// false, having done nothing, when that is not the peer's address (a
// shared socket finds its client by the datagram's local address, so the
// sender is checked here, under the lock the datagram takes anyway).
//
// Messages for a Handler are appended to rd.hand, for the reader to hand
// over once the lock is let go (handOver); the rest go to the inbox.
func (p *Peer) datagram(now time.Time, b []byte, from netip.AddrPort, rd *reading) bool {
	return p.datagramOn(now, b, from, nil, rd)
}

// datagramOn is datagram for one that came over the TCP connection tp
// (nil: over UDP).
func (p *Peer) datagramOn(now time.Time, b []byte, from netip.AddrPort, tp *tcpPath, rd *reading) bool {
	p.mu.Lock()
	onCand := false
	if from != p.rap || tp != p.tcp {
		// Only records on the candidate path, once the keys are known.
		if from != p.cand || tp != p.candTCP || !p.cand.IsValid() || p.phase != phaseSCTP && p.phase != phaseOpen {
			p.unlock()
			return false
		}
		onCand = true
	}
	if !p.admit(now) {
		flood := p.floods > floodSeconds
		p.unlock()
		if flood {
			p.closeWith(errFlood)
		}
		return true
	}
	switch p.phase {
	case phaseDTLS:
		// Application data before the keys are ready (the peer finished
		// first) waits; the handshake's own records go to pion.
		if len(b) > 0 && b[0] == record.ApplicationData {
			if len(p.early) < maxEarly {
				p.early = append(p.early, append([]byte(nil), b...))
			}
		} else if p.hs != nil {
			p.hs.feed(append([]byte(nil), b...))
		}
		p.unlock()
		return true
	case phaseSCTP, phaseOpen:
		p.rd = rd // for deliver, while the lock is held
		if p.records(now, b) > 0 && onCand {
			p.moveTo(now, from)
		}
		p.rd = nil
		p.home().stats.held(p.assoc.Held())
	}
	close := p.settle()
	p.unlock()
	p.after(close)
	return true
}

// admit counts a datagram against the peer's rate.
func (p *Peer) admit(now time.Time) bool {
	sec := now.Unix()
	if sec != p.rateSecond {
		if p.rateCount > maxPacketRate {
			p.floods++
		} else if sec != p.rateSecond+1 || p.floods > 0 {
			p.floods = max(p.floods-1, 0)
		}
		p.rateSecond, p.rateCount = sec, 0
	}
	p.rateCount++
	return p.rateCount <= maxPacketRate
}

// records takes the records of one datagram and returns how many
// authenticated; p.mu is held. Each record costs one AES-GCM open of its
// own bytes at most (a forged one fails there); the replay window is a
// 64-bit map, O(1) a record.
func (p *Peer) records(now time.Time, b []byte) int {
	opened := 0
	for len(b) > 0 && p.phase != phaseClosed {
		h, body, rest, err := record.Next(b)
		if err != nil {
			return opened
		}
		b = rest
		switch h.Type {
		case record.ApplicationData:
			pt, err := p.ciph.Open(h, body)
			if err != nil {
				continue // forged, replayed or corrupt: dropped
			}
			opened++
			p.assoc.Handle(now, pt) // a closed association is found by settle
			p.taken = p.assoc.Messages(p.taken[:0])
			for _, m := range p.taken {
				if m.Reset {
					p.reset(m.Stream)
				} else {
					p.deliver(now, m.Stream, m.PPID, m.Data)
				}
			}
			clear(p.taken)

		case record.Alert:
			if h.Epoch != 1 {
				continue
			}
			pt, err := p.ciph.Open(h, body)
			if err != nil {
				continue
			}
			opened++
			if len(pt) == 2 && (pt[1] == 0 || pt[0] == 2) { // close_notify, or fatal
				p.fail = fmt.Errorf("%w: the peer closed (DTLS alert %d)", conn.ErrClosed, pt[1])
			}
		case record.Handshake, record.ChangeCipherSpec:
			// The peer did not get the last flight: send it again.
			if len(p.flight) > 0 && p.flightSent < maxFlightSends && now.Sub(p.flightAt) > 50*time.Millisecond {
				p.flightSent++
				p.flightAt = now
				for _, f := range p.flight {
					p.writeNow(f)
				}
			}
		}
	}
	return opened
}

// settle looks at the association after input or timers: it opens the
// connection once SCTP is up, queues the peer to flush when there is
// something to send, and returns the error to close with, if any; p.mu
// is held.
func (p *Peer) settle() error {
	if p.assoc == nil {
		return nil
	}
	if closed, err := p.assoc.Closed(); closed {
		if err == nil {
			err = conn.ErrClosed
		}
		return fmt.Errorf("%w: %w", conn.ErrClosed, err)
	}
	if p.fail != nil {
		return p.fail
	}
	if p.phase == phaseSCTP && p.assoc.Established() {
		p.phase = phaseOpen
		p.opened.Store(true)
		p.rtt.Store(0)
		defer func() { go p.opening() }()
	}
	p.storeDeadline()
	if p.assoc.Pending() && !p.dirty {
		p.dirty = true
		p.home().markDirty(p)
	}
	return nil
}

func (p *Peer) opening() {
	close(p.open)
	if p.onOpen != nil {
		p.onOpen(p)
	}
}

// after closes the peer if settle said so; p.mu is not held.
func (p *Peer) after(err error) {
	if err != nil {
		p.closeWith(err)
	}
}

func (p *Peer) storeDeadline() {
	var d int64
	if t := p.assoc.Deadline(); !t.IsZero() {
		d = t.UnixNano()
	}
	p.setDeadline(d)
	p.rtt.Store(int64(p.assoc.SRTT()))
}

// setDeadline tells the sweep when the peer next has timer work (unix
// nanoseconds; 0: none); p.mu is held. A closed peer's slot may be
// another's already: it stores nothing.
func (p *Peer) setDeadline(ns int64) {
	if p.phase == phaseClosed {
		return
	}
	p.deadline = ns
	if t := p.timer.Load(); t != nil {
		t.Store(ns)
	}
}

// timerAt is the deadline last set, for a new slot (the endpoint's mu
// and, once the peer is shared, p.mu are held).
func (p *Peer) timerAt() int64 { return p.deadline }

// deliver takes a message from the association; p.mu is held. The data
// is copied into the reader's slab, which the messages it reads share.
func (p *Peer) deliver(now time.Time, stream uint16, ppid uint32, data []byte) {
	if stream > uint16(conn.Reliable) {
		return
	}
	ch := conn.Channel(stream)
	if ppid == sctp.PPIDBinaryEmpty || ppid == sctp.PPIDStringEmpty {
		data = nil
	}
	ok, err := p.CheckAt(now, ch, data)
	if err != nil {
		p.fail = err
		return
	}
	if !ok {
		return
	}
	rd := p.rd
	if rd == nil { // records that came before the handshake finished
		rd = &reading{slabSize: clientSlab}
	}
	msg := conn.Message{Channel: ch, Data: rd.keep(data)}
	if p.rd != nil && p.handler.Load() != nil {
		p.rd.hand = append(p.rd.hand, msg) // straight to the handler: no inbox between
		return
	}
	if p.In.Offer(msg) {
		p.inboxed.Store(true)
	} else if ch == conn.Reliable {
		p.fail = fmt.Errorf("%w: the reader is %d reliable messages behind", conn.ErrQueueFull, p.Lim.InboxReliable)
	}
}

// reset: a channel the peer closed ends the connection.
func (p *Peer) reset(stream uint16) {
	if stream <= uint16(conn.Reliable) {
		p.fail = fmt.Errorf("%w: the peer closed channel %s", conn.ErrClosed, conn.Channel(stream))
	}
}

// flush sends what the association has to send, sealed, through w. A
// peer whose lock another goroutine holds (the reader, in the middle of
// its datagram) is not waited for: it is marked skipped, and whoever
// holds it queues it again on letting go (unlock), so one peer's work
// never holds up every other peer's sends.
func (p *Peer) flush(now time.Time, w *batchWriter) {
	if !p.mu.TryLock() {
		p.skipped.Store(true)
		if !p.mu.TryLock() {
			p.home().stats.flushesDeferred.Add(1)
			return
		}
		p.skipped.Store(false)
	}
	p.dirty = false
	if p.client && p.phase == phaseICE {
		p.sendCheck(now)
	}
	if p.assoc == nil || p.ciph == nil || p.phase == phaseClosed {
		p.unlock()
		return
	}
	// Each packet is built in the buffer it is sent from, after room for
	// the record's header, and sealed where it is.
	if p.nextBuf == nil { // made once: a closure made here would be allocated every flush
		p.nextBuf = func() []byte { return p.w.buf()[:record.Prefix] }
		p.emit = func(b []byte) {
			rec := p.ciph.SealInPlace(b, record.ApplicationData)
			if p.tcp != nil {
				p.tcp.send(rec)
			} else {
				p.w.commit(p.sock, p.rap, p.oob, rec)
			}
		}
	}
	p.w = w
	p.assoc.FlushInto(now, p.nextBuf, p.emit)
	p.w = nil
	close := p.settle()
	p.unlock()
	p.after(close)
}

package sctp

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/internal/prefetch"
)

// maxStreams is the number of streams each side offers.
const maxStreams = 16

// DefaultPort is WebRTC's SCTP port (a=sctp-port).
const DefaultPort = 5000

// WebRTC payload protocol identifiers (RFC 8831 §8).
const (
	PPIDControl     = 50
	PPIDString      = 51
	PPIDBinary      = 53
	PPIDStringEmpty = 56
	PPIDBinaryEmpty = 57
)

// Bounds on what a peer can make the association hold.
const (
	maxTSNWindow   = 8192  // how far above the cumulative TSN a DATA chunk may be (a multiple of 64)
	maxOutstanding = 16384 // chunks sent and not yet acknowledged or stepped over
	maxGaps        = 64    // gap blocks reported in one SACK
	maxDups        = 16
	maxCtrl        = 16 // answers to the peer's control chunks queued before the next Flush
	cookieLife     = 60 * time.Second
	maxInitRetries = 20 // about a minute of tries at MaxBackoff's default
)

// outFewN is how many outstanding chunks the association holds in its
// own memory: a peer that is sent a message or two a frame and
// acknowledges every other packet seldom has more, and a server that asks
// the CPU for the association's memory before a peer's SACK (Span) then
// has the list the SACK walks too, not a second miss.
const outFewN = 4

// outCalmRuns is how many SACKs in a row must leave no more than outFewN
// chunks outstanding before a list a burst moved out of the association
// moves back into it.
const outCalmRuns = 64

// Config configures an association. Zero fields take the defaults.
type Config struct {
	// Client makes this side send INIT; the other side answers.
	Client bool
	// CookieKey signs the state cookie (the answering side; default: a
	// random key per association).
	CookieKey []byte
	// RecvWindow is the receive window advertised, in bytes (default
	// 256 KiB): the most the peer may have outstanding, and the most held
	// for reassembly.
	RecvWindow uint32
	// MaxMessage is the largest message reassembled (default 64 KiB).
	MaxMessage int
	// MTU is the largest SCTP packet sent (default 1200).
	MTU int
	// SackDelay is how long a SACK may wait for DATA to ride with
	// (default 100 ms, under RFC 9260's 200 ms bound).
	SackDelay time.Duration
	// RTOMin, RTOMax and RTOInitial bound the retransmission timeout
	// (defaults 200 ms, 10 s, 1 s).
	RTOMin, RTOMax, RTOInitial time.Duration
	// MaxBackoff caps how far timeouts back the retransmission timer off
	// (default 3 s, as libwebrtc sets its SCTP), though never under the
	// timeout measured: after an outage, or through heavy loss while the
	// association sets up, the next try is at most this far away.
	MaxBackoff time.Duration
	// MaxRetrans is how many consecutive retransmission timeouts end the
	// association (default 10).
	MaxRetrans int
}

// Message is what the association completed for its user: a message
// received whole on Stream, or, with Reset set, the news that the peer
// reset Stream (a data channel it closed). Messages takes them.
type Message struct {
	Stream uint16
	PPID   uint32
	Data   []byte
	Reset  bool
}

func (c *Config) defaults() {
	if c.RecvWindow == 0 {
		c.RecvWindow = 256 << 10
	}
	if c.MaxMessage <= 0 {
		c.MaxMessage = 64 << 10
	}
	if c.MTU <= 0 {
		c.MTU = 1200
	}
	if c.SackDelay <= 0 {
		c.SackDelay = 100 * time.Millisecond
	}
	if c.RTOMin <= 0 {
		c.RTOMin = 200 * time.Millisecond
	}
	if c.RTOMax <= 0 {
		c.RTOMax = 10 * time.Second
	}
	if c.RTOInitial <= 0 {
		c.RTOInitial = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 3 * time.Second
	}
	if c.MaxRetrans <= 0 {
		c.MaxRetrans = 10
	}
	if len(c.CookieKey) == 0 {
		c.CookieKey = make([]byte, 32)
		rand.Read(c.CookieKey)
	}
}

type state uint8

const (
	stateNew state = iota
	stateCookieWait
	stateCookieEchoed
	stateEstablished
	stateClosed
)

// outChunk is a DATA chunk sent and not yet acknowledged or stepped over.
type outChunk struct {
	tsn       uint32
	stream    uint16
	ssn       uint16
	ppid      uint32
	flags     uint8
	reliable  bool
	acked     bool   // by a gap block
	abandoned bool   // unreliable, given up: FORWARD-TSN steps over it
	skip      uint32 // settled (acked or abandoned): the next chunk in play is at most this far ahead
	rtx       bool   // to retransmit
	sends     uint8
	misses    uint8
	size      int
	sent      time.Duration
	data      []byte // reliable only, in slab
	slab      *slab
}

// pendMsg is a message queued to send.
type pendMsg struct {
	stream uint16
	ppid   uint32
	off    int // unreliable: offset in the arena
	n      int
	data   []byte // reliable: the message, in slab
	slab   *slab
	ssn    uint16
}

// ctrlChunk is a control chunk queued to send, in a packet of its own tag.
type ctrlChunk struct {
	tag   uint32
	chunk []byte
	crc   bool
}

// Assoc is one SCTP association. It is not safe for concurrent use: the
// caller serializes Handle, Flush and the sends.
type Assoc struct {
	cfg   Config
	base  time.Time
	st    state
	err   error
	port  uint16
	pport uint16

	myTag, peerTag uint32
	initTSN        uint32
	peerZero       bool // the peer accepts zero checksums
	peerFwd        bool // the peer takes FORWARD-TSN
	cookie         []byte
	t1             time.Duration
	t1count        int
	abort          bool

	ctrl []ctrlChunk
	b    builder

	// Sending.
	nextTSN    uint32
	cumAck     uint32 // the peer's cumulative TSN ack
	advAck     uint32 // Advanced.Peer.Ack.Point (RFC 3758)
	fwdOwed    bool
	fwdAt      time.Duration // when to resend a FORWARD-TSN not yet taken
	out        []outChunk    // outFew until more are outstanding at once
	outHead    int
	outFew     [outFewN]outChunk
	outCalm    int // SACKs in a row that left outFewN or fewer outstanding, while out is elsewhere (compact)
	nrtx       int // chunks in out marked to resend
	ssnOut     [maxStreams]uint16
	uq         []byte // unreliable messages' bytes, until the next Flush
	um         []pendMsg
	rq         []pendMsg // reliable messages not yet all sent: rq[rqHead:]
	rqHead     int
	rel        arena // the reliable messages' bytes, until acknowledged
	rqBytes    int
	flight     int // reliable bytes outstanding
	outBytes   int // all bytes outstanding
	cwnd       int
	ssthresh   int
	pba        int
	peerRwnd   int
	inRecovery bool
	recoverTSN uint32
	srtt       time.Duration
	rttvar     time.Duration
	rto        time.Duration
	rtoBase    time.Duration // rto without the timeouts' back-off
	t3         time.Duration
	errCount   int

	// Receiving.
	recv     tsnSet
	held     holding
	gapBuf   [maxGaps][2]uint16
	done     []Message // completed since the last Messages
	work     int       // steps taken over held and outstanding chunks, for Work
	nextSSN  [maxStreams]uint16
	sackOwed bool
	sackNow  bool
	owedAt   time.Duration
	pkts     int // packets with DATA since the last SACK
	pktBytes int // and their bytes
	dups     []uint32
	asm      []byte
	stats    Stats
}

// Stats counts an association's traffic.
type Stats struct {
	DataSent, DataRecv uint64 // DATA chunks, first transmissions
	Retransmits        uint64
	Abandoned          uint64 // unreliable chunks given up
	SacksSent, Packets uint64
	Dropped            uint64 // received chunks dropped (window, bounds)
	HeldFull           uint64 // of those, dropped because the reassembly buffer was full
	// Held is the chunks held now for reassembly or order, HeldMax the
	// most held at once.
	Held, HeldMax       int
	SRTT                time.Duration
	Cwnd, PeerRwnd, Out int
}

// New returns an association. A client sends INIT on its first Flush.
func New(cfg Config, now time.Time) *Assoc {
	cfg.defaults()
	a := &Assoc{cfg: cfg, base: now, port: DefaultPort, pport: DefaultPort}
	a.b.mtu = cfg.MTU
	a.out = a.outFew[:0]
	a.rto, a.rtoBase = cfg.RTOInitial, cfg.RTOInitial
	a.cwnd = min(4*cfg.MTU, max(2*cfg.MTU, 4380))
	a.ssthresh = int(cfg.RecvWindow)
	if cfg.Client {
		a.myTag = randNonZero()
		a.initTSN = randNonZero()
		a.st = stateCookieWait
		a.queueInit()
		a.t1 = a.since(now) + a.rto
	}
	return a
}

func (a *Assoc) since(now time.Time) time.Duration { return now.Sub(a.base) }

// answer queues a control chunk that answers the peer's, unless maxCtrl
// answers wait already: a peer that packs its packets with chunks to
// answer gets no more answers than one that does not.
func (a *Assoc) answer(c ctrlChunk) {
	if len(a.ctrl) < maxCtrl {
		a.ctrl = append(a.ctrl, c)
	}
}

// Established reports whether the association is up.
func (a *Assoc) Established() bool { return a.st == stateEstablished }

// Closed reports whether the association is closed, and why (nil after a
// local Close).
func (a *Assoc) Closed() (bool, error) { return a.st == stateClosed, a.err }

// Stats returns the association's counters.
func (a *Assoc) Stats() Stats {
	s := a.stats
	s.SRTT, s.Cwnd, s.PeerRwnd, s.Out = a.srtt, a.cwnd, a.peerRwnd, len(a.out)-a.outHead
	s.Held = a.held.n
	return s
}

// Work returns a count of the steps the association has taken over what
// it holds (chunks held, TSN bitmap words, outstanding chunks visited,
// each map operation): tests bound the work a packet can cause with it,
// whatever the packet.
func (a *Assoc) Work() int { return a.work + a.recv.work + a.held.work }

// Tags returns the association's verification tags, this side's and the
// peer's, and the TSN of the next DATA chunk this side sends: what a test
// needs to speak for this side with packets of its own.
func (a *Assoc) Tags() (mine, peer, nextTSN uint32) { return a.myTag, a.peerTag, a.nextTSN }

// Held returns the chunks held now for reassembly or order.
func (a *Assoc) Held() int { return a.held.n }

// Span returns the association's memory, for a server to ask the CPU for
// before it comes to the peer's datagram (see package prefetch).
func (a *Assoc) Span() prefetch.Span { return prefetch.SpanOf(unsafe.Pointer(a), unsafe.Sizeof(*a)) }

// SendSpans returns the association's memory that queueing a message
// reads and writes (its limits and state; its unreliable queue), for a
// server about to send to many peers to ask the CPU for first: a few
// lines of the association's twenty-one.
func (a *Assoc) SendSpans() [2]prefetch.Span {
	p := unsafe.Pointer(a)
	return [2]prefetch.Span{
		prefetch.SpanOf(p, unsafe.Offsetof(a.st)+unsafe.Sizeof(a.st)),
		prefetch.SpanOf(unsafe.Add(p, unsafe.Offsetof(a.uq)), unsafe.Offsetof(a.um)+unsafe.Sizeof(a.um)-unsafe.Offsetof(a.uq)),
	}
}

// SRTT returns the smoothed round-trip time; 0 before the first sample.
func (a *Assoc) SRTT() time.Duration { return a.srtt }

// BufferedReliable returns the reliable bytes queued or in flight.
func (a *Assoc) BufferedReliable() int { return a.rqBytes + a.flight }

// BufferedUnreliable returns the unreliable bytes queued for the next
// Flush.
func (a *Assoc) BufferedUnreliable() int { return len(a.uq) }

// Pending reports whether Flush has anything to send now.
func (a *Assoc) Pending() bool {
	return len(a.ctrl) > 0 || len(a.um) > 0 || a.abort || a.sackNow || a.fwdOwed ||
		len(a.rq) > a.rqHead && a.flight < a.cwnd
}

func (a *Assoc) close(err error) {
	if a.st == stateClosed {
		return
	}
	a.st, a.err = stateClosed, err
	a.out, a.rq, a.rqHead, a.um, a.uq = nil, nil, 0, nil, nil
	a.rel = arena{}
	a.recv, a.held = tsnSet{cum: a.recv.cum}, holding{}
	a.outHead, a.nrtx, a.rqBytes, a.flight, a.outBytes = 0, 0, 0, 0, 0
}

// Close ends the association: the next Flush sends ABORT.
func (a *Assoc) Close() {
	if a.st == stateClosed {
		return
	}
	if a.peerTag != 0 {
		a.abort = true
	}
	a.close(nil)
}

// SendUnordered queues msg on stream, unordered and never retransmitted.
// It goes out on the next Flush whatever the congestion window says.
func (a *Assoc) SendUnordered(stream uint16, ppid uint32, msg []byte) error {
	if err := a.checkSend(stream, msg); err != nil {
		return err
	}
	a.um = append(a.um, pendMsg{stream: stream, ppid: ppid, off: len(a.uq), n: len(msg)})
	a.uq = append(a.uq, msg...)
	return nil
}

// SendOrdered queues msg on stream, ordered and reliable. The association
// keeps its own copy.
func (a *Assoc) SendOrdered(stream uint16, ppid uint32, msg []byte) error {
	if err := a.checkSend(stream, msg); err != nil {
		return err
	}
	data, sl := a.rel.put(msg)
	a.rq = append(a.rq, pendMsg{stream: stream, ppid: ppid, data: data, slab: sl, ssn: a.ssnOut[stream]})
	a.ssnOut[stream]++
	a.rqBytes += len(msg)
	return nil
}

func (a *Assoc) checkSend(stream uint16, msg []byte) error {
	switch {
	case a.st != stateEstablished:
		return ErrClosed
	case stream >= maxStreams:
		return fmt.Errorf("sctp: stream %d over %d", stream, maxStreams)
	case len(msg) == 0:
		return fmt.Errorf("%w: empty message (send a one-byte payload with an empty PPID)", ErrMalformed)
	case len(msg) > a.cfg.MaxMessage:
		return fmt.Errorf("%w: %d bytes over %d", ErrTooLarge, len(msg), a.cfg.MaxMessage)
	}
	return nil
}

// Messages appends to out the messages completed, and the stream resets
// heard, since the last call, in order, and forgets them. A message's
// Data aliases the packet it came in (for a message in one chunk) or the
// association's reassembly buffer: it is valid until the next call to
// Messages, and as long as the packets handed to Handle are.
func (a *Assoc) Messages(out []Message) []Message {
	out = append(out, a.done...)
	clear(a.done)
	a.done = a.done[:0]
	a.asm = a.asm[:0]
	return out
}

// Handle takes one received SCTP packet. An error of ErrMalformed or
// ErrChecksum means the packet was dropped; ErrProtocol, ErrAborted and
// ErrTimeout mean the association is closed.
func (a *Assoc) Handle(now time.Time, pkt []byte) error {
	if a.st == stateClosed {
		return ErrClosed
	}
	hdr, rest, err := ParseHeader(pkt)
	if err != nil {
		return err
	}
	// The peer may send zero checksums: this side always offers RFC 9653
	// over DTLS, which authenticates every packet already.
	if hdr.Checksum != 0 && checksum(pkt) != hdr.Checksum {
		return ErrChecksum
	}
	if len(rest) == 0 {
		return fmt.Errorf("%w: no chunks", ErrMalformed)
	}
	t := a.since(now)
	first := true
	data, sacked, forwarded := false, false, false
	for len(rest) > 0 {
		c, r, err := NextChunk(rest)
		if err != nil {
			return err
		}
		rest = r
		if first {
			first = false
			switch c.Type {
			case ctInit:
				if hdr.VerificationTag != 0 || len(rest) > 0 {
					return fmt.Errorf("%w: INIT with tag %d or bundled", ErrMalformed, hdr.VerificationTag)
				}
				a.pport, a.port = hdr.SrcPort, hdr.DstPort
				return a.handleInit(c, t)
			case ctCookieEcho:
				if err := a.handleCookieEcho(c, hdr, t); err != nil {
					return err
				}
				continue
			case ctAbort:
				if hdr.VerificationTag == a.myTag || c.Flags&1 != 0 && hdr.VerificationTag == a.peerTag && a.peerTag != 0 {
					a.close(ErrAborted)
					return ErrAborted
				}
				return nil
			}
			if hdr.VerificationTag != a.myTag || a.myTag == 0 {
				return nil // not for this association: dropped silently
			}
		}
		switch c.Type {
		case ctData:
			if a.st != stateEstablished {
				return nil
			}
			if err := a.handleData(c); err != nil {
				return err
			}
			data = true
		case ctSack:
			// One SACK a packet: each costs a pass over what is
			// outstanding, and a second says nothing a sane peer needs.
			if sacked {
				continue
			}
			sacked = true
			if err := a.handleSack(c, t); err != nil {
				return err
			}
		case ctForwardTSN:
			if forwarded { // one a packet too: each costs a pass over what is held
				continue
			}
			forwarded = true
			if err := a.handleForward(c); err != nil {
				return err
			}
		case ctInitAck:
			if err := a.handleInitAck(c, t); err != nil {
				return err
			}
		case ctCookieAck:
			if a.st == stateCookieEchoed {
				a.establish()
			}
		case ctHeartbeat:
			a.answer(ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctHeartbeatAck, 0, c.Value)})
		case ctReconfig:
			a.handleReconfig(c)
		case ctShutdown:
			a.answer(ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctShutdownAck, 0, nil)})
		case ctShutdownAck:
			a.answer(ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctShutdownComplete, 0, nil)})
			a.close(ErrAborted)
			return nil
		case ctShutdownComplete, ctAbort:
			a.close(ErrAborted)
			return ErrAborted
		case ctHeartbeatAck, ctError:
		default:
			if c.Type>>6 < 2 { // the high bits say: stop processing the packet
				return nil
			}
		}
		if a.st == stateClosed {
			return a.err
		}
	}
	if data {
		a.stats.Packets++
		if !a.sackOwed {
			a.sackOwed, a.owedAt = true, t
		}
		a.pkts++
		a.pktBytes += len(pkt)
		if a.pkts >= 2 && a.pktBytes >= a.cfg.MTU && len(a.rq) == a.rqHead && len(a.um) == 0 {
			// Bulk from the peer and nothing of ours to ride on: every
			// second packet is acknowledged at once (RFC 9260 §6.2), as
			// TCP acknowledges every second full-sized segment. A game's
			// small messages (an input, a few a frame) are not bulk: their
			// SACK waits for the next DATA of ours, the frame or the world
			// packet of the next tick, rather than go alone in a datagram
			// of its own (15 to 18% of the relay's datagrams, measured).
			a.sackNow = true
		}
		if a.recv.n > 0 && a.pkts >= 4 {
			a.sackNow = true // a gap that lasts: tell the peer
		}
	}
	return nil
}

// handleReconfig answers a peer's outgoing stream reset (a data channel
// it closed) with success.
func (a *Assoc) handleReconfig(c Chunk) {
	for p := c.Value; len(p) >= 4; {
		typ := binary.BigEndian.Uint16(p)
		n := int(binary.BigEndian.Uint16(p[2:]))
		if n < 4 || n > len(p) {
			return
		}
		if typ == ptOutgoingReset && n >= 16 {
			req := binary.BigEndian.Uint32(p[4:])
			var streams []uint16
			for s := p[16:n]; len(s) >= 2; s = s[2:] {
				streams = append(streams, binary.BigEndian.Uint16(s))
			}
			for _, s := range streams {
				if s < maxStreams {
					a.nextSSN[s] = 0
				}
				if len(a.done) < maxStreams*4 { // a packet's worth of resets is a bounded count
					a.done = append(a.done, Message{Stream: s, Reset: true})
				}
			}
			resp := binary.BigEndian.AppendUint32(nil, req)
			resp = binary.BigEndian.AppendUint32(resp, 1) // success, performed
			a.answer(ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctReconfig, 0, appendParam(nil, ptReconfigResponse, resp))})
		}
		pad := (n + 3) &^ 3
		if pad > len(p) {
			return
		}
		p = p[pad:]
	}
}

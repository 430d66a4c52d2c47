//go:build !js

package lean

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/pion/stun/v4"
	"github.com/tongbu/tongbu/transport/internal/conn"
)

// The lean clients of a process share one endpoint (one flusher and one
// certificate); each has its own socket, or its own address on the shared
// socket, so that the server tells them apart by address.
var (
	clientEPOnce sync.Once
	clientEP     *endpoint
	clientEPErr  error
)

func clientEndpoint(lim conn.Limits) (*endpoint, error) {
	clientEPOnce.Do(func() { clientEP, clientEPErr = newEndpoint(lim, slog.New(slog.DiscardHandler), nil) })
	return clientEP, clientEPErr
}

// A lean client resends its binding request until the server answers:
// first after iceInterval, then after twice the last wait, up to
// iceMaxInterval. Every resend is the same STUN transaction (RFC 8489,
// 6.2.1), so the answer to any of them is taken: a server further than
// one interval away answers a request the client has resent since.
const (
	iceInterval    = 50 * time.Millisecond
	iceMaxInterval = 500 * time.Millisecond
)

// DialConfig is what a lean client takes from transport.Dial.
type DialConfig struct {
	// Limits bound the connection; they have their defaults.
	Limits conn.Limits
	// Logger receives the connection's logs (default: discarded).
	Logger *slog.Logger
	// SharedSocket puts the client on the process's shared socket when
	// its server is at an IPv4 loopback address
	// (transport.ClientConfig.SharedSocket).
	SharedSocket bool
	// Loopback says the signaling URL is a loopback one: the client then
	// prefers the answer's loopback candidate.
	Loopback bool
	// Network is the path to take: "udp", "tcp" (ICE-TCP, when the
	// server offers it), or "" for UDP first, then TCP when UDP has had
	// no answer within TCPAfter (default 1 s).
	Network  string
	TCPAfter time.Duration
	// Post sends the offer to the server's signaling and returns its
	// answer; its error is Dial's, as it is.
	Post func(ctx context.Context, offer string) (string, error)
}

// StartClients makes the endpoint the lean clients of this process share
// (its flusher runs from then on, for the life of the process), as the
// first Dial does.
func StartClients(lim conn.Limits) error {
	_, err := clientEndpoint(lim)
	return err
}

// Dial is transport.Dial over the lean stack: the client's half of the
// same state machines, for load generators that drive thousands of
// peers. It returns once both channels are open, or ctx is done.
func Dial(ctx context.Context, cfg DialConfig) (*Peer, error) {
	lim := cfg.Limits
	ep, err := clientEndpoint(lim)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.SharedSocket {
		// Known before the offer spends the caller's ticket.
		if _, err := sharedClientSocket(ep); err != nil {
			return nil, err
		}
	}
	p := newPeer(ep, nil, 0, true, lim, log)
	offer := localSession{ufrag: p.ufrag, pwd: p.pwd, fingerprint: ep.fp, setup: "actpass", mid: "0", sessionID: randUint63()}
	body, err := cfg.Post(ctx, offer.String())
	if err != nil {
		return nil, err
	}
	rs, err := parseSession(body)
	if err != nil {
		return nil, fmt.Errorf("transport: bad answer: %w", err)
	}
	switch rs.setup {
	case "passive":
		p.dtlsClient = true
	case "active":
	default:
		return nil, fmt.Errorf("transport: bad answer: setup %q, want active or passive", rs.setup)
	}
	var tcpTarget netip.AddrPort
	if len(rs.tcp) > 0 {
		tcpTarget = pickCandidate(rs.tcp, cfg.Loopback)
	}
	switch cfg.Network {
	case "", "udp":
		if len(rs.candidates) == 0 && (cfg.Network == "udp" || len(rs.tcp) == 0) {
			return nil, fmt.Errorf("%w: the answer has no UDP candidate", conn.ErrHandshakeTimeout)
		}
	case "tcp":
		if len(rs.tcp) == 0 {
			return nil, fmt.Errorf("%w: the answer has no TCP candidate (the server serves no ICE-TCP port)", conn.ErrHandshakeTimeout)
		}
	default:
		return nil, fmt.Errorf("transport: network %q: want \"udp\", \"tcp\" or \"\"", cfg.Network)
	}
	p.remote = rs
	target := tcpTarget
	if len(rs.candidates) > 0 {
		target = pickCandidate(rs.candidates, cfg.Loopback)
	}
	network := "udp4"
	if target.Addr().Is6() {
		network = "udp6"
	}
	p.rap = target
	p.raddr = net.UDPAddrFromAddrPort(target)
	done := make(chan struct{})
	if cfg.SharedSocket && target.Addr().Is4() && target.Addr().IsLoopback() {
		sock, err := sharedClientSocket(ep)
		if err != nil {
			return nil, err
		}
		p.sock = sock
		p.onClose = func(*Peer) { close(done) }
		if err := sock.attach(p); err != nil {
			return nil, err
		}
	} else {
		udp, err := net.ListenUDP(network, nil)
		if err != nil {
			return nil, fmt.Errorf("transport: client socket: %w", err)
		}
		sock, err := newSocket(ep, udp, nil)
		if err != nil {
			udp.Close()
			return nil, err
		}
		sock.client = p
		p.sock = sock
		p.onClose = func(*Peer) { udp.Close(); close(done) }
	}
	if !ep.add(p) {
		p.closeWith(conn.ErrClosed)
		return nil, conn.ErrClosed
	}
	var fallback <-chan time.Time
	var tcpErr error
	switch {
	case cfg.Network == "tcp" || len(rs.candidates) == 0:
		if tcpErr = p.goTCP(ctx, tcpTarget); tcpErr != nil {
			p.closeWith(tcpErr)
			return nil, fmt.Errorf("%w: %w", conn.ErrHandshakeTimeout, tcpErr)
		}
	case cfg.Network == "" && tcpTarget.IsValid():
		after := cfg.TCPAfter
		if after <= 0 {
			after = time.Second
		}
		t := time.NewTimer(after)
		defer t.Stop()
		fallback = t.C
		fallthrough
	default:
		p.mu.Lock()
		p.sendCheck(time.Now())
		p.unlock()
	}
	// A timeout says how far the handshake got: with no answer to ICE,
	// the path (or the advertised address) is what is wrong. The
	// endpoint's own handshake timeout may close the peer as the
	// context's ends: both say the same.
	timedOut := func(cause error) error {
		p.mu.Lock()
		answered, at := p.iceAnswered, p.phase
		if at == phaseClosed {
			at = p.reached
		}
		p.unlock()
		var stage string
		switch {
		case !answered && tcpTarget.IsValid():
			stage = fmt.Sprintf("no network path to the server (no answer to ICE checks at %v over UDP nor at %v over TCP", target, tcpTarget)
			if tcpErr != nil {
				stage += ": " + tcpErr.Error()
			}
			stage += "): are its ports reachable from here, and does it advertise the right address?"
		case !answered:
			stage = fmt.Sprintf("no network path to the server (no answer to ICE checks at %v): is its UDP port reachable from here, and does it advertise the right address?", target)
		case at <= phaseDTLS:
			stage = "the server answered ICE, but the DTLS handshake did not finish"
		default:
			stage = "DTLS done, but the SCTP association did not open"
		}
		if errors.Is(cause, conn.ErrHandshakeTimeout) {
			return fmt.Errorf("%w (%s)", cause, stage) // says "handshake timeout" once
		}
		return fmt.Errorf("%w: %s: %w", conn.ErrHandshakeTimeout, stage, cause)
	}
	for {
		select {
		case <-p.open:
			return p, nil
		case <-done:
			if err := p.Err(); errors.Is(err, conn.ErrHandshakeTimeout) {
				return nil, timedOut(err)
			}
			return nil, fmt.Errorf("transport: connection closed during handshake: %w", p.Err())
		case <-ctx.Done():
			err := timedOut(ctx.Err())
			p.closeWith(err)
			return nil, err
		case <-fallback:
			// UDP had no answer: a network that blocks it, perhaps. The
			// checks go on over TCP (a late answer over UDP is ignored).
			fallback = nil
			tcpErr = p.goTCP(ctx, tcpTarget)
		}
	}
}

// goTCP connects to the server's TCP candidate at ap and sends the ICE
// checks there from now on, unless they were answered meanwhile.
func (p *Peer) goTCP(ctx context.Context, ap netip.AddrPort) error {
	t, err := p.dialTCP(ctx, ap)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.unlock()
	if p.phase != phaseICE {
		t.close()
		return nil
	}
	p.rap, p.raddr, p.tcp = ap, net.UDPAddrFromAddrPort(ap), t
	p.iceTries = 0
	p.sendCheck(time.Now())
	return nil
}

// pickCandidate prefers a loopback candidate when loop is set (the
// signaling URL is a loopback one), and an IPv4 one otherwise.
func pickCandidate(cands []netip.AddrPort, loop bool) netip.AddrPort {
	for _, c := range cands {
		if c.Addr().IsLoopback() == loop && c.Addr().Is4() {
			return c
		}
	}
	for _, c := range cands {
		if c.Addr().IsLoopback() == loop {
			return c
		}
	}
	return cands[0]
}

func randUint63() uint64 {
	var b [8]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:]) >> 1
}

// sendCheck sends the client's ICE binding request (controlling, with
// USE-CANDIDATE: the server is ICE lite), the same one each time; p.mu
// is held.
func (p *Peer) sendCheck(now time.Time) {
	if p.phase != phaseICE || now.Sub(p.made) > p.Lim.HandshakeTimeout {
		return
	}
	if p.iceCheck == nil {
		rand.Read(p.iceTx[:])
		var tie [8]byte
		rand.Read(tie[:])
		m, err := stun.Build(stun.NewTransactionIDSetter(p.iceTx), stun.BindingRequest,
			stun.NewUsername(p.remote.ufrag+":"+p.ufrag),
			stun.RawAttribute{Type: stun.AttrICEControlling, Value: tie[:]},
			stun.RawAttribute{Type: stun.AttrPriority, Value: binary.BigEndian.AppendUint32(nil, 1853824767)},
			stun.RawAttribute{Type: stun.AttrUseCandidate},
			stun.NewShortTermIntegrity(p.remote.pwd), stun.Fingerprint)
		if err != nil {
			return
		}
		p.iceCheck = m.Raw
	}
	p.writeNow(p.iceCheck)
	wait := min(iceInterval<<min(p.iceTries, 4), iceMaxInterval)
	p.iceTries++
	p.setDeadline(now.Add(wait).UnixNano())
}

// bindingResponse takes the server's answer to a check: the path works,
// and the DTLS handshake starts.
func (p *Peer) bindingResponse(m *stun.Message, ap netip.AddrPort) {
	p.bindingResponseOn(m, ap, nil)
}

// bindingResponseOn is bindingResponse for one that came over the TCP
// connection tp (nil: over UDP).
func (p *Peer) bindingResponseOn(m *stun.Message, ap netip.AddrPort, tp *tcpPath) {
	p.mu.Lock()
	ok := p.phase == phaseICE && m.TransactionID == p.iceTx && ap == p.rap && tp == p.tcp &&
		stun.NewShortTermIntegrity(p.remote.pwd).Check(m) == nil
	if ok {
		p.iceAnswered = true
		p.rap = netip.AddrPort{} // bind registers the address anew
	}
	p.unlock()
	if ok {
		p.bind(nil, ap, tp) // starts the handshake, unless the peer closed meanwhile
	}
}

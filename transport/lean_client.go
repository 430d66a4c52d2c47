//go:build !js

package transport

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/pion/stun/v4"
)

// The lean clients of a process share one endpoint (one flusher and one
// certificate); each has its own socket, or its own address on the shared
// socket, so that the server tells them apart by address.
var (
	clientEPOnce sync.Once
	clientEP     *leanEndpoint
	clientEPErr  error
)

func leanClientEndpoint(lim Limits) (*leanEndpoint, error) {
	clientEPOnce.Do(func() { clientEP, clientEPErr = newLeanEndpoint(lim, slog.New(slog.DiscardHandler)) })
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

// dialLean is Dial over the lean stack: the client's half of the same
// state machines, for load generators that drive thousands of peers.
func dialLean(ctx context.Context, url string, cfg *ClientConfig, lim Limits, hc *http.Client, maxAnswer int64) (Conn, error) {
	ep, err := leanClientEndpoint(lim)
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
	p := newLeanPeer(ep, nil, 0, true, lim, log)
	offer := localSession{ufrag: p.ufrag, pwd: p.pwd, fingerprint: ep.fp, setup: "actpass", mid: "0", sessionID: randUint63()}
	body, err := postOffer(ctx, hc, url, cfg.Header, offer.String(), maxAnswer)
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
	if len(rs.candidates) == 0 {
		return nil, fmt.Errorf("%w: the answer has no UDP candidate", ErrHandshakeTimeout)
	}
	p.remote = rs
	target := pickCandidate(rs.candidates, url)
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
		p.onClose = func(*leanPeer) { close(done) }
		if err := sock.attach(p); err != nil {
			return nil, err
		}
	} else {
		udp, err := net.ListenUDP(network, nil)
		if err != nil {
			return nil, fmt.Errorf("transport: client socket: %w", err)
		}
		sock := newLeanSocket(ep, udp, false)
		sock.client = p
		p.sock = sock
		p.onClose = func(*leanPeer) { udp.Close(); close(done) }
	}
	if !ep.add(p) {
		p.closeWith(ErrClosed)
		return nil, ErrClosed
	}
	p.mu.Lock()
	p.sendCheck(time.Now())
	p.unlock()
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
		case !answered:
			stage = fmt.Sprintf("no network path to the server (no answer to ICE checks at %v): is its UDP port reachable from here, and does it advertise the right address?", target)
		case at <= phaseDTLS:
			stage = "the server answered ICE, but the DTLS handshake did not finish"
		default:
			stage = "DTLS done, but the SCTP association did not open"
		}
		if errors.Is(cause, ErrHandshakeTimeout) {
			return fmt.Errorf("%w (%s)", cause, stage) // says "handshake timeout" once
		}
		return fmt.Errorf("%w: %s: %w", ErrHandshakeTimeout, stage, cause)
	}
	select {
	case <-p.open:
		return p, nil
	case <-done:
		if err := p.Err(); errors.Is(err, ErrHandshakeTimeout) {
			return nil, timedOut(err)
		}
		return nil, fmt.Errorf("transport: connection closed during handshake: %w", p.Err())
	case <-ctx.Done():
		err := timedOut(ctx.Err())
		p.closeWith(err)
		return nil, err
	}
}

// pickCandidate prefers a loopback candidate when the URL is a loopback
// one, and an IPv4 one otherwise.
func pickCandidate(cands []netip.AddrPort, url string) netip.AddrPort {
	loop := isLoopbackURL(url)
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
func (p *leanPeer) sendCheck(now time.Time) {
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
	p.sock.writeTo(p.iceCheck, p.rap, p.oob)
	wait := min(iceInterval<<min(p.iceTries, 4), iceMaxInterval)
	p.iceTries++
	p.deadline.Store(now.Add(wait).UnixNano())
}

// bindingResponse takes the server's answer to a check: the path works,
// and the DTLS handshake starts.
func (p *leanPeer) bindingResponse(m *stun.Message, ap netip.AddrPort) {
	p.mu.Lock()
	ok := p.phase == phaseICE && m.TransactionID == p.iceTx && ap == p.rap &&
		stun.NewShortTermIntegrity(p.remote.pwd).Check(m) == nil
	if ok {
		p.iceAnswered = true
		p.rap = netip.AddrPort{} // bind registers the address anew
	}
	p.unlock()
	if ok {
		p.bind(ap) // starts the handshake, unless the peer closed meanwhile
	}
}

// leanNative says the lean client runs here (natively; in the browser the
// browser's own stack serves).
const leanNative = true

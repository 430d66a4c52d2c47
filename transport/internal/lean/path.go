//go:build !js

package lean

import (
	"net"
	"net/netip"
	"slices"
	"time"
)

// A peer's path is where its datagrams come from and go to: a UDP
// address, or a TCP connection (ICE-TCP, tcp.go) and its remote address.
// An authenticated ICE check binds the path of a peer still in its
// handshake; after it, a check from a new path makes that path a
// candidate, and a record that authenticates on it moves the peer there.

// bind sets the peer's address from an authenticated ICE check (the
// server's) or its answer (a client's) while the handshake is not done,
// and starts the DTLS handshake when it has not started. It reports
// false, changing nothing, when another live peer is at ap: one peer's
// credentials never take another's address.
//
// s is the socket the check came in on (nil: over TCP, or a client's
// answer): a server's peer still in ICE moves to its shard (adopt).
func (p *Peer) bind(s *socket, ap netip.AddrPort, tp *tcpPath) bool {
	p.mu.Lock()
	if p.phase == phaseICE && tp == nil && s != nil && s != p.sock {
		p.adopt(s)
	}
	if p.phase == phaseClosed || !p.switchPath(s, ap, tp) {
		p.unlock()
		return false
	}
	start := p.phase == phaseICE
	if start {
		p.phase = phaseDTLS
		p.hs = newHSConn(p.sock, p.raddr, p.oob, tp)
	} else if p.hs != nil {
		p.hs.moveTo(ap, tp)
	}
	hs := p.hs
	p.unlock()
	if start {
		go p.handshake(hs)
	}
	return true
}

// adopt moves a server's peer, still in ICE, to the shard of s, the
// socket its first check came in on: the kernel hashes its address to
// that socket, so that shard's reader reads it and its flusher sends for
// it from now on; p.mu is held.
func (p *Peer) adopt(s *socket) {
	p.sock = s
	if old := p.home(); s.ep != old && s.ep.add(p) {
		old.forget(p)
		p.ep.Store(s.ep)
	}
}

// switchPath makes ap (over the TCP connection tp, when set) the peer's
// path, and reports false, changing nothing, when another peer is at ap;
// p.mu is held. A UDP path is on s, the socket ap's datagrams come in on
// (nil: the peer's). A TCP path left behind is closed.
func (p *Peer) switchPath(s *socket, ap netip.AddrPort, tp *tcpPath) bool {
	if s == nil {
		s = p.sock
	}
	if tp == nil {
		if (p.rap != ap || p.tcp != nil || s != p.sock) && !s.rebind(p, p.sock, p.rap, ap) {
			return false
		}
		p.sock = s
	} else if p.tcp == nil && p.rap.IsValid() {
		p.sock.unbind(p, p.rap)
	}
	old := p.tcp
	p.rap, p.raddr, p.tcp = ap, net.UDPAddrFromAddrPort(ap), tp
	if p.candTCP == tp && tp != nil {
		p.candTCP, p.cand = nil, netip.AddrPort{}
	}
	if old != nil && old != tp {
		old.close()
	}
	if tp != nil {
		p.home().stats.tcpPaths.Add(1)
	}
	return true
}

// checked takes the server's authenticated ICE check from ap and
// reports whether to answer it. Before the handshake is done, a check
// says where the peer is (bind). After, a check from a new address makes
// it a candidate path only: the peer moves there when a record that
// authenticates under its keys arrives from it (moveTo), as QUIC
// validates a path (RFC 9000 §9), so a check forged from another's
// address with one's own credentials moves nothing, and another live
// peer's address is never taken nor answered.
func (p *Peer) checked(s *socket, ap netip.AddrPort) bool { return p.checkedOn(s, ap, nil, true) }

// checkedOn is checked for a check that came over the TCP connection tp
// (nil: over UDP, on the socket s). Before the handshake is done, a check over TCP moves
// a peer already bound only when it nominates the path (USE-CANDIDATE,
// set in nominate): a browser checks its TCP pairs even when UDP works,
// and picks UDP, whose checks came first; a client may open a TCP
// connection from each of its addresses, and picks one.
func (p *Peer) checkedOn(s *socket, ap netip.AddrPort, tp *tcpPath, nominate bool) bool {
	p.mu.Lock()
	switch {
	case p.phase == phaseClosed:
		p.unlock()
		return false
	case p.rap == ap && p.tcp == tp:
		p.unlock()
		return true
	case p.phase == phaseICE || p.phase == phaseDTLS && (tp == nil || nominate):
		p.unlock()
		return p.bind(s, ap, tp)
	case tp != nil && p.phase == phaseDTLS:
		// A client checks its TCP pairs side by side and then nominates
		// one (pion's does, a connection from each of its addresses):
		// each is answered and kept open until it is nominated or the
		// handshake ends (dropStrays). As a candidate, one's check would
		// close another, perhaps the one the client then nominates, and
		// its ICE would wait for an answer that never comes.
		known := slices.Contains(p.hsTCP, tp)
		ok := known || len(p.hsTCP) < maxHandshakeTCP
		if ok && !known {
			p.hsTCP = append(p.hsTCP, tp)
		}
		p.unlock()
		return ok
	}
	if sec := time.Now().Unix(); sec != p.candSecond {
		p.candSecond, p.candChecks = sec, 0
	}
	p.candChecks++
	over := p.candChecks > maxCandChecks
	var ok bool
	if tp != nil {
		if ok = !over; ok {
			if p.candTCP == nil && p.cand.IsValid() {
				p.candSock.uncand(p, p.cand) // forget the UDP candidate
				p.candSock = nil
			}
			if p.candTCP != nil && p.candTCP != tp {
				p.candTCP.close()
			}
			p.candTCP = tp
		}
	} else {
		if p.candSock != nil && p.candSock != s && p.candTCP == nil && p.cand.IsValid() {
			p.candSock.uncand(p, p.cand) // the candidate moves to another shard's socket
		}
		ok = s.candidate(p, p.cand, ap, over)
		if ok {
			p.candSock = s
		}
		if ok && p.candTCP != nil {
			p.candTCP.close()
			p.candTCP = nil
		}
	}
	if ok {
		p.cand = ap
	}
	p.unlock()
	return ok
}

// dropStrays closes the TCP connections a client checked during the
// handshake but did not nominate, and forgets them; p.mu is held.
func (p *Peer) dropStrays() {
	for _, t := range p.hsTCP {
		if t != p.tcp && t != p.candTCP {
			t.close()
		}
	}
	p.hsTCP = nil
}

// moveTo moves the peer to ap, its candidate path, which a record that
// authenticated just came from, unless it moved maxMoves times in the
// last minute or another live peer is at ap; p.mu is held.
func (p *Peer) moveTo(now time.Time, ap netip.AddrPort) {
	st := &p.home().stats
	if now.Sub(p.moved[0]) < time.Minute || !p.switchPath(p.candSock, ap, p.candTCP) {
		st.movesRefused.Add(1)
		return
	}
	copy(p.moved[:], p.moved[1:])
	p.moved[maxMoves-1] = now
	p.cand, p.candTCP, p.candSock = netip.AddrPort{}, nil, nil
	st.moves.Add(1)
}

// writeNow sends one datagram on the peer's path now; p.mu is held.
func (p *Peer) writeNow(b []byte) {
	if p.tcp != nil {
		p.tcp.send(b)
		return
	}
	p.sock.writeTo(b, p.rap, p.oob)
}

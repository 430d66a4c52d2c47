//go:build !js

package transport

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
)

// leanServer is the lean stack's side of a Server.
type leanServer struct {
	s      *Server
	ep     *leanEndpoint
	sock   *leanSocket
	cands  []netip.AddrPort
	nextID atomic.Uint64
}

func newLeanServer(s *Server, udp *net.UDPConn) (*leanServer, error) {
	ep, err := newLeanEndpoint(s.lim, s.log)
	if err != nil {
		return nil, err
	}
	bound := udp.LocalAddr().(*net.UDPAddr).AddrPort()
	cands, err := candidates(bound, s.cfg.PublicIPs, s.cfg.IncludeLoopback || bound.Addr().Unmap().IsLoopback())
	if err != nil {
		ep.close()
		ep.wg.Wait()
		return nil, err
	}
	l := &leanServer{s: s, ep: ep, cands: cands}
	l.sock = newLeanSocket(ep, udp, true)
	return l, nil
}

// candidates lists the addresses an answer advertises: exactly the public
// addresses configured, else the bound address, else every interface's
// (loopback ones only when asked, or when bound to loopback).
func candidates(bound netip.AddrPort, public []string, loopback bool) ([]netip.AddrPort, error) {
	port := bound.Port()
	var out []netip.AddrPort
	if len(public) > 0 {
		for _, s := range public {
			ip, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("transport: public address %q: %w", s, err)
			}
			out = append(out, netip.AddrPortFrom(ip.Unmap(), port))
		}
		return out, nil
	}
	if a := bound.Addr().Unmap(); !a.IsUnspecified() {
		return []netip.AddrPort{netip.AddrPortFrom(a, port)}, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("transport: interface addresses: %w", err)
	}
	v4only := bound.Addr().Is4()
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		ip := pfx.Addr().Unmap()
		switch {
		case ip.IsLoopback() && !loopback, ip.IsLinkLocalUnicast(), v4only && ip.Is6():
			continue
		}
		out = append(out, netip.AddrPortFrom(ip, port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("transport: no address to advertise (set PublicIPs)")
	}
	return out, nil
}

// Answer makes a lean peer for an offer; like the pion stack's, it owns
// the request's handshake slot.
func (l *leanServer) Answer(_ context.Context, offer string, meta any, giveSlot func()) (string, int, error) {
	s := l.s
	rs, err := parseSession(offer)
	if err == nil && rs.setup == "passive" {
		err = fmt.Errorf("%w: setup passive (the server is the DTLS server: offer actpass or active)", errSDP)
	}
	if err != nil {
		giveSlot()
		if s.cfg.Refused != nil {
			s.cfg.Refused(http.StatusBadRequest, "bad_offer")
		}
		return "", http.StatusBadRequest, fmt.Errorf("bad offer: %w", err)
	}
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(meta); err != nil {
			giveSlot()
			return "", http.StatusForbidden, fmt.Errorf("not authorized: %w", err)
		}
	}
	p := newLeanPeer(l.ep, l.sock, PeerID(l.nextID.Add(1)), false, s.lim, s.log)
	p.remote = rs
	p.SetMeta(meta)
	release := sync.OnceFunc(giveSlot)
	p.onOpen = func(p *leanPeer) {
		release()
		s.opened(p, func() { p.closeWith(ErrQueueFull) })
	}
	p.onClose = func(*leanPeer) { release() }
	if !l.ep.add(p) {
		release()
		return "", http.StatusServiceUnavailable, ErrClosed
	}
	l.sock.mu.Lock()
	l.sock.byUfrag[p.ufrag] = p
	l.sock.mu.Unlock()
	ans := localSession{ufrag: p.ufrag, pwd: p.pwd, fingerprint: l.ep.fp, setup: "passive", mid: rs.mid,
		lite: true, candidates: l.cands, sessionID: randUint63()}
	if ans.mid == "" {
		ans.mid = "0"
	}
	return ans.String(), 0, nil
}

// UDPAddr returns the address of the socket every peer uses.
func (l *leanServer) UDPAddr() net.Addr { return l.sock.conn.LocalAddr() }

// DataPath returns the endpoint's data path figures.
func (l *leanServer) DataPath() DataPathStats { return l.ep.stats.snapshot() }

// Close closes every peer, then the socket, and waits for the reader and
// the flusher to end.
func (l *leanServer) Close() {
	l.ep.close()
	l.sock.conn.Close()
	l.ep.wg.Wait()
}

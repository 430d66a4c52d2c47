//go:build !js

package lean

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"

	"github.com/tongbu/tongbu/transport/internal/conn"
)

// ServerConfig is what a lean Server takes from the transport.Server it
// serves: the settings of its ServerConfig that the stack uses, and where
// its open connections go.
type ServerConfig struct {
	// Limits bound each connection; they have their defaults.
	Limits conn.Limits
	// Logger receives the connections' logs.
	Logger *slog.Logger
	// PublicIPs and IncludeLoopback choose the candidates an answer
	// advertises, as transport.ServerConfig's do.
	PublicIPs       []string
	IncludeLoopback bool
	// Refused, when set, is told of an offer that does not parse
	// (transport.ServerConfig.Refused).
	Refused func(code int, reason string)
	// Admit, when set, spends the ticket of an offer that parsed
	// (transport.ServerConfig.Admit).
	Admit func(meta any) error
	// TCP, when set, is the listener of ICE-TCP: the answers offer its
	// port beside the UDP one, for players whose network blocks UDP. The
	// server owns it from now on.
	TCP *net.TCPListener
	// Opened is handed each connection whose channels are open; refuse
	// closes it with ErrQueueFull (there is no room for it).
	Opened func(p *Peer, refuse func())
}

// Server is the lean stack's side of a transport.Server: its endpoint
// (the flusher) and the socket's reader, and the answers to offers.
type Server struct {
	cfg    ServerConfig
	ep     *endpoint
	sock   *socket
	cands  []netip.AddrPort
	tcp    *tcpServer
	tcpCan []netip.AddrPort
	nextID atomic.Uint64
}

// NewServer serves peers on udp, which it owns from now on (Close closes
// it; on error the caller still does).
func NewServer(udp *net.UDPConn, cfg ServerConfig) (*Server, error) {
	ep, err := newEndpoint(cfg.Limits, cfg.Logger)
	if err != nil {
		return nil, err
	}
	bound := udp.LocalAddr().(*net.UDPAddr).AddrPort()
	cands, err := candidates(bound, cfg.PublicIPs, cfg.IncludeLoopback || bound.Addr().Unmap().IsLoopback())
	if err != nil {
		ep.close()
		ep.wg.Wait()
		return nil, err
	}
	l := &Server{cfg: cfg, ep: ep, cands: cands}
	if cfg.TCP != nil {
		// The same addresses, at the TCP port (or the listener's own
		// address, when it has one and no public address is set).
		ta := cfg.TCP.Addr().(*net.TCPAddr).AddrPort()
		at := netip.AddrPortFrom(ta.Addr().Unmap(), ta.Port())
		if len(cfg.PublicIPs) > 0 || at.Addr().IsUnspecified() {
			for _, c := range cands {
				l.tcpCan = append(l.tcpCan, netip.AddrPortFrom(c.Addr(), at.Port()))
			}
		} else {
			l.tcpCan = []netip.AddrPort{at}
		}
		l.tcp = &tcpServer{l: l, ln: cfg.TCP}
	}
	if l.sock, err = newSocket(ep, udp, true); err != nil {
		ep.close()
		ep.wg.Wait()
		return nil, err
	}
	if l.tcp != nil {
		ep.wg.Add(1)
		go l.tcp.acceptLoop()
	}
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

// Answer makes a lean peer for an offer and returns the SDP answer, or
// the HTTP status and the error to refuse the offer with. Like the pion
// stack's, it owns the request's handshake slot: giveSlot gives it back,
// once, when the peer opens or closes (or at once, if no peer is made).
func (l *Server) Answer(_ context.Context, offer string, meta any, giveSlot func()) (string, int, error) {
	cfg := &l.cfg
	rs, err := parseSession(offer)
	if err == nil && rs.setup == "passive" {
		err = fmt.Errorf("%w: setup passive (the server is the DTLS server: offer actpass or active)", errSDP)
	}
	if err != nil {
		giveSlot()
		if cfg.Refused != nil {
			cfg.Refused(http.StatusBadRequest, "bad_offer")
		}
		return "", http.StatusBadRequest, fmt.Errorf("bad offer: %w", err)
	}
	if cfg.Admit != nil {
		if err := cfg.Admit(meta); err != nil {
			giveSlot()
			return "", http.StatusForbidden, fmt.Errorf("not authorized: %w", err)
		}
	}
	p := newPeer(l.ep, l.sock, conn.PeerID(l.nextID.Add(1)), false, cfg.Limits, cfg.Logger)
	p.remote = rs
	p.SetMeta(meta)
	release := sync.OnceFunc(giveSlot)
	p.onOpen = func(p *Peer) {
		release()
		cfg.Opened(p, func() { p.closeWith(conn.ErrQueueFull) })
	}
	p.onClose = func(*Peer) { release() }
	if !l.ep.add(p) {
		release()
		return "", http.StatusServiceUnavailable, conn.ErrClosed
	}
	l.sock.mu.Lock()
	l.sock.byUfrag[p.ufrag] = p
	l.sock.mu.Unlock()
	ans := localSession{ufrag: p.ufrag, pwd: p.pwd, fingerprint: l.ep.fp, setup: "passive", mid: rs.mid,
		lite: true, candidates: l.cands, tcp: l.tcpCan, sessionID: randUint63()}
	if ans.mid == "" {
		ans.mid = "0"
	}
	return ans.String(), 0, nil
}

// UDPAddr returns the address of the socket every peer uses.
func (l *Server) UDPAddr() net.Addr { return l.sock.conn.LocalAddr() }

// TCPAddr returns the address of the ICE-TCP listener, or nil.
func (l *Server) TCPAddr() net.Addr {
	if l.tcp == nil {
		return nil
	}
	return l.tcp.ln.Addr()
}

// DataPath returns the endpoint's data path figures.
func (l *Server) DataPath() DataPathStats { return l.ep.stats.snapshot() }

// Close closes every peer, then the socket, and waits for the reader and
// the flusher to end.
func (l *Server) Close() {
	l.ep.close()
	l.sock.conn.Close()
	if l.tcp != nil {
		l.tcp.closeAll()
	}
	l.ep.wg.Wait()
}

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
	// Network, when set, says which client network a TCP connection's
	// address is counted under for the ICE-TCP listener's bounds (its
	// share of the connections waiting for their first check, its connect
	// rate), and false for an address it does not bound
	// (transport.ClientNetworks).
	Network func(netip.Addr) (netip.Prefix, bool)
	// Opened is handed each connection whose channels are open; refuse
	// closes it with ErrQueueFull (there is no room for it).
	Opened func(p *Peer, refuse func())
}

// Server is the lean stack's side of a transport.Server: its shards,
// each a UDP socket with its reader and an endpoint with its flusher,
// all on one address (Listen), and the answers to offers.
type Server struct {
	cfg    ServerConfig
	shards []shard
	ep     *endpoint // shards[0]'s: the ICE-TCP listener's goroutines and figures are its
	sock   *socket   // shards[0]'s: the address
	ufrags *ufragTable
	turn   atomic.Uint32 // the shard the next offer's peer starts on
	cands  []netip.AddrPort
	tcp    *tcpServer
	tcpCan []netip.AddrPort
	nextID atomic.Uint64
}

// shard is one socket of the server and the endpoint whose flusher sends
// for the peers whose datagrams come in on it.
type shard struct {
	ep   *endpoint
	sock *socket
}

// NewServer serves peers on udps, the sockets Listen opened on one
// address, which it owns from now on (Close closes them; on error the
// caller still does). Each socket is a shard with its own reader,
// flusher and peer table; a peer belongs to the shard of the socket the
// kernel hashed its address to, as its first ICE check shows.
func NewServer(udps []*net.UDPConn, cfg ServerConfig) (*Server, error) {
	if len(udps) == 0 {
		return nil, fmt.Errorf("transport: no socket to serve on")
	}
	id, err := newIdentity()
	if err != nil {
		return nil, err
	}
	l := &Server{cfg: cfg, ufrags: &ufragTable{m: map[string]*Peer{}}}
	fail := func(err error) (*Server, error) {
		for _, sh := range l.shards {
			sh.ep.close()
			if sh.sock != nil {
				sh.sock.conn.Close()
			}
			sh.ep.wg.Wait()
		}
		return nil, err
	}
	for range udps {
		ep, err := newEndpoint(cfg.Limits, cfg.Logger, id)
		if err != nil {
			return fail(err)
		}
		l.shards = append(l.shards, shard{ep: ep})
	}
	l.ep = l.shards[0].ep
	bound := udps[0].LocalAddr().(*net.UDPAddr).AddrPort()
	cands, err := candidates(bound, cfg.PublicIPs, cfg.IncludeLoopback || bound.Addr().Unmap().IsLoopback())
	if err != nil {
		return fail(err)
	}
	l.cands = cands
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
		l.tcp = newTCPServer(l, cfg.TCP)
	}
	for i, udp := range udps {
		sock, err := newSocket(l.shards[i].ep, udp, l.ufrags)
		if err != nil {
			l.tcp = nil
			return fail(err)
		}
		l.shards[i].sock = sock
	}
	l.sock = l.shards[0].sock
	if l.tcp != nil {
		l.ep.wg.Add(1)
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
	// The peer starts on a shard in turn, until its first check shows
	// which socket its datagrams come in on (Peer.adopt).
	sh := l.shards[int(l.turn.Add(1))%len(l.shards)]
	p := newPeer(sh.ep, sh.sock, conn.PeerID(l.nextID.Add(1)), false, cfg.Limits, cfg.Logger)
	p.remote = rs
	p.SetMeta(meta)
	release := sync.OnceFunc(giveSlot)
	p.onOpen = func(p *Peer) {
		release()
		cfg.Opened(p, func() { p.closeWith(conn.ErrQueueFull) })
	}
	p.onClose = func(*Peer) { release() }
	if !sh.ep.add(p) {
		release()
		return "", http.StatusServiceUnavailable, conn.ErrClosed
	}
	l.ufrags.put(p.ufrag, p)
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

// Sockets returns how many sockets (shards) the server reads.
func (l *Server) Sockets() int { return len(l.shards) }

// DataPath returns the data path figures, summed over the shards.
func (l *Server) DataPath() DataPathStats {
	st := DataPathStats{Sockets: len(l.shards)}
	for _, sh := range l.shards {
		st.add(sh.ep.stats.snapshot())
	}
	return st
}

// Close closes every peer, then the sockets, and waits for the readers
// and the flushers to end.
func (l *Server) Close() {
	for _, sh := range l.shards {
		sh.ep.close()
	}
	for _, sh := range l.shards {
		sh.sock.conn.Close()
	}
	if l.tcp != nil {
		l.tcp.closeAll()
	}
	for _, sh := range l.shards {
		sh.ep.wg.Wait()
	}
}

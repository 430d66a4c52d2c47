//go:build !js

package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/tongbu/tongbu/transport/internal/probe"
)

// pionServer is the pion stack's side of a Server (ServerConfig.Stack =
// StackPion): a pion PeerConnection per peer, every one on the server's
// UDP socket through pion's ICE UDP mux.
type pionServer struct {
	s      *Server
	api    *webrtc.API
	cert   webrtc.Certificate
	udp    net.PacketConn
	mux    ice.UDPMux
	tcp    net.Listener
	tcpMux ice.TCPMux
	nextID atomic.Uint64

	mu     sync.Mutex
	conns  map[*rtcConn]struct{}
	closed bool
}

// newPionServer serves s's peers on udp with pion, ICE-lite, with one
// DTLS certificate made now.
func newPionServer(s *Server, udp net.PacketConn, tcp *net.TCPListener) (*pionServer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS key: %w", err)
	}
	cert, err := webrtc.GenerateCertificate(key)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS certificate: %w", err)
	}
	p := &pionServer{s: s, cert: *cert, udp: udp, conns: make(map[*rtcConn]struct{})}
	p.mux = webrtc.NewICEUDPMux(nil, &probeConn{PacketConn: udp})
	var se webrtc.SettingEngine
	// A server bound to a loopback address has nothing else to offer.
	loopback := s.cfg.IncludeLoopback || isLoopbackAddr(udp.LocalAddr())
	configureAPI(&se, loopback)
	se.SetLite(true)
	// The answer is the lean stack's where the wire lets it be (SPEC.md
	// §6.3): the server is the DTLS server, and takes 256 KiB messages.
	se.SetAnsweringDTLSRole(webrtc.DTLSRoleServer)
	se.SetSCTPMaxMessageSize(256 << 10)
	if len(s.cfg.PublicIPs) > 0 {
		// Exactly the public addresses: pion maps each interface address
		// of a public address's family to it, and would advertise those of
		// the other family as they are.
		se.SetICEUDPMux(publicMux{UDPMux: p.mux, public: s.cfg.PublicIPs, loopback: loopback})
	} else {
		se.SetICEUDPMux(p.mux)
	}
	types := networkTypes(s.cfg.PublicIPs)
	if tcp != nil {
		p.tcp = tcp
		p.tcpMux = webrtc.NewICETCPMux(nil, tcp, 8)
		se.SetICETCPMux(p.tcpMux)
		for _, t := range types {
			if t == webrtc.NetworkTypeUDP4 {
				types = append(types, webrtc.NetworkTypeTCP4)
			} else {
				types = append(types, webrtc.NetworkTypeTCP6)
			}
		}
	}
	se.SetNetworkTypes(types)
	if len(s.cfg.PublicIPs) > 0 {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: s.cfg.PublicIPs, AsCandidateType: webrtc.ICECandidateTypeHost, Mode: webrtc.ICEAddressRewriteReplace,
		})
		if err != nil {
			return nil, fmt.Errorf("transport: public addresses %v: %w", s.cfg.PublicIPs, err)
		}
	}
	p.api = newAPI(se)
	return p, nil
}

// probeConn is the socket pion's UDP mux reads: it answers the probes of
// clients measuring their path (package probe) before pion sees them,
// within their rate, as the lean stack's socket does.
type probeConn struct {
	net.PacketConn
	lim probe.Limit
	buf [64]byte // the mux reads from one goroutine
}

func (c *probeConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil || n == 0 || p[0] >= 4 && p[0] != probe.PingMagic[0] {
			return n, addr, err
		}
		ua, ok := addr.(*net.UDPAddr)
		if !ok {
			return n, addr, err
		}
		out, isProbe := probe.Answer(c.buf[:0], p[:n], ua.AddrPort())
		if !isProbe {
			return n, addr, err
		}
		if c.lim.Take(time.Now()) {
			c.PacketConn.WriteTo(out, addr)
		}
	}
}

// publicMux is pion's UDP mux with only the listen addresses of the
// families of the public addresses (and loopback ones only when asked
// for), which pion's rewrite then replaces with the public addresses.
type publicMux struct {
	ice.UDPMux
	public   []string
	loopback bool
}

func (m publicMux) GetListenAddresses() []net.Addr {
	var v4, v6 bool
	for _, s := range m.public {
		if a, err := netip.ParseAddr(s); err == nil {
			v4, v6 = v4 || a.Unmap().Is4(), v6 || a.Unmap().Is6()
		}
	}
	var out []net.Addr
	for _, a := range m.UDPMux.GetListenAddresses() {
		ua, ok := a.(*net.UDPAddr)
		if !ok {
			continue
		}
		ip, ok := netip.AddrFromSlice(ua.IP)
		if !ok || ip.Unmap().IsLoopback() && !m.loopback || ip.Unmap().Is4() && !v4 || !ip.Unmap().Is4() && !v6 {
			continue
		}
		out = append(out, a)
	}
	return out
}

// networkTypes returns the families to gather: those of the public
// addresses when there are any (an answer advertises exactly them), both
// otherwise.
func networkTypes(public []string) []webrtc.NetworkType {
	if len(public) == 0 {
		return []webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6}
	}
	var types []webrtc.NetworkType
	for _, ip := range public {
		t := webrtc.NetworkTypeUDP4
		if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().Is6() {
			t = webrtc.NetworkTypeUDP6
		}
		if !slices.Contains(types, t) {
			types = append(types, t)
		}
	}
	return types
}

// UDPAddr returns the address of the socket every peer uses.
func (p *pionServer) UDPAddr() net.Addr { return p.udp.LocalAddr() }

// TCPAddr returns the ICE-TCP listener's address, or nil.
func (p *pionServer) TCPAddr() net.Addr {
	if p.tcp == nil {
		return nil
	}
	return p.tcp.Addr()
}

// DataPath reports zeros: the figures are the lean stack's.
func (p *pionServer) DataPath() DataPathStats {
	return DataPathStats{DatagramBuckets: make([]uint64, len(DatagramBounds)+1)}
}

// Answer makes the peer connection for one offer. It owns the request's
// handshake slot: giveSlot gives it back, once, when the connection opens
// or closes (or at once, if no connection is made).
func (p *pionServer) Answer(ctx context.Context, offer string, meta any, giveSlot func()) (string, int, error) {
	s := p.s
	pc, err := p.api.NewPeerConnection(webrtc.Configuration{Certificates: []webrtc.Certificate{p.cert}})
	if err != nil {
		giveSlot()
		return "", http.StatusInternalServerError, fmt.Errorf("peer connection: %w", err)
	}
	c, err := newRTCConn(PeerID(p.nextID.Add(1)), pc, s.lim, s.log)
	if err != nil {
		giveSlot()
		pc.Close()
		return "", http.StatusInternalServerError, err
	}
	c.SetMeta(meta)
	var handshake atomic.Pointer[time.Timer]
	release := func() {
		giveSlot()
		if t := handshake.Load(); t != nil {
			t.Stop()
		}
	}
	c.onOpen = func(c *rtcConn) {
		release()
		s.opened(c, func() { go c.closeWith(ErrQueueFull) })
	}
	c.onClose = func(c *rtcConn, _ bool) {
		release()
		p.mu.Lock()
		delete(p.conns, c)
		p.mu.Unlock()
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.closeWith(ErrClosed)
		return "", http.StatusServiceUnavailable, ErrClosed
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	handshake.Store(time.AfterFunc(s.lim.HandshakeTimeout, func() {
		if !c.isOpen() {
			c.closeWith(ErrHandshakeTimeout)
		}
	}))
	// A client that never reaches the UDP port gives its slot back sooner.
	iceTimer := time.AfterFunc(s.lim.ICETimeout, func() {
		if st := pc.ICEConnectionState(); st == webrtc.ICEConnectionStateNew || st == webrtc.ICEConnectionStateChecking {
			c.closeWith(fmt.Errorf("%w: no ICE check within %v", ErrHandshakeTimeout, s.lim.ICETimeout))
		}
	})
	go func() {
		select {
		case <-c.open:
		case <-c.Done():
		}
		iceTimer.Stop()
	}()

	fail := func(code int, err error) (string, int, error) {
		c.closeWith(err)
		return "", code, err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		if s.cfg.Refused != nil {
			s.cfg.Refused(http.StatusBadRequest, "bad_offer")
		}
		return fail(http.StatusBadRequest, fmt.Errorf("bad offer: %w", err))
	}
	// The offer parsed: only now is a one-use ticket spent.
	if s.cfg.Admit != nil {
		if err := s.cfg.Admit(meta); err != nil {
			return fail(http.StatusForbidden, fmt.Errorf("not authorized: %w", err))
		}
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return fail(http.StatusBadRequest, fmt.Errorf("cannot answer offer: %w", err))
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return fail(http.StatusInternalServerError, fmt.Errorf("local description: %w", err))
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return fail(http.StatusRequestTimeout, ctx.Err())
	case <-c.Done():
		return "", http.StatusServiceUnavailable, c.Err()
	}
	return pc.LocalDescription().SDP, 0, nil
}

// Close closes every connection, then the mux and the socket.
func (p *pionServer) Close() {
	p.mu.Lock()
	p.closed = true
	conns := make([]*rtcConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.closeWith(ErrClosed)
	}
	p.mux.Close()
	p.udp.Close()
	if p.tcpMux != nil {
		p.tcpMux.Close()
		p.tcp.Close()
	}
}

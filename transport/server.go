//go:build !js

package transport

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"
)

// ServerConfig configures a WebRTC Server. The zero value serves on a
// random UDP port of every interface, with the default Limits.
type ServerConfig struct {
	// UDPAddr is the one UDP address every peer uses (ICE UDP mux), for
	// example ":3478" or "127.0.0.1:0". Default ":0".
	UDPAddr string
	// PublicIPs are the addresses to advertise instead of the interfaces'
	// own, for a server behind a 1:1 NAT.
	PublicIPs []string
	// AllowedOrigins lists the Origin header values the signaling handler
	// accepts ("*" for any). A request without an Origin header (not from a
	// browser) is always accepted. Empty: only requests without Origin.
	AllowedOrigins []string
	// IncludeLoopback offers loopback candidates: for tests and local demos
	// on a machine with no other interface.
	IncludeLoopback bool
	// MaxPending bounds the handshakes in progress (default 64); an offer
	// over it is refused with 429.
	MaxPending int
	// MaxOfferBytes bounds the offer body (default 16 KiB); a larger one is
	// refused with 413.
	MaxOfferBytes int64
	// AcceptQueue is how many open connections may wait for Accept
	// (default 128); beyond it new connections are closed.
	AcceptQueue int
	// Authorize, when set, is called with each signaling request before any
	// resource is taken. An error refuses the request with 403; the value
	// returned is available from the connection's Meta method.
	Authorize func(r *http.Request) (any, error)
	// Limits bound each connection.
	Limits Limits
	// Logger receives the server's logs (default: discarded).
	Logger *slog.Logger
}

// Server accepts WebRTC connections: signaling over HTTP (the server is an
// http.Handler: POST an SDP offer, get the SDP answer), media-free peer
// connections with the two negotiated channels, every peer on one UDP port.
// It runs ICE-lite with one DTLS certificate made at start.
type Server struct {
	cfg     ServerConfig
	lim     Limits
	log     *slog.Logger
	api     *webrtc.API
	cert    webrtc.Certificate
	udp     net.PacketConn
	mux     ice.UDPMux
	accept  chan *rtcConn
	pending atomic.Int32
	nextID  atomic.Uint64

	mu     sync.Mutex
	conns  map[*rtcConn]struct{}
	closed chan struct{}
	once   sync.Once
}

// NewServer listens on the configured UDP address and returns the server.
// Serve its signaling with http.Handle (it is an http.Handler) and take
// connections with Accept.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = ":0"
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 64
	}
	if cfg.MaxOfferBytes <= 0 {
		cfg.MaxOfferBytes = 16 << 10
	}
	if cfg.AcceptQueue <= 0 {
		cfg.AcceptQueue = 128
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS key: %w", err)
	}
	cert, err := webrtc.GenerateCertificate(key)
	if err != nil {
		return nil, fmt.Errorf("transport: DTLS certificate: %w", err)
	}
	udp, err := net.ListenPacket("udp", cfg.UDPAddr)
	if err != nil {
		return nil, fmt.Errorf("transport: listen %s: %w", cfg.UDPAddr, err)
	}
	s := &Server{
		cfg: cfg, lim: cfg.Limits.withDefaults(), log: log, cert: *cert, udp: udp,
		mux:    webrtc.NewICEUDPMux(nil, udp),
		accept: make(chan *rtcConn, cfg.AcceptQueue),
		conns:  make(map[*rtcConn]struct{}),
		closed: make(chan struct{}),
	}
	var se webrtc.SettingEngine
	configureAPI(&se, cfg.IncludeLoopback)
	se.SetLite(true)
	se.SetICEUDPMux(s.mux)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	if len(cfg.PublicIPs) > 0 {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External: cfg.PublicIPs, AsCandidateType: webrtc.ICECandidateTypeHost, Mode: webrtc.ICEAddressRewriteReplace,
		})
		if err != nil {
			udp.Close()
			return nil, fmt.Errorf("transport: public addresses %v: %w", cfg.PublicIPs, err)
		}
	}
	s.api = webrtc.NewAPI(webrtc.WithSettingEngine(se))
	return s, nil
}

// UDPAddr returns the UDP address all peers use.
func (s *Server) UDPAddr() net.Addr { return s.udp.LocalAddr() }

// Pending returns the number of handshakes in progress.
func (s *Server) Pending() int { return int(s.pending.Load()) }

// Accept returns the next connection whose channels are both open.
func (s *Server) Accept(ctx context.Context) (Conn, error) {
	select {
	case c := <-s.accept:
		return c, nil
	case <-s.closed:
		return nil, ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// httpError writes a plain-text error.
func httpError(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// ServeHTTP is the signaling handler: POST application/sdp with the offer;
// the answer comes back as application/sdp once ICE gathering completes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.originAllowed(origin) {
			httpError(w, http.StatusForbidden, "origin not allowed")
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodOptions: // CORS preflight
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		httpError(w, http.StatusMethodNotAllowed, "POST an SDP offer")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/sdp" {
		httpError(w, http.StatusUnsupportedMediaType, "content type must be application/sdp")
		return
	}
	select {
	case <-s.closed:
		httpError(w, http.StatusServiceUnavailable, "server closed")
		return
	default:
	}
	// Take a handshake slot first: a request refused for the server's load
	// must not have spent anything the Authorize hook keeps (a one-use
	// ticket), so that the client can retry it.
	if n := s.pending.Add(1); int(n) > s.cfg.MaxPending {
		s.pending.Add(-1)
		w.Header().Set("Retry-After", "1")
		httpError(w, http.StatusTooManyRequests, "too many handshakes in progress")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxOfferBytes))
	if err != nil {
		s.pending.Add(-1)
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			httpError(w, http.StatusRequestEntityTooLarge, "offer over "+strconv.FormatInt(s.cfg.MaxOfferBytes, 10)+" bytes")
			return
		}
		httpError(w, http.StatusBadRequest, "reading offer: "+err.Error())
		return
	}
	var meta any
	if s.cfg.Authorize != nil {
		m, err := s.cfg.Authorize(r)
		if err != nil {
			s.pending.Add(-1)
			httpError(w, http.StatusForbidden, "not authorized: "+err.Error())
			return
		}
		meta = m
	}
	answer, code, err := s.answer(r.Context(), string(body), meta)
	if err != nil {
		httpError(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, answer)
}

func (s *Server) originAllowed(origin string) bool {
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}

// answer makes the peer connection for one offer. It owns one pending slot,
// which the connection gives back when it opens or closes.
func (s *Server) answer(ctx context.Context, offer string, meta any) (string, int, error) {
	pc, err := s.api.NewPeerConnection(webrtc.Configuration{Certificates: []webrtc.Certificate{s.cert}})
	if err != nil {
		s.pending.Add(-1)
		return "", http.StatusInternalServerError, fmt.Errorf("peer connection: %w", err)
	}
	c, err := newRTCConn(PeerID(s.nextID.Add(1)), pc, s.lim, s.log)
	if err != nil {
		s.pending.Add(-1)
		pc.Close()
		return "", http.StatusInternalServerError, err
	}
	c.meta = meta
	var released atomic.Bool // the pending slot goes back exactly once
	var handshake *time.Timer
	release := func() {
		if released.CompareAndSwap(false, true) {
			s.pending.Add(-1)
			handshake.Stop()
		}
	}
	c.onOpen = func(c *rtcConn) {
		release()
		select {
		case s.accept <- c:
		default:
			s.log.Warn("transport: accept queue full, closing new connection", "peer", c.id)
			go c.closeWith(ErrQueueFull)
		}
	}
	c.onClose = func(c *rtcConn, _ bool) {
		release()
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}
	s.mu.Lock()
	select {
	case <-s.closed:
		s.mu.Unlock()
		c.closeWith(ErrClosed)
		return "", http.StatusServiceUnavailable, ErrClosed
	default:
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	handshake = time.AfterFunc(s.lim.HandshakeTimeout, func() {
		if !c.isOpen() {
			c.closeWith(ErrHandshakeTimeout)
		}
	})

	fail := func(code int, err error) (string, int, error) {
		c.closeWith(err)
		return "", code, err
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return fail(http.StatusBadRequest, fmt.Errorf("bad offer: %w", err))
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
	case <-c.done:
		return "", http.StatusServiceUnavailable, c.Err()
	}
	return pc.LocalDescription().SDP, 0, nil
}

// Close stops accepting, closes every connection and the UDP socket.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		close(s.closed)
		conns := make([]*rtcConn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		s.mu.Unlock()
		for _, c := range conns {
			c.closeWith(ErrClosed)
		}
		s.mux.Close()
		s.udp.Close()
	})
	return nil
}

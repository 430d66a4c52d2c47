//go:build !js

package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
)

// ServerConfig configures a WebRTC Server. The zero value serves on a
// random UDP port of every interface, with the default Limits.
type ServerConfig struct {
	// UDPAddr is the one UDP address every peer uses (ICE UDP mux), for
	// example ":3478" or "127.0.0.1:0". Default ":0".
	UDPAddr string
	// TCPAddr, when set, is the TCP address of ICE over TCP (RFC 6544),
	// for example ":443": players whose network blocks UDP (offices,
	// schools, hotels, some carriers) connect there instead. Answers
	// offer it beside the UDP port, at a lower priority, so a browser
	// takes it only when UDP fails. Over TCP the unreliable channel is
	// reliable in effect: a lost segment holds back what follows it.
	// Default: none.
	TCPAddr string
	// Sockets is how many UDP sockets the lean stack opens on UDPAddr,
	// each with its own reader and flusher and its own peers: the kernel
	// spreads the peers over them by address (SO_REUSEPORT), and a server
	// uses as many cores for its traffic. Default (0): one a core
	// (GOMAXPROCS) on Linux; one elsewhere, and always on the pion
	// stack.
	Sockets int
	// PublicIPs are the addresses to advertise instead of the interfaces'
	// own, for a server behind a 1:1 NAT.
	PublicIPs []string
	// AllowedOrigins lists the Origin header values the signaling handler
	// accepts besides its own ("*" for any). A request without an Origin
	// header (not from a browser) is always accepted, and so is one from a
	// page of the same host (the Origin's host:port is the request's
	// Host). Empty: only those.
	AllowedOrigins []string
	// IncludeLoopback offers loopback candidates: for tests and local demos
	// on a machine with no other interface. A server whose UDPAddr is a
	// loopback address offers them anyway.
	IncludeLoopback bool
	// MaxPending bounds the handshakes in progress (default 64); an offer
	// over it is refused with 429.
	MaxPending int
	// MaxPendingPerAddr bounds the handshakes in progress from one client
	// network (default 8; an IPv4 address or an IPv6 /64, as
	// ClientNetworks counts them), so that one client cannot take every
	// slot; an offer over it is refused with 429. Loopback addresses
	// (local bots, tests) are bounded by MaxPending alone, unless
	// ClientNetworks says otherwise.
	MaxPendingPerAddr int
	// ClientNetworks finds a request's client (behind a trusted reverse
	// proxy, the one it names) and groups addresses into networks.
	ClientNetworks ClientNetworks
	// OfferKey, when set, names the permission an offer uses (a ticket's
	// nonce), from what Authorize returned: at most MaxPendingPerKey
	// handshakes with one key are in progress at once, so that one valid
	// ticket cannot hold every slot with slow offers; more are refused
	// with 429.
	OfferKey func(meta any) string
	// MaxPendingPerKey bounds the handshakes in progress with one
	// OfferKey (default 2: a client's offer and its retry).
	MaxPendingPerKey int
	// MaxOfferBytes bounds the offer body (default 16 KiB); a larger one is
	// refused with 413.
	MaxOfferBytes int64
	// OfferTimeout bounds the time to read the offer body (default 5 s): a
	// client that sends it slower is answered 408 and its slot freed. The
	// http.Server's own ReadHeaderTimeout bounds the headers.
	OfferTimeout time.Duration
	// AcceptQueue is how many open connections may wait for Accept
	// (default 128); beyond it new connections are closed.
	AcceptQueue int
	// Authorize, when set, checks each signaling request before any
	// resource is taken and before its body is read: a request without
	// a good ticket costs the server nothing. It must not consume what can
	// be used only once (Admit does). An error refuses the request with
	// 403; the value returned is available from the connection's Meta
	// method.
	Authorize func(r *http.Request) (any, error)
	// Admit, when set, is called once the offer has parsed, with what
	// Authorize returned, to consume what can be used only once (a one-use
	// ticket): a garbage offer does not spend it. An error refuses the
	// offer with 403. Of concurrent offers with the same ticket, Admit
	// must let one through.
	Admit func(meta any) error
	// Refused, when set, is told of each signaling request the server
	// refuses (not those Authorize or Admit refuse, which know already),
	// with the HTTP status and a short reason for metrics: "busy",
	// "busy_addr", "busy_ticket", "slow_offer", "offer_too_large", "bad_offer",
	// "closing", "origin", "content_type", "method". Keep it cheap: it
	// runs on the request's goroutine.
	Refused func(code int, reason string)
	// Limits bound each connection.
	Limits Limits
	// Logger receives the server's logs (default: discarded).
	Logger *slog.Logger
	// Stack chooses the implementation (default StackLean).
	Stack Stack
}

// Server accepts WebRTC connections: signaling over HTTP (the server is an
// http.Handler: POST an SDP offer, get the SDP answer), media-free peer
// connections with the two negotiated channels, every peer on one UDP port.
// It runs ICE-lite with one DTLS certificate made at start.
type Server struct {
	cfg     ServerConfig
	lim     Limits
	log     *slog.Logger
	stack   serverStack
	accept  chan Conn
	pending atomic.Int32

	mu      sync.Mutex
	byAddr  map[netip.Prefix]int // handshakes in progress by client network
	byKey   map[string]int       // handshakes in progress by OfferKey
	closed  chan struct{}
	once    sync.Once
	proxied sync.Once // the warning that a proxy's requests are all counted as one
}

// serverStack is a Server's WebRTC implementation (ServerConfig.Stack)
// under the signaling the Server does itself: the lean stack's
// (leanStack, over transport/internal/lean) or pion's (pionServer). Each
// serves every peer on the one UDP socket the Server opened for it, and
// hands each connection whose channels are open to Server.opened.
type serverStack interface {
	// Answer makes the peer connection for one offer (whose request
	// Authorize let through with meta) and returns the SDP answer, or the
	// HTTP status and the error to refuse it with. It tells Refused of an
	// offer that does not parse, and spends the ticket (Admit) only for
	// one that does. It owns the request's handshake slot: giveSlot gives
	// it back, once, when the connection opens or closes (or at once, if
	// no connection is made).
	Answer(ctx context.Context, offer string, meta any, giveSlot func()) (answer string, status int, err error)
	// UDPAddr returns the address of the socket every peer uses.
	UDPAddr() net.Addr
	// TCPAddr returns the ICE-TCP listener's address, or nil.
	TCPAddr() net.Addr
	// DataPath returns the data path figures since the stack started.
	DataPath() DataPathStats
	// Close closes every connection with ErrClosed, then the socket.
	Close()
}

// NewServer listens on the configured UDP address and returns the server.
// Serve its signaling with http.Handle (it is an http.Handler) and take
// connections with Accept.
func NewServer(cfg ServerConfig) (*Server, error) {
	s, err := newServer(cfg)
	return s, errstack.With(err)
}

func newServer(cfg ServerConfig) (*Server, error) {
	if cfg.UDPAddr == "" {
		cfg.UDPAddr = ":0"
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = 64
	}
	if cfg.MaxPendingPerAddr <= 0 {
		cfg.MaxPendingPerAddr = 8
	}
	if cfg.MaxPendingPerKey <= 0 {
		cfg.MaxPendingPerKey = 2
	}
	if cfg.MaxOfferBytes <= 0 {
		cfg.MaxOfferBytes = 16 << 10
	}
	if cfg.OfferTimeout <= 0 {
		cfg.OfferTimeout = 5 * time.Second
	}
	if cfg.AcceptQueue <= 0 {
		cfg.AcceptQueue = 128
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var udps []*net.UDPConn
	if cfg.Stack == StackLean {
		var err error
		if udps, err = listenLean(cfg.UDPAddr, cfg.Sockets); err != nil {
			return nil, err
		}
	} else {
		udp, err := net.ListenPacket("udp", cfg.UDPAddr)
		if err != nil {
			return nil, fmt.Errorf("transport: listen %s: %w", cfg.UDPAddr, err)
		}
		udps = []*net.UDPConn{udp.(*net.UDPConn)}
	}
	closeUDP := func() {
		for _, c := range udps {
			c.Close()
		}
	}
	var tcp *net.TCPListener
	if cfg.TCPAddr != "" {
		ln, err := net.Listen("tcp", cfg.TCPAddr)
		if err != nil {
			closeUDP()
			return nil, fmt.Errorf("transport: listen TCP %s: %w", cfg.TCPAddr, err)
		}
		tcp = ln.(*net.TCPListener)
	}
	var err error
	s := &Server{
		cfg: cfg, lim: cfg.Limits.WithDefaults(), log: log,
		accept: make(chan Conn, cfg.AcceptQueue),
		byAddr: make(map[netip.Prefix]int),
		byKey:  make(map[string]int),
		closed: make(chan struct{}),
	}
	if cfg.Stack == StackLean {
		s.stack, err = newLeanServer(s, udps, tcp)
	} else {
		s.stack, err = newPionServer(s, udps[0], tcp)
	}
	if err != nil {
		closeUDP()
		if tcp != nil {
			tcp.Close()
		}
		return nil, err
	}
	return s, nil
}

// UDPAddr returns the UDP address all peers use.
func (s *Server) UDPAddr() net.Addr { return s.stack.UDPAddr() }

// TCPAddr returns the address of ICE over TCP, or nil when the server
// serves none (ServerConfig.TCPAddr).
func (s *Server) TCPAddr() net.Addr { return s.stack.TCPAddr() }

// DataPath returns the lean stack's data path figures since the server
// started (zeros on the pion stack).
func (s *Server) DataPath() DataPathStats { return s.stack.DataPath() }

// Pending returns the number of handshakes in progress.
func (s *Server) Pending() int { return int(s.pending.Load()) }

// Accept returns the next connection whose channels are both open.
func (s *Server) Accept(ctx context.Context) (Conn, error) {
	select {
	case c := <-s.accept:
		return c, nil
	case <-s.closed:
		return nil, errstack.With(ErrClosed)
	case <-ctx.Done():
		return nil, errstack.With(ctx.Err())
	}
}

// opened hands a connection whose channels are open to Accept, or closes
// it (with refuse) when the accept queue is full.
func (s *Server) opened(c Conn, refuse func()) {
	select {
	case s.accept <- c:
	default:
		s.log.Warn("transport: accept queue full, closing new connection", "peer", c.ID())
		refuse()
	}
}

// httpError writes a plain-text error. A request refused before its
// body is read ends its connection at once: net/http would otherwise wait
// for up to 256 KiB of the unread body (until the server's ReadTimeout,
// for a client that never sends it) before closing.
func httpError(w http.ResponseWriter, code int, reason, msg string) {
	if w.Header().Get("Connection") == "close" {
		http.NewResponseController(w).SetReadDeadline(time.Now())
	}
	w.Header().Set(RefusalHeader, reason)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	io.WriteString(w, msg+"\n")
}

// ServeHTTP is the signaling handler: POST application/sdp with the offer;
// the answer comes back as application/sdp once ICE gathering completes.
//
// A request is checked before it costs anything: the origin, the method,
// the content type and Authorize (the ticket) come first, then it takes a
// handshake slot (one of MaxPending, and of MaxPendingPerAddr for its
// address), then its body is read under OfferTimeout and MaxOfferBytes,
// and only an offer that parses is handed to Admit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		// One request is all signaling takes: the connection ends with
		// the answer or the refusal, whatever refuses it, rather than sit
		// idle for the HTTP server's keep-alive or wait for a body.
		w.Header().Set("Connection", "close")
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !s.originAllowed(origin, r.Host) {
			s.refuse(w, http.StatusForbidden, "origin", fmt.Sprintf("origin %q not allowed: pages this server serves need nothing; "+
				"list other origins in ServerConfig.AllowedOrigins (engine.Config.AllowedOrigins; `tongbu serve`: \"origins\" in its config)", origin))
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", RefusalHeader)
		w.Header().Set("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodOptions: // CORS preflight
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		// Tongbu-Wire: the engine's wire version announcement (SPEC.md §9.4).
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type, Authorization, Tongbu-Wire, Tongbu-Build")
		w.WriteHeader(http.StatusNoContent)
		return
	case http.MethodPost: // Connection: close set above
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		s.refuse(w, http.StatusMethodNotAllowed, "method", "POST an SDP offer")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/sdp" {
		s.refuse(w, http.StatusUnsupportedMediaType, "content_type", "content type must be application/sdp")
		return
	}
	select {
	case <-s.closed:
		s.refuse(w, http.StatusServiceUnavailable, "closing", "server closed")
		return
	default:
	}
	var meta any
	if s.cfg.Authorize != nil {
		m, err := s.cfg.Authorize(r)
		if err != nil {
			code, reason := refusalOf(err, http.StatusForbidden)
			refusalHeader(w, err)
			httpError(w, code, reason, refusalText(code)+err.Error())
			return
		}
		meta = m
	}
	// A request refused for the server's load has spent nothing (Admit
	// has not run), so the client can retry it.
	sl := s.slotOf(r, meta)
	if reason := s.takeSlot(sl); reason != "" {
		w.Header().Set("Retry-After", "1")
		s.refuse(w, http.StatusTooManyRequests, reason, "too many handshakes in progress")
		return
	}
	release := sync.OnceFunc(func() { s.giveSlot(sl) })
	body, code, reason, err := s.readOffer(w, r)
	if err != nil {
		release()
		s.refuse(w, code, reason, err.Error())
		return
	}
	answer, code, err := s.stack.Answer(r.Context(), string(body), meta, release)
	if err != nil {
		code, reason := refusalOf(err, code)
		httpError(w, code, reason, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, answer)
}

// readOffer reads the offer body under OfferTimeout and MaxOfferBytes. On
// failure it returns the HTTP status and the reason to refuse with.
func (s *Server) readOffer(w http.ResponseWriter, r *http.Request) ([]byte, int, string, error) {
	// The deadline covers the body only; a writer that cannot set one (not
	// a net/http server's) still gets the size cap.
	rc := http.NewResponseController(w)
	deadline := rc.SetReadDeadline(time.Now().Add(s.cfg.OfferTimeout)) == nil
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.cfg.MaxOfferBytes))
	if err == nil {
		if deadline {
			rc.SetReadDeadline(time.Time{})
		}
		return body, 0, "", nil
	}
	// The rest of the body stays unread: the connection ends with the
	// answer, rather than wait for it.
	w.Header().Set("Connection", "close")
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, http.StatusRequestEntityTooLarge, "offer_too_large", fmt.Errorf("offer over %d bytes", s.cfg.MaxOfferBytes)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		return nil, http.StatusRequestTimeout, "slow_offer", fmt.Errorf("offer not read within %v", s.cfg.OfferTimeout)
	}
	return nil, http.StatusBadRequest, "bad_offer", fmt.Errorf("reading offer: %w", err)
}

// slot is what a handshake in progress is counted against: the client's
// network, and the permission (OfferKey) it uses.
type slot struct {
	net     netip.Prefix
	bounded bool // by its network
	key     string
}

// slotOf finds the client and the permission of a request.
func (s *Server) slotOf(r *http.Request, meta any) slot {
	var sl slot
	sl.net, sl.bounded = s.cfg.ClientNetworks.requestKey(r)
	if !sl.bounded && len(s.cfg.ClientNetworks.TrustedProxies) == 0 && r.Header.Get("X-Forwarded-For")+r.Header.Get("Forwarded") != "" {
		s.proxied.Do(func() {
			s.log.Warn("transport: signaling requests come through a proxy that is not trusted: every client behind it is counted as the proxy; "+
				"list it in ClientNetworks.TrustedProxies (tongbu serve: \"trusted_proxies\")", "proxy", r.RemoteAddr)
		})
	}
	if s.cfg.OfferKey != nil {
		sl.key = s.cfg.OfferKey(meta)
	}
	return sl
}

// takeSlot takes a handshake slot, or returns why it cannot ("busy": the
// server's, "busy_addr": the client network's, "busy_ticket": the
// permission's).
func (s *Server) takeSlot(sl slot) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case int(s.pending.Load()) >= s.cfg.MaxPending:
		return "busy"
	case sl.bounded && s.byAddr[sl.net] >= s.cfg.MaxPendingPerAddr:
		return "busy_addr"
	case sl.key != "" && s.byKey[sl.key] >= s.cfg.MaxPendingPerKey:
		return "busy_ticket"
	}
	s.pending.Add(1)
	if sl.bounded {
		s.byAddr[sl.net]++
	}
	if sl.key != "" {
		s.byKey[sl.key]++
	}
	return ""
}

// giveSlot returns a slot taken.
func (s *Server) giveSlot(sl slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending.Add(-1)
	if sl.bounded {
		if s.byAddr[sl.net]--; s.byAddr[sl.net] <= 0 {
			delete(s.byAddr, sl.net)
		}
	}
	if sl.key != "" {
		if s.byKey[sl.key]--; s.byKey[sl.key] <= 0 {
			delete(s.byKey, sl.key)
		}
	}
}

// refuse answers a request with code and tells the Refused hook.
func (s *Server) refuse(w http.ResponseWriter, code int, reason, msg string) {
	if s.cfg.Refused != nil {
		s.cfg.Refused(code, reason)
	}
	httpError(w, code, reason, msg)
}

// refusalHeader adds a Refusal's own headers to the response, exposed
// to a page of another origin beside RefusalHeader.
func refusalHeader(w http.ResponseWriter, err error) {
	var rf *Refusal
	if !errors.As(err, &rf) || len(rf.Header) == 0 {
		return
	}
	expose := []string{RefusalHeader}
	for k, vs := range rf.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
		expose = append(expose, k)
	}
	if w.Header().Get("Access-Control-Allow-Origin") != "" {
		w.Header().Set("Access-Control-Expose-Headers", strings.Join(expose, ", "))
	}
}

// refusalText starts the body of a refusal by Authorize with what kind
// of refusal it is, by its status: a ticket that does not admit
// (403), a client of a wire version or build the server does not speak
// (426, 409), or another (a target not found, a full server).
func refusalText(code int) string {
	switch code {
	case http.StatusForbidden:
		return "not authorized: "
	case http.StatusUpgradeRequired:
		return "wire version refused: "
	case http.StatusConflict:
		return "build refused: "
	}
	return "refused: "
}

// refusalOf is the status and reason to refuse with for err, an error
// of a hook or of the stack's answer that came with status code.
func refusalOf(err error, code int) (int, string) {
	var rf *Refusal
	switch {
	case errors.As(err, &rf):
		return rf.Status, rf.Reason
	case code == http.StatusForbidden:
		return code, "forbidden"
	case code == http.StatusBadRequest:
		return code, "bad_offer"
	case code == http.StatusServiceUnavailable:
		return code, "closing"
	}
	return code, "internal"
}

// originAllowed reports whether a browser page of origin may connect: a
// page the same host served (its origin's host is the request's Host, as
// when the server serves the game's own pages), or one AllowedOrigins
// lists.
func (s *Server) originAllowed(origin, host string) bool {
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, host) {
		return true
	}
	for _, o := range s.cfg.AllowedOrigins {
		if o == "*" || o == origin {
			return true
		}
	}
	return false
}

// Close stops accepting, closes every connection and the UDP socket.
func (s *Server) Close() error {
	s.once.Do(func() {
		close(s.closed)
		s.stack.Close()
	})
	return nil
}

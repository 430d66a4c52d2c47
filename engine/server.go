//go:build !js

package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
)

// Config configures a Server. Only Secret is required.
type Config struct {
	// Secret signs and checks tickets (HMAC-SHA256); at least 16 bytes,
	// shared with the game server that issues tickets.
	Secret []byte
	// UDPAddr is the one UDP address every WebRTC peer uses, for example
	// ":3478". Default ":0" (a random port; see UDPAddr).
	UDPAddr string
	// TCPAddr, when set, also serves WebRTC over TCP (ICE-TCP), for
	// example ":443": players whose network blocks UDP (many offices,
	// schools, hotels) connect there, at the cost of TCP's head-of-line
	// blocking. Default: none.
	TCPAddr string
	// Sockets is how many UDP sockets serve UDPAddr, each read and written
	// by goroutines of its own, so that the server's traffic uses its
	// cores: the kernel spreads the players over them (SO_REUSEPORT).
	// Default (0): one a core (GOMAXPROCS) on Linux, one elsewhere.
	Sockets int
	// PublicIPs are advertised to clients instead of the interfaces' own
	// addresses, for a server behind a 1:1 NAT.
	PublicIPs []string
	// IncludeLoopback offers loopback candidates, for tests and local
	// demos on a machine with no other interface. A server whose UDPAddr
	// is a loopback address (such as "127.0.0.1:3478") offers them anyway.
	IncludeLoopback bool
	// AllowedOrigins lists the browser origins allowed to connect besides
	// the server's own ("*" for any): pages the server serves itself
	// (Assets) connect without being listed, as do native clients, which
	// send no Origin.
	AllowedOrigins []string
	// NoWebRTC serves only connections handed to Attach (in-process bots
	// over memnet.Network, tests): no UDP port is opened and ConnectPath
	// is not served.
	NoWebRTC bool
	// MaxConns bounds the connections open at once (default 10,000).
	MaxConns int
	// ClientNetworks finds a signaling request's client (behind a trusted
	// reverse proxy, the one it names) and says which addresses count as
	// one client (an IPv4 address, an IPv6 /64) for the per-client bound
	// on handshakes in progress. Serve the HTTP side on a
	// transport.NewListener with the same value.
	ClientNetworks transport.ClientNetworks
	// MaxRooms bounds the rooms and worlds at once (default 10,000).
	MaxRooms int
	// MaxTicketTTL refuses tickets that expire further away than this, so
	// that the memory of used tickets stays bounded (default 1 hour).
	MaxTicketTTL time.Duration
	// Workers is the number of goroutines that tick rooms and worlds
	// (default GOMAXPROCS).
	Workers int
	// Limits bound each connection.
	Limits transport.Limits
	// Stack chooses the WebRTC implementation (default
	// transport.StackLean: one socket, no goroutine per peer;
	// transport.StackPion is the reference and fallback).
	Stack transport.Stack
	// Assets, when set, is served for every path the engine does not
	// handle itself (a game's pages and WASM files).
	Assets http.Handler
	// Logger receives the server's logs (default: discarded).
	Logger *slog.Logger
	// MetricsToken, when set, is the bearer token MetricsPath asks for
	// (Authorization: Bearer <token>); a request without it gets 401.
	// Without a token, serve the metrics where players cannot reach them
	// (SeparateMetrics).
	MetricsToken string
	// SeparateMetrics leaves MetricsPath out of Handler: serve
	// MetricsHandler on an address of its own (a private interface, say).
	SeparateMetrics bool
	// PeerMetrics adds the per-player quality gauges (RTT, loss, jitter,
	// stalls), labelled with room names and peer ids, to the metrics. Off
	// by default: they name every room and grow with the players.
	PeerMetrics bool
	// RoomIdleTimeout closes a lockstep room that has had no player or
	// spectator connected for this long (0: rooms last until closed): a
	// room keeps its match's frames in memory, so a room nobody plays in
	// should not stay. Room.OnClose tells the game server.
	RoomIdleTimeout time.Duration
	// ResumeWindow is how long a player whose connection was lost (its
	// path went silent or broke: a network change, a tunnel) may come
	// back to its place without a new ticket: Dial's clients resume by
	// themselves with the credential the server gives them, and a world
	// keeps the player's entity, unobserved, for this long (a lockstep
	// room keeps the slot for the match anyway). A client that closed its
	// connection itself is not waited for. Default 30 s; negative: no
	// resuming.
	ResumeWindow time.Duration
	// MaxSession bounds a player's session: no resume credential is
	// given, and none admits, past this long after the ticket the
	// session began with (Ticket.Session) was issued; the player's
	// connection plays on, and after a loss it needs a new ticket from
	// the game server. Default 12 hours.
	MaxSession time.Duration
	// TicketInQuery also takes the ticket from a "ticket" query parameter,
	// for clients that cannot set the Authorization header. Off by
	// default: proxies and access logs keep URLs, and the tickets in them.
	TicketInQuery bool
	// Builds lists the game builds this server serves (version strings
	// such as "1.4.2", each 1 to 64 bytes of printable ASCII with no
	// space or comma): a client that runs another build
	// (ClientConfig.Build), or names none, is refused at signaling with
	// ErrBuild, before its ticket is looked at. Empty: any build.
	Builds []string
}

// Server hosts lockstep rooms and interest worlds behind one HTTP handler
// and one UDP port. Clients connect over WebRTC (Dial) or, in the same
// process, over any transport.Conn (Attach); the ticket each presents
// routes it to its room or world.
type Server struct {
	cfg   Config
	log   *slog.Logger
	rtc   *transport.Server
	sched *sched.Scheduler
	used  usedTickets
	// refusalLog bounds the log lines about refused connections.
	refusalLog refusalLog
	mux        *http.ServeMux
	metrics    *metrics
	made       atomic.Uint64 // rooms created, for their phases
	resumes    resumeQueue   // the connections' credential refreshes
	creds      credentials   // which resume credentials admit, and who was kicked

	extraMu sync.Mutex
	extra   []func(w io.Writer) // AddMetrics

	mu       sync.Mutex
	rooms    map[string]*Room
	worlds   map[string]*World
	peers    map[*peer]struct{}
	closing  bool
	draining bool // Drain: no new rooms
	shutdown chan struct{}
	served   chan struct{}
}

// NewServer starts a server's UDP port and workers. Serve it with Handler
// on an HTTP server and call Serve to accept connections.
func NewServer(cfg Config) (*Server, error) {
	if len(cfg.Secret) < minSecretLen {
		return nil, errstack.Wrapf(ErrConfig, "Config.Secret must be at least %d bytes", minSecretLen)
	}
	for _, b := range cfg.Builds {
		if !ValidBuild(b) {
			return nil, errstack.Wrapf(ErrConfig, "Config.Builds: build %q: want 1 to %d bytes of printable ASCII, no space or comma", b, maxBuildLen)
		}
	}
	cfg.Builds = slices.Clone(cfg.Builds)
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 10000
	}
	if cfg.MaxRooms <= 0 {
		cfg.MaxRooms = 10000
	}
	if cfg.MaxTicketTTL <= 0 {
		cfg.MaxTicketTTL = time.Hour
	}
	if cfg.ResumeWindow == 0 {
		cfg.ResumeWindow = 30 * time.Second
	}
	if cfg.MaxSession <= 0 {
		cfg.MaxSession = 12 * time.Hour
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger, rooms: map[string]*Room{}, worlds: map[string]*World{},
		peers: map[*peer]struct{}{}, shutdown: make(chan struct{}), served: make(chan struct{}),
		metrics: newMetrics(),
	}
	s.creds.ticketTTL = cfg.MaxTicketTTL
	s.mux = http.NewServeMux()
	if !cfg.NoWebRTC {
		rtc, err := transport.NewServer(transport.ServerConfig{
			UDPAddr: cfg.UDPAddr, TCPAddr: cfg.TCPAddr, Sockets: cfg.Sockets, PublicIPs: cfg.PublicIPs, AllowedOrigins: cfg.AllowedOrigins,
			IncludeLoopback: cfg.IncludeLoopback, Limits: cfg.Limits, Stack: cfg.Stack,
			Authorize: s.authorize, Admit: s.admitOffer, Refused: s.signalingRefused,
			Logger: cfg.Logger, AcceptQueue: 1024, MaxPending: 256,
			ClientNetworks: cfg.ClientNetworks, OfferKey: offerKey,
		})
		if err != nil {
			return nil, errstack.With(err)
		}
		s.rtc = rtc
		s.mux.Handle(ConnectPath, rtc)
	}
	s.sched = sched.NewScheduler(cfg.Workers)
	s.mux.HandleFunc(HealthPath, s.health)
	s.mux.HandleFunc(PingPath, s.ping)
	s.mux.HandleFunc(NetTestPath, netTest)
	s.mux.HandleFunc(NetTestScript, netTest)
	if !cfg.SeparateMetrics {
		s.mux.Handle(MetricsPath, s.MetricsHandler())
	}
	if cfg.Assets != nil {
		s.mux.Handle("/", cfg.Assets)
	}
	return s, nil
}

// MetricsHandler returns the handler of the server's metrics, in the
// Prometheus text format, behind Config.MetricsToken when one is set.
// Handler serves it at MetricsPath unless Config.SeparateMetrics.
func (s *Server) MetricsHandler() http.Handler { return http.HandlerFunc(s.serveMetrics) }

// AddMetrics has f write more metrics, in the Prometheus text format,
// after the server's own at MetricsPath: what the process runs beside
// the engine (tongbu serve adds its cluster node's counters). f must
// not block.
func (s *Server) AddMetrics(f func(w io.Writer)) {
	s.extraMu.Lock()
	s.extra = append(s.extra, f)
	s.extraMu.Unlock()
}

// Limits returns the limits of the server's connections, defaults
// applied: what its clients' ClientConfig.Limits must match.
func (s *Server) Limits() transport.Limits { return s.cfg.Limits.WithDefaults() }

// Handler returns the server's HTTP handler: ConnectPath, HealthPath,
// MetricsPath (unless Config.SeparateMetrics) and, when configured, the
// assets. Serve it with the timeouts
// of HTTPServer, on a transport.LimitListener, when it faces the internet.
func (s *Server) Handler() http.Handler { return s.mux }

// UDPAddr returns the address of the server's UDP port, nil with NoWebRTC.
func (s *Server) UDPAddr() net.Addr {
	if s.rtc == nil {
		return nil
	}
	return s.rtc.UDPAddr()
}

// TCPAddr returns the address of the server's ICE-TCP port, nil when
// it serves none (Config.TCPAddr).
func (s *Server) TCPAddr() net.Addr {
	if s.rtc == nil {
		return nil
	}
	return s.rtc.TCPAddr()
}

// DataPath returns the WebRTC data path's figures: the time it takes a
// datagram, what its bounds on hostile peers held and refused (see
// transport.DataPathStats; /metrics shows them too). Zeros with NoWebRTC.
func (s *Server) DataPath() transport.DataPathStats {
	if s.rtc == nil {
		return transport.DataPathStats{DatagramBuckets: make([]uint64, len(transport.DatagramBounds)+1)}
	}
	return s.rtc.DataPath()
}

// handshakes returns the WebRTC handshakes in progress.
func (s *Server) handshakes() int {
	if s.rtc == nil {
		return 0
	}
	return s.rtc.Pending()
}

// Ticket signs a ticket for player to join target (a room or world) in
// role, valid for ttl.
func (s *Server) Ticket(player, target string, role Role, ttl time.Duration) (string, error) {
	return SignTicket(s.cfg.Secret, Ticket{Player: player, Target: target, Role: role, Expires: time.Now().Add(ttl)})
}

// CreateRoom creates a lockstep room named name. By default it waits for
// its first player and cuts frame 0 within a frame period of the
// player's arrival (cfg.Start: or when all its players have arrived, or
// at once). The server spreads its rooms' cuts over the period, so that
// rooms do not all cut at the same moment.
func (s *Server) CreateRoom(name string, cfg lockstep.Config) (*Room, error) {
	if len(name) == 0 || len(name) > MaxNameLen {
		return nil, errstack.Wrapf(ErrConfig, "room name %q: want 1 to %d bytes", name, MaxNameLen)
	}
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, errstack.With(err)
	}
	r := &Room{s: s, name: name, cfg: cfg, players: map[string]int{}, spect: map[int]*peer{}, waiting: cfg.Start != lockstep.StartAtOnce,
		slots: make([]atomic.Pointer[peer], cfg.Players), pstats: make([]lockstep.PlayerStats, cfg.Players), absent: make([]bool, cfg.Players)}
	room, err := lockstep.NewRoom(cfg, time.Now().Add(-roomPhase(s.made.Add(1)-1, cfg.Period())), roomSender{r})
	if err != nil {
		return nil, errstack.With(err)
	}
	r.room = room
	if !r.waiting {
		r.markAbsent() // it starts now, with no one there
	}
	r.host = sched.NewHost[roomPacket](roomLoop{r})
	if err := s.register(name, r, nil); err != nil {
		return nil, errstack.With(err)
	}
	s.sched.Add(r.host, room.NextCut())
	s.log.Info("room created", "room", name, "players", cfg.Players, "hz", cfg.Hz)
	return r, nil
}

// roomPhase is how far into its frame period the k-th room created starts:
// the fractional parts of k times the golden ratio, which spread any
// number of rooms evenly over the period. Rooms created in one burst (a
// server that opens its rooms at start) would otherwise all cut within a
// millisecond, every frame, and the last of them would wait for all the
// others: their lateness grows with the number of rooms. Each room's cuts
// are as regular as ever; only their moment in the period differs.
func roomPhase(k uint64, period time.Duration) time.Duration {
	const goldenFrac = 0x9E3779B97F4A7C15 // 2^64 / the golden ratio
	return time.Duration((k * goldenFrac >> 32) * uint64(period) >> 32)
}

// CreateWorld creates an interest world named name.
func (s *Server) CreateWorld(name string, cfg WorldConfig) (*World, error) {
	w, err := s.newWorld(name, cfg, cfg.Start)
	if err != nil {
		return nil, err
	}
	if err := s.register(name, nil, w); err != nil {
		return nil, errstack.With(err)
	}
	s.sched.Add(w.host, w.world.NextFrame())
	s.log.Info("world created", "world", name)
	return w, nil
}

func (s *Server) register(name string, r *Room, w *World) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing || s.draining:
		return ErrServerClosed
	case s.rooms[name] != nil || s.worlds[name] != nil:
		return fmt.Errorf("%w: %q", ErrExists, name)
	case len(s.rooms)+len(s.worlds) >= s.cfg.MaxRooms:
		return fmt.Errorf("%w: %d rooms and worlds", ErrFull, s.cfg.MaxRooms)
	}
	if r != nil {
		s.rooms[name] = r
	} else {
		s.worlds[name] = w
	}
	return nil
}

// forget drops a closed room's or world's name.
func (s *Server) forget(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.rooms, name)
	delete(s.worlds, name)
}

// Room returns the room named name.
func (s *Server) Room(name string) (*Room, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rooms[name]
	return r, ok
}

// World returns the world named name.
func (s *Server) World(name string) (*World, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.worlds[name]
	return w, ok
}

// admit checks a presented ticket and reserves a connection for it:
// signature, expiry, lifetime, target, role, replay and the connection
// limit, in that order, before anything is held.
func (s *Server) admit(token string, now time.Time) (Ticket, error) {
	t, err := s.check(token, now)
	if err != nil {
		return t, err
	}
	return t, s.used.use(t, now)
}

// check validates a ticket for a connection now without spending it: the
// signature, the expiry, the target and the server's room for one more.
func (s *Server) check(token string, now time.Time) (Ticket, error) {
	t, err := parseTicket(s.cfg.Secret, token, now)
	if err != nil {
		return t, err
	}
	if t.Expires.After(now.Add(s.cfg.MaxTicketTTL)) {
		return t, fmt.Errorf("%w: expires in %v, over the server's %v", ErrTicketInvalid, t.Expires.Sub(now).Round(time.Second), s.cfg.MaxTicketTTL)
	}
	if err := s.creds.check(s, t, now); err != nil {
		if errors.Is(err, ErrTicketInvalid) && t.credential && !s.holds(t.Target) {
			// A credential for a room not here (yet): a client following
			// its match to a standby that has not taken it over.
			return t, fmt.Errorf("%w %q", ErrNotFound, t.Target)
		}
		return t, err
	}
	if t.Session.IsZero() { // a version-1 ticket: the session begins now (as a ticket writes it)
		t.Session = time.UnixMilli(now.UnixMilli())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return t, ErrServerClosed
	}
	_, isRoom := s.rooms[t.Target]
	_, isWorld := s.worlds[t.Target]
	switch {
	case !isRoom && !isWorld:
		return t, fmt.Errorf("%w %q", ErrNotFound, t.Target)
	case isWorld && t.Role != RolePlayer: // only lockstep rooms have spectators
		return t, fmt.Errorf("%w: world %q takes players only", ErrRole, t.Target)
	case isWorld && s.worlds[t.Target].held.Load() && !s.worlds[t.Target].holdsStandby(t.Nonce):
		return t, s.worlds[t.Target].errHeld()
	case s.used.used(t):
		return t, fmt.Errorf("%w: player %q, target %q", ErrTicketReplayed, t.Player, t.Target)
	case len(s.peers)+s.handshakes() >= s.cfg.MaxConns:
		// Refused for now, not spent: the same ticket may try again.
		return t, fmt.Errorf("%w: %d connections", ErrFull, s.cfg.MaxConns)
	}
	return t, nil
}

// holds reports whether a room or world of that name is on the server.
func (s *Server) holds(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, isRoom := s.rooms[name]
	_, isWorld := s.worlds[name]
	return isRoom || isWorld
}

// Attach joins conn, a connection made by other means than the server's
// WebRTC (an in-process bot over memnet.Network, a test), with the
// ticket it presents. On error conn is closed.
func (s *Server) Attach(conn transport.Conn, ticket string) error {
	t, err := s.admit(ticket, time.Now())
	if err != nil {
		s.refusedWith(refuseReason(err), err)
		conn.Close()
		return errstack.With(err)
	}
	return errstack.With(s.route(conn, t))
}

// route hands an admitted connection to its room or world.
func (s *Server) route(conn transport.Conn, t Ticket) error {
	return s.routeWire(conn, t, wireVersion)
}

// routeWire is route for a client that reads wire version wire.
func (s *Server) routeWire(conn transport.Conn, t Ticket, wire int) error {
	p := &peer{conn: conn, ticket: t, s: s, wire: wire}
	p.warmer, _ = conn.(transport.Warmer)
	s.mu.Lock()
	r, w := s.rooms[t.Target], s.worlds[t.Target]
	closing := s.closing
	if !closing {
		s.peers[p] = struct{}{}
	}
	s.mu.Unlock()
	var err error
	switch {
	case closing:
		err = ErrServerClosed
	case r != nil:
		err = r.attach(p)
	case w != nil:
		err = w.attach(p)
	default:
		err = fmt.Errorf("%w: %q, before the connection was ready", ErrClosed, t.Target)
	}
	if err != nil {
		s.metrics.refused(refuseReason(err))
		s.log.Info("join refused", "player", t.Player, "target", t.Target, "err", err)
		p.bye(byeFor(err), err.Error())
		s.release(p)
		return err
	}
	s.metrics.joined()
	s.mu.Lock()
	p.joined = time.Now()
	s.mu.Unlock()
	s.log.Info("joined", "player", t.Player, "target", t.Target, "role", t.Role)
	return nil
}

// release forgets a peer whose connection is over. Its credentials
// stay good for the resume window if its path was lost, and end now if
// either side closed it.
func (s *Server) release(p *peer) {
	p.stopResume()
	lost := pathLost(p.conn) && !p.byed.Load() && s.cfg.ResumeWindow > 0
	s.creds.ended(p, lost, time.Now().Add(s.cfg.ResumeWindow))
	s.mu.Lock()
	_, ok := s.peers[p]
	delete(s.peers, p)
	joined := p.joined
	s.mu.Unlock()
	if ok {
		s.metrics.closedConn(p.conn.Stats())
		if !joined.IsZero() {
			s.log.Info("left", "player", p.ticket.Player, "target", p.ticket.Target, "after", time.Since(joined).Round(time.Second))
		}
	}
}

// Serve accepts WebRTC connections and routes them until ctx is done or
// Shutdown is called; then it shuts down (with a 5-second grace) and
// returns nil.
func (s *Server) Serve(ctx context.Context) error {
	defer close(s.served)
	go func() {
		select {
		case <-ctx.Done():
		case <-s.shutdown:
		}
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(sctx)
	}()
	if s.rtc == nil {
		<-s.shutdown
		return nil
	}
	for {
		conn, err := s.rtc.Accept(context.Background())
		if err != nil {
			return nil // the transport server closed: shutting down
		}
		a, _ := transportMeta(conn)
		s.routeWire(conn, a.ticket, a.wire)
	}
}

// transportMeta returns what the Authorize hook attached.
func transportMeta(c transport.Conn) (admission, bool) {
	m, ok := c.(interface{ Meta() any })
	if !ok {
		return admission{}, false
	}
	a, ok := m.Meta().(admission)
	return a, ok
}

// Shutdown stops accepting connections, tells every connected client why
// it is being closed, closes the rooms and worlds and the UDP port, and
// waits (up to ctx) for the goodbyes to leave.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.shutdown)
	peers := make([]*peer, 0, len(s.peers))
	for p := range s.peers {
		peers = append(peers, p)
	}
	rooms := make([]*Room, 0, len(s.rooms))
	for _, r := range s.rooms {
		rooms = append(rooms, r)
	}
	worlds := make([]*World, 0, len(s.worlds))
	for _, w := range s.worlds {
		worlds = append(worlds, w)
	}
	s.mu.Unlock()
	s.log.Info("shutting down", "connections", len(peers))
	for _, p := range peers {
		p.bye(byeShutdown, "")
	}
	for _, r := range rooms {
		r.Close()
	}
	for _, w := range worlds {
		w.Close()
	}
	var err error
	for _, p := range peers {
		select {
		case <-p.conn.Done():
		case <-ctx.Done():
			err = ctx.Err()
			p.conn.Close()
		}
	}
	if s.rtc != nil {
		s.rtc.Close()
	}
	s.sched.Close()
	s.resumes.stop()
	return errstack.With(err)
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	closing := s.closing
	s.mu.Unlock()
	if closing {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

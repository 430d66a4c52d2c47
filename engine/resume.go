package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/transport"
)

// Resuming (SPEC.md §9.5). Once a connection has joined, the server gives
// its client resume credentials: tickets for the same player, target and
// role that the server signs itself, each good for resumeTTL and for one
// connection, two at first (a dial whose offer went through but whose
// handshake then failed has spent one), then a fresh one every
// resumeRefresh while the connection lives, which retires the oldest:
// two admit at once, and only while the connection lives or for the
// resume window after its path was lost (credentials.go).
// A Dial client whose connection is lost (its path went silent or broke)
// dials again with it, by itself, and gets its place back: the same slot
// of a lockstep room, which keeps it for the match; the same entity of a
// world, which keeps it, unobserved, for Config.ResumeWindow.
const (
	resumeTTL      = 2 * time.Minute
	resumeRefresh  = 30 * time.Second
	maxResumeText  = 512
	maxCredentials = 4 // in a message
	resumeCreds    = 2 // the server's
	// resumeDial bounds one dial of a resume; resumeBackoff is the first
	// wait between two, doubled up to resumeMaxBackoff.
	resumeDial       = 10 * time.Second
	resumeBackoff    = 250 * time.Millisecond
	resumeMaxBackoff = 4 * time.Second
)

func appendResume(dst []byte, credentials []string) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeResume, typeBits)
	w.WriteUint(uint64(len(credentials)-1), maxCredentials-1)
	for _, c := range credentials {
		w.WriteString(c, maxResumeText)
	}
	return w.Bytes()
}

func readResume(msg []byte) ([]string, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeResume {
		return nil, fmt.Errorf("%w: not a resume credential", ErrMalformed)
	}
	n := int(r.ReadUint(maxCredentials-1)) + 1
	var out []string
	for range n {
		s := r.ReadString(maxResumeText)
		if s == "" && r.Err() == nil {
			r.Fail(errors.New("empty credential"))
		}
		out = append(out, s)
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: resume credentials: %v", ErrMalformed, err)
	}
	return out, nil
}

// resumed is the outcome of a resume: the new connection's client, or
// why there is none.
type resumed struct {
	c        *Client
	err      error
	attempts int
	follows  int // worlds it followed its player to
}

// keepCredentials keeps the newest credentials the server gave: the two
// that admit.
func (c *Client) keepCredentials(creds []string) {
	c.credentials = append(c.credentials, creds...)
	if n := len(c.credentials); n > resumeCreds {
		c.credentials = c.credentials[n-resumeCreds:]
	}
}

// maxFollows bounds the worlds a resume follows its player through (a
// player moved again while its client was away).
const maxFollows = 3

// MovedHeader is the refusal header that tells a client resuming into a
// world its player has left where the player went, so that it follows:
// a URL query of "world", the world's "url" (empty: the same server) and
// a one-use "ticket" there (SPEC.md §9.5).
const MovedHeader = "Tongbu-Moved"

// movedError refuses a credential for a world its player left; it
// carries where the player went, and a ticket there.
type movedError struct {
	world, url, ticket string
}

func (e *movedError) Error() string {
	return fmt.Sprintf("%v: the player left for world %q", ErrMoved, e.world)
}

func (e *movedError) Unwrap() error { return ErrMoved }

// header is the refusal's MovedHeader.
func (e *movedError) header() http.Header {
	return http.Header{MovedHeader: {neturl.Values{"world": {e.world}, "url": {e.url}, "ticket": {e.ticket}}.Encode()}}
}

// followMove reads, from a refusal for a world the player left, where it
// went: the server's URL (url when the refusal names none: the same
// server) and a ticket there. The refusal comes over signaling (its
// MovedHeader), or from a Connect hook's Server.Attach.
func followMove(err error, url string) (to, ticket string, ok bool) {
	var mv *movedError
	var se *transport.SignalingError
	switch {
	case errors.As(err, &mv):
	case errors.Is(err, ErrMoved) && errors.As(err, &se) && se.Header != nil:
		q, perr := neturl.ParseQuery(se.Header.Get(MovedHeader))
		if perr != nil {
			return "", "", false
		}
		mv = &movedError{world: q.Get("world"), url: q.Get("url"), ticket: q.Get("ticket")}
	default:
		return "", "", false
	}
	if mv.ticket == "" || len(mv.ticket) > maxResumeText || len(mv.url) > maxMoveURL {
		return "", "", false
	}
	to = mv.url
	if to == "" {
		to = url
	}
	return to, mv.ticket, true
}

// resume starts dialing again after the connection's path failed (lost
// says how), and reports false when this client does not resume: it has
// no credential or no URL (NewClient's), or the game turned resuming off.
// A connection the server closed without a bye (its process died, as
// far as the transport can tell) is not resumed: the game places the
// player again.
func (c *Client) resume(now time.Time, lost error) bool {
	if c.url == "" || c.cfg == nil || len(c.credentials) == 0 || c.cfg.ResumeTimeout < 0 {
		return false
	}
	timeout := c.cfg.ResumeTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	url, cfg, standby := c.url, c.cfg, c.standby
	creds := slices.Clone(c.credentials)
	slices.Reverse(creds) // newest first
	ch := make(chan resumed, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	c.resuming, c.resumeStop, c.lostAt = ch, cancel, now
	c.conn.Close()
	if c.failing != nil {
		// A try of the standby is under way (the room or world went
		// silent first): it goes on, and may already hold the seat the
		// credentials name; the resume tries only the server, and the
		// first of the two to connect takes the client.
		standby = ""
	}
	if cfg.Logger != nil {
		cfg.Logger.Info("engine: connection lost; resuming", "target", c.welcome.target, "err", lost)
	}
	if cfg.OnConnection != nil {
		cfg.OnConnection(ConnectionEvent{State: Reconnecting, Err: lost})
	}
	go func() {
		defer cancel()
		if standby == "" || standby == url {
			ch <- dialResume(ctx, url, creds, cfg)
			return
		}
		ch <- dialEither(ctx, cancel, url, standby, creds, cfg)
	}()
	return true
}

// dialEither resumes at url and, at once, at the standby the room or
// world named (where it goes on if its server died): the first welcome
// wins, and a connection the other makes all the same is closed.
func dialEither(ctx context.Context, cancel func(), url, standby string, creds []string, cfg *ClientConfig) resumed {
	both := make(chan resumed, 2)
	go func() { both <- dialResume(ctx, url, creds, cfg) }()
	go func() { both <- dialFailover(ctx, standby, creds, cfg) }()
	first := <-both
	if first.err != nil {
		second := <-both
		second.attempts += first.attempts
		return second
	}
	cancel()
	go func() {
		if d := <-both; d.c != nil {
			d.c.Close()
		}
	}()
	return first
}

// dialWelcome dials url with cred (one try, bounded by resumeDial) and
// waits for the server's welcome: the new connection's client.
func dialWelcome(ctx context.Context, url, cred string, cfg *ClientConfig) (*Client, error) {
	hctx, hcancel := context.WithTimeout(ctx, resumeDial)
	conn, err := dialConn(hctx, url, cred, cfg)
	hcancel()
	if err != nil {
		return nil, err
	}
	nc, err := NewClient(ctx, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	nc.url, nc.cfg = url, cfg
	return nc, nil
}

// dialResume dials url with each credential in turn until one gets a
// welcome, waiting longer between tries, until ctx is done. A credential
// the server refuses for good (spent, expired) is dropped; one refused
// because the server could not be reached is tried again.
func dialResume(ctx context.Context, url string, creds []string, cfg *ClientConfig) resumed {
	var r resumed
	wait := resumeBackoff
	for {
		r.attempts++
		nc, err := dialWelcome(ctx, url, creds[0], cfg)
		if err == nil {
			r.c, r.err = nc, nil // what failed before this dial is not the outcome
			return r
		}
		r.err = err
		if to, ticket, ok := followMove(err, url); ok && r.follows < maxFollows {
			// The player left for another world while its client was
			// away: follow it there, with the ticket the refusal carries.
			r.follows++
			url, creds = to, []string{ticket}
			continue
		}
		switch {
		case errors.Is(err, ErrTicketReplayed), errors.Is(err, ErrTicketExpired), errors.Is(err, ErrTicketInvalid):
			if creds = creds[1:]; len(creds) == 0 {
				r.err = fmt.Errorf("%w (no resume credential left)", err)
				return r
			}
			continue // the next credential, at once
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrClosed), errors.Is(err, ErrRole), errors.Is(err, ErrWireVersion), errors.Is(err, ErrBuild),
			errors.Is(err, ErrKicked), errors.Is(err, ErrMoved):
			return r // the room or world is gone, or will never take this client
		}
		select {
		case <-ctx.Done():
			r.err = fmt.Errorf("gave up after %d tries: %w", r.attempts, err)
			return r
		case <-time.After(wait):
		}
		wait = min(2*wait, resumeMaxBackoff)
	}
}

// resumed takes the outcome of a resume: the client becomes the new
// connection's, or closes for good.
func (c *Client) resumed(d resumed) {
	c.resuming, c.resumeStop = nil, nil
	cfg, away := c.cfg, time.Since(c.lostAt)
	if d.err != nil && c.failing != nil {
		return // the try of the standby has the last word
	}
	if d.err != nil {
		c.closed = &ClosedError{Reason: "connection lost", Detail: "resuming failed: " + d.err.Error(), err: d.err}
		if cfg.Logger != nil {
			cfg.Logger.Info("engine: resuming failed", "target", c.welcome.target, "after", away, "err", d.err)
		}
		if cfg.OnConnection != nil {
			cfg.OnConnection(ConnectionEvent{State: Lost, Err: c.closed, Away: away, Attempts: d.attempts})
		}
		return
	}
	if c.failing != nil {
		c.dropFailover() // the server answered first
	}
	c.takeOver(d.c)
	c.url, c.cfg = d.c.url, cfg
	if cfg.OnConnection != nil {
		cfg.OnConnection(ConnectionEvent{State: Resumed, Away: away, Attempts: d.attempts, RestoredFrame: c.restoredFrame()})
	}
}

// dropResume cancels the resume under way (Close); a connection it made
// all the same is closed.
func (c *Client) dropResume() {
	discardDial(c.resuming, c.resumeStop)
	c.resuming, c.resumeStop = nil, nil
}

// discardDial cancels a dial under way (stop) and closes the connection
// it made all the same, when its outcome comes on ch.
func discardDial(ch chan resumed, stop func()) {
	stop()
	go func() {
		if d := <-ch; d.c != nil {
			d.c.Close()
		}
	}()
}

// pathLost reports whether conn ended because its path failed (silence
// past the idle timeout, a broken TCP connection), not because either
// side closed it: a client that may come back.
func pathLost(conn transport.Conn) bool {
	e, ok := conn.(interface{ Err() error })
	if !ok {
		return false
	}
	err := e.Err()
	return errors.Is(err, transport.ErrIdle) || errors.Is(err, transport.ErrPathLost)
}

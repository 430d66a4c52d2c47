//go:build !js

package engine

import (
	"fmt"
	"sync"
	"time"
)

// Resume credentials are tickets the server signs for a joined
// connection (SPEC.md §9.5), and this table is what makes one admit: a
// credential is good only while the connection it was given to lives, or
// for the resume window after its path was lost; only the two newest of
// a connection are; none outlives the player's session
// (Config.MaxSession), its move to another world, or a kick. A
// credential the table does not vouch for is refused, whatever its
// signature says: a kept credential cannot chain a player in for ever.
type credentials struct {
	ticketTTL time.Duration // Config.MaxTicketTTL: how long a kick is remembered

	mu     sync.Mutex
	m      map[credKey]*credEntry
	kicked map[string]time.Time // player -> when it was kicked
	swept  time.Time
}

type credKey struct{ player, target string }

// credEntry is what the server gave one player for one target.
type credEntry struct {
	session time.Time
	valid   [resumeCreds]uint64 // the credentials' nonces, newest first; 0: none
	peer    *peer               // the connection they were given to; nil once it ended
	until   time.Time           // once it ended by a lost path: when they stop admitting
	moved   *movedTo            // the player went to another world
}

// movedTo is where a player that left a world went.
type movedTo struct {
	world, url string
	until      time.Time // when the record is dropped: the credentials have expired by then
}

// Bounds of the table.
const (
	// maxKicked bounds the players remembered as kicked; past it the
	// oldest are forgotten (their tickets have expired by then, mostly).
	maxKicked = 1 << 20
	// forwardTTL is the life of the ticket a moved player's resume is
	// given for its new world.
	forwardTTL = 30 * time.Second
	// kickBookings: a player kicked this recently is booked no place in a
	// world (a transfer under way as the kick came).
	kickBookings = time.Minute
)

// issue signs n fresh credentials for p's player and target, valid until
// expires (resumeTTL from now, within the session), and makes them the
// newest two of p's; those of an earlier connection stop admitting. It
// returns none past the session's end.
func (c *credentials) issue(s *Server, p *peer, n int, now time.Time) []string {
	t := p.ticket
	expires := now.Add(resumeTTL)
	if end := t.Session.Add(s.cfg.MaxSession); end.Before(expires) {
		expires = end
	}
	if !expires.After(now) {
		return nil // the session is over: the player needs a fresh ticket
	}
	k := credKey{t.Player, t.Target}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	if at, ok := c.kicked[t.Player]; ok && !t.Session.After(at) {
		return nil // kicked since its session began
	}
	e := c.m[k]
	if e == nil || e.peer != p {
		e = &credEntry{session: t.Session, peer: p}
		if c.m == nil {
			c.m = map[credKey]*credEntry{}
		}
		c.m[k] = e
	}
	var out []string
	for range n {
		ct := Ticket{Player: t.Player, Target: t.Target, Role: t.Role, Expires: expires, Session: t.Session, Nonce: randomNonce(), credential: true}
		tk, err := signTicket(s.cfg.Secret, ct)
		if err != nil {
			return out
		}
		copy(e.valid[1:], e.valid[:])
		e.valid[0] = ct.Nonce
		out = append(out, tk)
	}
	return out
}

// check refuses a ticket that the table does not let in at now: any
// ticket of a session begun before its player was kicked, and a
// credential that is not among the newest two of a connection that lives
// (or whose path was lost within the resume window), of a session not
// over, of a player still in the target.
func (c *credentials) check(s *Server, t Ticket, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.kicked[t.Player]; ok {
		// A version-1 ticket says not when it was issued: any that may
		// predate the kick is refused.
		before := !t.Session.IsZero() && !t.Session.After(at) || t.Session.IsZero() && !t.Expires.After(at.Add(s.cfg.MaxTicketTTL))
		if before {
			return fmt.Errorf("%w: player %q was kicked at %s", ErrKicked, t.Player, at.UTC().Format(time.RFC3339))
		}
	}
	if !t.credential {
		return nil
	}
	if !now.Before(t.Session.Add(s.cfg.MaxSession)) {
		return fmt.Errorf("%w: the session began %v ago, longer than the server's MaxSession (%v): the player needs a new ticket",
			ErrTicketExpired, now.Sub(t.Session).Round(time.Second), s.cfg.MaxSession)
	}
	e := c.m[credKey{t.Player, t.Target}]
	switch {
	case e == nil || !e.session.Equal(t.Session):
		return fmt.Errorf("%w: a resume credential of player %q for %q that this server no longer vouches for", ErrTicketInvalid, t.Player, t.Target)
	case e.moved != nil:
		fwd, err := signTicket(s.cfg.Secret, Ticket{Player: t.Player, Target: e.moved.world, Role: t.Role, Expires: now.Add(forwardTTL), Session: t.Session})
		if err != nil {
			return err
		}
		return &movedError{world: e.moved.world, url: e.moved.url, ticket: fwd}
	case t.Nonce != e.valid[0] && t.Nonce != e.valid[1]:
		return fmt.Errorf("%w: a resume credential of player %q superseded by newer ones", ErrTicketInvalid, t.Player)
	case e.peer == nil && !now.Before(e.until):
		return fmt.Errorf("%w: the resume window of player %q in %q passed", ErrTicketExpired, t.Player, t.Target)
	}
	return nil
}

// ended forgets the credentials of p, whose connection ended: a path
// that was lost keeps them until until (the resume window); a close by
// either side ends them now.
func (c *credentials) ended(p *peer, lost bool, until time.Time) {
	k := credKey{p.ticket.Player, p.ticket.Target}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil || e.peer != p {
		return // superseded by a newer connection's, or never given
	}
	if !lost {
		delete(c.m, k)
		return
	}
	e.peer, e.until = nil, until
}

// moved records that player, of session, left target for world (at
// url; empty: this server) at now: its credentials for target are
// refused from now on, with where it went. Its client may have closed the
// old connection already (it does as soon as the new world has it).
func (c *credentials) moved(player, target string, session time.Time, world, url string, now time.Time) {
	k := credKey{player, target}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil {
		if c.m == nil {
			c.m = map[credKey]*credEntry{}
		}
		e = &credEntry{}
		c.m[k] = e
	}
	e.session, e.peer, e.valid = session, nil, [resumeCreds]uint64{}
	e.moved = &movedTo{world: world, url: url, until: now.Add(resumeTTL)}
	e.until = e.moved.until
}

// kick refuses every credential of player from now on, and every ticket
// of a session begun before now.
func (c *credentials) kick(player string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kicked == nil {
		c.kicked = map[string]time.Time{}
	}
	if len(c.kicked) >= maxKicked {
		var oldest string
		for p, at := range c.kicked {
			if oldest == "" || at.Before(c.kicked[oldest]) {
				oldest = p
			}
		}
		delete(c.kicked, oldest)
	}
	c.kicked[player] = now
	for k := range c.m {
		if k.player == player {
			delete(c.m, k)
		}
	}
}

// kickedSince reports whether player was kicked after since.
func (c *credentials) kickedSince(player string, since time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.kicked[player]
	return ok && at.After(since)
}

// sweep forgets, at most once a minute, the credentials that can no
// longer admit and the kicks older than any ticket's life; c.mu is held.
func (c *credentials) sweep(now time.Time) {
	if now.Sub(c.swept) < time.Minute {
		return
	}
	c.swept = now
	for k, e := range c.m {
		if e.peer == nil && now.After(e.until) {
			delete(c.m, k)
		}
	}
	for p, at := range c.kicked {
		if now.Sub(at) > c.ticketTTL { // every ticket issued before it has expired
			delete(c.kicked, p)
		}
	}
}

// vouched returns the session and the nonces of the credentials the
// table vouches for, of player in target: what a standby adopts.
func (c *credentials) vouched(player, target string) (time.Time, [resumeCreds]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.m[credKey{player, target}]; e != nil && e.moved == nil {
		return e.session, e.valid
	}
	return time.Time{}, [resumeCreds]uint64{}
}

// adopt vouches, until until, for the credentials another server gave
// player for target (a room this server continues): as after a lost
// path there. A credential this table vouches for already is kept.
func (c *credentials) adopt(player, target string, session time.Time, valid [resumeCreds]uint64, until time.Time) {
	if valid == ([resumeCreds]uint64{}) {
		return
	}
	k := credKey{player, target}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kicked[player].After(session) {
		return
	}
	if c.m == nil {
		c.m = map[credKey]*credEntry{}
	}
	if e := c.m[k]; e != nil && (e.peer != nil || e.moved != nil) {
		return
	}
	c.m[k] = &credEntry{session: session, valid: valid, until: until}
}

// held returns the entries the table holds, for tests.
func (c *credentials) held() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

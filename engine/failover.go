package engine

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// FailoverSilence is how long a client hears nothing from its room or
// world (at least four of its frame periods) before it suspects the
// server and tries the standby the room or world named (SPEC.md §9.6;
// a world's clients wait four frames past its keepalive of eight):
// the match or world goes on there if the server died, and the client
// stays where it is if the server was only slow. A room that cuts 15
// frames a second and sends each several times, and a world that sends
// every client a packet every frame, are never that quiet while they
// live.
const FailoverSilence = 700 * time.Millisecond

// failoverBackoff is the wait between two tries of the standby, which
// may still be taking the room over: failoverQuick of them, then waits
// that double up to failoverMaxBackoff.
const (
	failoverBackoff    = 100 * time.Millisecond
	failoverMaxBackoff = time.Second
	failoverQuick      = 10 // tries at failoverBackoff before the waits double
)

// failoverSilence is FailoverSilence for the room's rate.
func (c *Client) failoverSilence() time.Duration {
	if c.is != nil {
		// A world sends a client with nothing new a packet every 8
		// frames (its keepalive): four frames past that.
		return max(FailoverSilence, 12*c.welcome.interest.Period())
	}
	return max(FailoverSilence, 4*c.welcome.lockstep.Period())
}

// suspect starts trying the standby when the room has been silent too
// long; the connection stays open meanwhile, and frames arriving on it
// again call the try off.
func (c *Client) suspect(now time.Time) {
	if (c.ls == nil && c.is == nil) || c.standby == "" || c.cfg == nil || c.heardAt.IsZero() || c.failing != nil ||
		c.moving != nil && !c.standbyMove || c.resuming != nil || len(c.credentials) == 0 || now.Sub(c.heardAt) < c.failoverSilence() {
		return
	}
	if c.moving != nil {
		// A place waiting next door (a cell's neighbour) was booked by
		// the world that fell silent: given up, the world's standby
		// books its own.
		c.dropMove()
	}
	timeout := c.cfg.ResumeTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	url, cfg := c.standby, c.cfg
	creds := slices.Clone(c.credentials)
	slices.Reverse(creds)
	ch := make(chan resumed, 1)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	c.failing, c.failStop, c.lostAt = ch, cancel, now
	if cfg.Logger != nil {
		cfg.Logger.Info("engine: room or world silent; trying its standby", "target", c.welcome.target, "standby", url, "silent", now.Sub(c.heardAt))
	}
	go func() {
		defer cancel()
		ch <- dialFailover(ctx, url, creds, cfg)
	}()
}

// dialFailover dials the standby at url with each credential in turn
// until one gets a welcome: a standby that does not hold the room yet
// (not found) is tried again, after a short wait, until ctx is done.
func dialFailover(ctx context.Context, url string, creds []string, cfg *ClientConfig) resumed {
	var r resumed
	wait := failoverBackoff
	for {
		r.attempts++
		nc, err := dialWelcome(ctx, url, creds[0], cfg)
		if err == nil {
			r.c, r.err = nc, nil
			return r
		}
		r.err = err
		switch {
		case errors.Is(err, ErrTicketReplayed), errors.Is(err, ErrTicketExpired), errors.Is(err, ErrTicketInvalid):
			if creds = creds[1:]; len(creds) == 0 {
				return r
			}
			continue
		case errors.Is(err, ErrRole), errors.Is(err, ErrWireVersion), errors.Is(err, ErrBuild), errors.Is(err, ErrKicked):
			return r
		}
		select {
		case <-ctx.Done():
			return r
		case <-time.After(wait):
		}
		if r.attempts >= failoverQuick { // the standby takes a room over within a second of its server's death
			wait = min(2*wait, failoverMaxBackoff)
		}
	}
}

// failedOver takes the outcome of a try of the standby: the client
// becomes the standby's, or stays on its connection (the server was
// slow, not dead: frames came again, or the standby never took over).
func (c *Client) failedOver(d resumed) {
	c.failing, c.failStop = nil, nil
	if d.err != nil {
		if c.cfg.Logger != nil {
			c.cfg.Logger.Info("engine: standby did not take the room", "target", c.welcome.target, "err", d.err)
		}
		c.heardAt = time.Now() // suspected again after another silence
		return
	}
	if c.resuming != nil {
		c.dropResume() // the standby answered first
	}
	old, cfg, away := c.conn, c.cfg, time.Since(c.lostAt)
	c.takeOver(d.c)
	c.url, c.cfg = d.c.url, cfg
	old.Close()
	if cfg.Logger != nil {
		cfg.Logger.Info("engine: the match goes on on the standby", "target", c.welcome.target, "url", c.url, "after", away)
	}
	if cfg.OnConnection != nil {
		cfg.OnConnection(ConnectionEvent{State: Resumed, Away: away, Attempts: d.attempts, RestoredFrame: c.restoredFrame()})
	}
}

// restoredFrame is the frame the connection's world went back to, told
// before its welcome (a world restored from its checkpoint); 0: none.
func (c *Client) restoredFrame() int {
	if c.fo == nil {
		return 0
	}
	return c.fo.restored
}

// dropFailover calls off a try of the standby (frames came again, or
// Close); a connection it made all the same is closed.
func (c *Client) dropFailover() {
	discardDial(c.failing, c.failStop)
	c.failing, c.failStop = nil, nil
}

// takeOver makes the client nc's, a new connection of the same player:
// a room that continues the match this client was playing (its failover
// notice asks for a carry) keeps the client's lockstep state, which
// carries back the frames the room may lack (SPEC.md §9.6); any other
// connection brings its own.
func (c *Client) takeOver(nc *Client) {
	old, target := c.ls, c.welcome.target
	*c = *nc
	fo := nc.fo
	if fo == nil || fo.carry < 0 || old == nil || c.ls == nil || c.welcome.role != RolePlayer || c.welcome.target != target ||
		old.Slot() != c.ls.Slot() || old.Config().Players != c.ls.Config().Players || old.Config().Hz != c.ls.Config().Hz {
		return
	}
	old.Reconnected()
	c.ls, c.mode = old, old
	c.conn.SendReliable(appendCarry(nil, &carry{have: old.Have(), acked: old.Acked(), frames: old.Carry(fo.carry)}))
}

// takeFailover takes a room's failover notice on the connection.
func (c *Client) takeFailover(fo *failover) {
	c.standby = fo.standby
	if c.is != nil {
		return // worlds name a standby; their clients start over in a restored one
	}
	if !fo.resync || c.welcome.mode != Lockstep || c.welcome.role != RolePlayer {
		return
	}
	// The frames this client holds are not the match's: a fresh client,
	// which the room streams the match from frame 0 (Step.CatchingUp).
	if ls, err := lockstep.NewClient(c.welcome.lockstep, c.welcome.slot); err == nil {
		c.ls, c.mode = ls, ls
	}
}

// Standby returns the URL of the server where the room said its match
// goes on if its server falls silent (SPEC.md §9.6); empty when it named
// none.
func (c *Client) Standby() string { return c.standby }

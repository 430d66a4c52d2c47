package engine

import (
	"context"

	"github.com/tongbu/tongbu/internal/errstack"
)

// A client's part in moves (SPEC.md §9.3): following a world transfer,
// a cell crossing, or a room handed to its standby.

// follow starts the dial of a move the server told of. A standby move
// (the next cell of a map, before the player crosses into it) connects at
// once and waits, parked, for the welcome that comes at the crossing; a
// move told while a standby waits replaces it.
func (c *Client) follow(mv *move) {
	if c.failing != nil {
		if mv.world == c.welcome.target && (mv.url == c.standby || mv.url == "") {
			return // the room hands itself to its standby: the client is on its way there
		}
		c.dropFailover()
	}
	switch {
	case c.moving != nil && c.standbyMove:
		c.dropMove() // the server gave the standby up, or the player moves elsewhere
	case c.moving != nil:
		c.malformed++ // one move at a time
		return
	}
	if c.url == "" {
		if !mv.standby {
			c.conn.SendReliable(appendMoveFail(nil, "this client cannot dial another world"))
		}
		return
	}
	url := mv.url
	if url == "" {
		url = c.url
	}
	cfg := c.cfg
	ch := make(chan moveDial, 1)
	wait := moveTimeout
	if mv.standby {
		wait = standbyTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	c.moving, c.stop, c.standbyMove = ch, cancel, mv.standby
	go func() {
		defer cancel()
		d := moveDial{url: url, seamless: mv.seamless, standby: mv.standby}
		hctx, hcancel := context.WithTimeout(ctx, moveTimeout) // the handshake itself
		conn, err := dialConn(hctx, url, mv.ticket, cfg)
		hcancel()
		if err == nil {
			if d.c, err = NewClient(ctx, conn); err != nil {
				conn.Close()
			} else if ctx.Err() != nil { // replaced or closed meanwhile
				d.c.Close()
				d.c, err = nil, ctx.Err()
			} else {
				d.c.url, d.c.cfg = url, cfg
			}
		}
		d.err = errstack.With(err)
		ch <- d
	}()
}

// moved takes the outcome of a move's dial: the client becomes the new
// world's, or tells the old one that it could not go (a standby that
// ends unused is no failure: the server gave it up).
func (c *Client) moved(d moveDial) {
	c.moving, c.stop = nil, nil
	if d.err != nil {
		if c.cfg.Logger != nil {
			c.cfg.Logger.Info("engine: move failed", "to", d.url, "standby", d.standby, "err", d.err)
		}
		if c.lost != nil {
			c.closed = c.lost
			c.conn.Close()
			return
		}
		if !d.standby {
			c.conn.SendReliable(appendMoveFail(nil, d.err.Error()))
		}
		return
	}
	old, from, oldIs := c.conn, c.welcome.target, c.is
	cfg := c.cfg
	c.takeOver(d.c)
	if d.seamless && oldIs != nil && c.is != nil { // the next cell of the same map: what the client sees stays
		if c.welcome.version >= inheritWire {
			c.is.Inherit(oldIs) // and its commands go on in their sequence
		} else {
			c.is.InheritMoves(oldIs)
		}
	}
	c.url, c.cfg = d.url, cfg
	old.Close()
	if cfg.OnMove != nil {
		cfg.OnMove(Move{From: from, To: c.welcome.target, URL: d.url})
	}
}

// dropMove cancels the move under way; a connection it made all the same
// is closed.
func (c *Client) dropMove() {
	ch := c.moving
	c.stop()
	c.moving, c.stop = nil, nil
	go func() {
		if d := <-ch; d.c != nil {
			d.c.Close()
		}
	}()
}

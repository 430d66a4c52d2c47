//go:build js

// Command web is the MMO demo's browser client for `tongbu demo`: it gets a
// ticket from the demo server, joins the interest world over WebRTC and
// shows it in the Ebiten view.
package main

import (
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/internal/demoweb"
	"github.com/tongbu/tongbu/examples/mmo/view"
	"github.com/tongbu/tongbu/examples/mmo/world"
	"github.com/tongbu/tongbu/interest"
)

func main() {
	c, err := demoweb.Join("mmo")
	if err != nil {
		demoweb.Fail(err)
	}
	if err := view.Run(view.New(&session{c: c}), "tongbu mmo"); err != nil {
		demoweb.Fail(err)
	}
}

// session is the view's Net over the engine client.
type session struct {
	c      *engine.Client
	err    error
	cfg    interest.Config // the world's, with the demo's cities
	cfgFor string          // the world cfg is for
}

func (s *session) Client() *interest.Client { return s.c.Interest() }
func (s *session) Player() interest.ID      { return s.c.Entity() }

// Config is the world's configuration with the demo's cities, which are
// not sent on the wire.
func (s *session) Config() interest.Config {
	if t := s.c.Target(); t != s.cfgFor {
		s.cfg, s.cfgFor = world.InterestConfig(s.c.InterestConfig()), t
	}
	return s.cfg
}

func (s *session) Update(now time.Time) error {
	s.err = s.c.Update(now)
	s.c.Interest().Advance(now)
	return s.err
}

func (s *session) Stats() view.NetStats {
	st := s.c.Stats()
	return view.NetStats{Status: demoweb.Status(s.err), RTT: st.RTT, BytesIn: int64(st.RecvBytes), BytesOut: int64(st.SentBytes)}
}

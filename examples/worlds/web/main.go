//go:build js

// Command web is the worlds example's browser client: it asks the lobby
// for a place, joins the field's west cell over WebRTC, and plays in the
// MMO demo's Ebiten view, which follows the player from world to world and
// shows the world and the server it is on.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"syscall/js"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/internal/demoweb"
	"github.com/tongbu/tongbu/examples/mmo/view"
	"github.com/tongbu/tongbu/interest"
)

func main() {
	s, err := join()
	if err != nil {
		demoweb.Fail(err)
	}
	if err := view.Run(view.New(s), "tongbu worlds"); err != nil {
		demoweb.Fail(err)
	}
}

// join asks the page's lobby for a place (GET /ticket) and dials the
// world process it names.
func join() (*session, error) {
	loc := js.Global().Get("location")
	origin := loc.Get("origin").String()
	name := ""
	if q, err := url.ParseQuery(loc.Get("search").String()[min(1, len(loc.Get("search").String())):]); err == nil {
		name = q.Get("name")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", origin+"/ticket?name="+url.QueryEscape(name), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ticket: %s", resp.Status)
	}
	var t struct{ Player, World, URL, Ticket string }
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		return nil, fmt.Errorf("ticket: %w", err)
	}
	s := &session{url: t.URL}
	s.c, err = engine.Dial(ctx, t.URL, t.Ticket, &engine.ClientConfig{OnMove: func(m engine.Move) {
		s.url = m.URL
		s.moves++
	}})
	if err != nil {
		return nil, err
	}
	js.Global().Get("window").Call("addEventListener", "pagehide", js.FuncOf(func(js.Value, []js.Value) any {
		s.c.Close()
		return nil
	}))
	return s, nil
}

// session is the view's Net over the engine client, which follows the
// player's moves between worlds and processes.
type session struct {
	c     *engine.Client
	url   string // the server of the world the player is in
	moves int
	err   error
}

func (s *session) Client() *interest.Client { return s.c.Interest() }
func (s *session) Player() interest.ID      { return s.c.Entity() }
func (s *session) Config() interest.Config  { return s.c.InterestConfig() }
func (s *session) Update(now time.Time) error {
	s.err = s.c.Update(now)
	s.c.Interest().Advance(now)
	return s.err
}

func (s *session) Stats() view.NetStats {
	st := s.c.Stats()
	host := s.url
	if u, err := url.Parse(s.url); err == nil {
		host = u.Host
	}
	return view.NetStats{Status: demoweb.Status(s.err), RTT: st.RTT, BytesIn: int64(st.RecvBytes), BytesOut: int64(st.SentBytes),
		Where: fmt.Sprintf("%s, server %s (moves %d)", s.c.Target(), host, s.moves)}
}

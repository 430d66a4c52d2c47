//go:build !js

package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/matchmaker"
)

// The lobby's HTTP API, under /api, which the game's client calls
// (client.go):
//
//	POST /signup {"name", "password"}  201; 409 the name is taken; 400
//	POST /login  {"name", "password"}  200 {"token"}; 401
//	GET  /me                           200 {"name", "rating", "wins", "losses"}
//	POST /play   {"rtt_ms": {...}}     200 {"url", "ticket", "world", "opponents"}
//	                                   when a match is found (a long poll);
//	                                   408 none in time; 409 already in line
//
// /me and /play take the login's token: "Authorization: Bearer <token>".
const (
	duelMode   = "duel"
	region     = "local"     // this server's region: a cluster has one per site
	playWait   = time.Minute // a /play waits this long for a match
	matchEvery = 100 * time.Millisecond
)

// lobby is the game's own front door: accounts, logins, the line for a
// match, and the matches being played.
type lobby struct {
	srv      *engine.Server
	accounts *accounts
	sessions sessions
	url      string // where clients reach srv's signaling
	log      *slog.Logger
	onEnd    func(result) // told each match's end (the demo's bots, the test)

	mu      sync.Mutex
	m       *matchmaker.Matcher
	waiting map[string]chan assignment // by player: its /play
}

// assignment is /play's answer: where the match is and the ticket in.
type assignment struct {
	URL       string   `json:"url"`
	Ticket    string   `json:"ticket"`
	World     string   `json:"world"`
	Opponents []string `json:"opponents"`
}

// result is a match's end, as stored.
type result struct {
	Match  string
	Teams  [][]matchmaker.Player // with their ratings before the match
	Winner int                   // -1: a draw
	Err    error                 // storing the ratings failed
}

// TUTORIAL:mode
// newMatcher is the lobby's matchmaker: one-on-one duels between players
// close in rating, with a round trip to the region under 150 ms at first.
func newMatcher() (*matchmaker.Matcher, error) {
	return matchmaker.NewMatcher(matchmaker.Config{Name: "lobby", Timeout: playWait, Modes: []matchmaker.Mode{{
		Name: duelMode, Teams: 2, TeamSize: 1,
		Skill: 3, SkillWiden: 1, MaxSkill: 15, // Mu apart, widening by 1 a second to 15
		RTT: 150 * time.Millisecond, RTTWiden: 50 * time.Millisecond, MaxRTT: 400 * time.Millisecond,
	}}})
}

// TUTORIAL:end

// handler serves the lobby's API.
func (l *lobby) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /signup", l.signUp)
	mux.HandleFunc("POST /login", l.logIn)
	mux.HandleFunc("GET /me", l.me)
	mux.HandleFunc("POST /play", l.play)
	return mux
}

type credentials struct {
	Name     string `json:"name"`
	Password string `json:"password"`
}

func (l *lobby) signUp(w http.ResponseWriter, r *http.Request) {
	var c credentials
	if !readJSON(w, r, &c) {
		return
	}
	switch err := l.accounts.signUp(c.Name, c.Password); {
	case errors.Is(err, errTaken):
		http.Error(w, err.Error(), http.StatusConflict)
	case errors.Is(err, errBadName), errors.Is(err, errPassword):
		http.Error(w, err.Error(), http.StatusBadRequest)
	case err != nil:
		l.log.Error("lobby: sign-up", "err", err)
		http.Error(w, "the account could not be stored", http.StatusInternalServerError)
	default:
		w.WriteHeader(http.StatusCreated)
	}
}

func (l *lobby) logIn(w http.ResponseWriter, r *http.Request) {
	var c credentials
	if !readJSON(w, r, &c) {
		return
	}
	if err := l.accounts.logIn(c.Name, c.Password); err != nil {
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	writeJSON(w, map[string]string{"token": l.sessions.open(c.Name)})
}

// player returns the logged-in player of r, or answers 401.
func (l *lobby) player(w http.ResponseWriter, r *http.Request) (string, bool) {
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok {
		if p, ok := l.sessions.who(tok); ok {
			return p, true
		}
	}
	http.Error(w, "log in first", http.StatusUnauthorized)
	return "", false
}

func (l *lobby) me(w http.ResponseWriter, r *http.Request) {
	p, ok := l.player(w, r)
	if !ok {
		return
	}
	acc, _ := l.accounts.get(p)
	writeJSON(w, map[string]any{"name": p, "rating": acc.Rating, "wins": acc.Wins, "losses": acc.Losses})
}

// TUTORIAL:play
// play puts the player in line with its stored rating and the round trips
// its client measured (engine.MeasureRegions), and answers when the
// matchmaker has put it in a match.
func (l *lobby) play(w http.ResponseWriter, r *http.Request) {
	p, ok := l.player(w, r)
	if !ok {
		return
	}
	var req struct {
		RTT map[string]int `json:"rtt_ms"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	acc, _ := l.accounts.get(p)
	c := make(chan assignment, 1)
	l.mu.Lock()
	if l.waiting[p] != nil {
		l.mu.Unlock()
		http.Error(w, "already in line", http.StatusConflict)
		return
	}
	err := l.m.Add(matchmaker.Ticket{
		ID: p, Mode: duelMode, RTT: req.RTT,
		Players: []matchmaker.Player{{ID: p, Rating: acc.Rating}},
	}, time.Now())
	if err == nil {
		l.waiting[p] = c
	}
	l.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case a, ok := <-c:
		if !ok {
			http.Error(w, "no match in time", http.StatusRequestTimeout)
			return
		}
		writeJSON(w, a)
	case <-r.Context().Done(): // the client gave up: out of line
		l.mu.Lock()
		if l.waiting[p] == c {
			l.m.Remove(p)
			delete(l.waiting, p)
		}
		l.mu.Unlock()
	}
}

// TUTORIAL:end

// run forms matches until ctx ends.
func (l *lobby) run(ctx context.Context) {
	tk := time.NewTicker(matchEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			l.pass(now)
		}
	}
}

// TUTORIAL:match
// pass forms the matches the line allows, opens a duel for each, and
// hands its players their tickets.
func (l *lobby) pass(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	matches, expired := l.m.Match(now, []matchmaker.Site{{Node: "here", Region: region, Free: 1000}})
	for _, t := range expired {
		if c := l.waiting[t.ID]; c != nil {
			close(c) // 408
			delete(l.waiting, t.ID)
		}
	}
	for _, m := range matches {
		d, err := l.startDuel(m)
		for _, t := range m.Tickets {
			c := l.waiting[t.ID]
			delete(l.waiting, t.ID)
			var a assignment
			if err == nil {
				a.Ticket, err = l.srv.Ticket(t.ID, d.name, engine.RolePlayer, time.Minute)
			}
			if err != nil {
				l.log.Error("lobby: match not started", "match", m.ID, "err", err)
				close(c) // its player asks again
				continue
			}
			a.URL, a.World = l.url, d.name
			for _, o := range m.Tickets {
				if o.ID != t.ID {
					a.Opponents = append(a.Opponents, o.ID)
				}
			}
			c <- a
		}
		if err != nil && d != nil {
			d.world.Close()
		}
	}
}

// TUTORIAL:end

// ended is told a duel's end, after its ratings were stored.
func (l *lobby) ended(d *duel, winner int, err error) {
	if err != nil {
		l.log.Error("lobby: ratings not stored", "match", d.match.ID, "err", err)
	} else {
		l.log.Info("lobby: match over", "match", d.match.ID, "winner", winner)
	}
	if l.onEnd != nil {
		l.onEnd(result{Match: d.match.ID, Teams: d.match.Teams, Winner: winner, Err: err})
	}
}

// readJSON decodes r's body (at most 4 KiB) into v, or answers 400.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

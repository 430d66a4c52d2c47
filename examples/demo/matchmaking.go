//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/tongbu/tongbu/engine"
	arena "github.com/tongbu/tongbu/examples/arena/game"
	"github.com/tongbu/tongbu/matchmaker"
)

// The arena's Play button: the page queues its player with a rating, and
// the demo's matchmaker (a matchmaker.Matcher in this process: the demo
// has no cluster) puts it in a free-for-all of four with bots rated near
// it, in a room of its own.
const (
	playMode   = "arena-ffa"
	botsInLine = 24 // bots waiting to be matched, rated across the range
)

// matchResult is the queue endpoint's answer.
type matchResult struct {
	Ticket string       `json:"ticket"`
	Player string       `json:"player"`
	Game   string       `json:"game"`
	Room   string       `json:"room"`
	Rating ratingJSON   `json:"rating"`
	Others []ratedEntry `json:"others"` // the others of the match
	RTTMs  int          `json:"rtt_ms"` // the round trip the page measured (engine.MeasureRegions), 0 if none
}

// demoRegion is the one region of the demo's matchmaking: this server.
const demoRegion = "local"

type ratingJSON struct {
	Mu    float64 `json:"mu"`
	Sigma float64 `json:"sigma"`
}

type ratedEntry struct {
	Name   string     `json:"name"`
	Bot    bool       `json:"bot"`
	Rating ratingJSON `json:"rating"`
}

// lobby is the demo's matchmaking: people in line and bots.
type lobby struct {
	d    *demo
	mu   sync.Mutex
	m    *matchmaker.Matcher
	bots map[string]matchmaker.Player // by ticket id: bots in line
	wait map[string]chan matchResult  // by ticket id: people in line
	rng  *rand.Rand
	seq  int
}

func newLobby(d *demo) (*lobby, error) {
	m, err := matchmaker.NewMatcher(matchmaker.Config{Name: "play", Timeout: 2 * time.Minute, Modes: []matchmaker.Mode{{
		Name: playMode, Teams: arenaPlayers, TeamSize: 1,
		// A demo has few people: skill widens fast, and new players
		// (whose Sigma is high) may meet bots whose rating is known.
		Skill: 2, SkillWiden: 2, Uncertainty: 10,
		// The page measures its round trip to this server (the only
		// region); a slow link still plays, after a wait.
		RTT: 250 * time.Millisecond, RTTWiden: 250 * time.Millisecond, MaxRTT: 2 * time.Second,
	}}})
	if err != nil {
		return nil, err
	}
	l := &lobby{d: d, m: m, bots: map[string]matchmaker.Player{}, wait: map[string]chan matchResult{}, rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))}
	return l, nil
}

// run forms matches until the demo stops.
func (l *lobby) run(ctx context.Context) {
	tk := time.NewTicker(200 * time.Millisecond)
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

// pass puts the bots in line again, younger than every person, so that
// people anchor the matches, and starts the matches that hold a person.
func (l *lobby) pass(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.bots {
		l.m.Remove(id)
	}
	for len(l.bots) < botsInLine {
		l.seq++
		// Ratings spread as players' are: mean 25, a few far out.
		r := matchmaker.Rating{Mu: 25 + 8*l.rng.NormFloat64(), Sigma: 1.5 + l.rng.Float64()}
		l.bots[fmt.Sprint("bot-", l.seq)] = matchmaker.Player{ID: fmt.Sprintf("bot-%d (%.0f)", l.seq, r.Mu), Rating: r}
	}
	for id, p := range l.bots {
		l.m.Add(matchmaker.Ticket{ID: id, Mode: playMode, Players: []matchmaker.Player{p}}, now)
	}
	matches, expired := l.m.Match(now, []matchmaker.Site{{Node: "demo", Region: demoRegion, Free: 1 << 20}})
	for _, t := range expired {
		if c := l.wait[t.ID]; c != nil {
			close(c)
			delete(l.wait, t.ID)
		}
	}
	for _, mt := range matches {
		people := 0
		for _, t := range mt.Tickets {
			if l.wait[t.ID] != nil {
				people++
			}
		}
		if people == 0 {
			continue // bots alone: they queue again at the next pass
		}
		if err := l.start(mt); err != nil {
			l.d.cfg.Logger.Warn("demo: a match not started", "err", err)
			for _, t := range mt.Tickets {
				if c := l.wait[t.ID]; c != nil {
					close(c)
					delete(l.wait, t.ID)
				}
			}
		}
	}
}

// start makes mt's room, with bots in the bots' seats, and answers the
// people in it; l.mu is held.
func (l *lobby) start(mt matchmaker.Match) error {
	d := l.d
	cfg := arena.RoomConfig(arenaPlayers)
	cfg.Simulation = arena.Simulation(arenaPlayers, arena.RoomSeed(mt.ID))
	cfg.VerifyEvents = true
	room, err := d.srv.CreateRoom(mt.ID, cfg)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(d.ctx)
	ar := &arenaRoom{room: room, game: "arena", stop: stop, emptyAt: time.Now()}
	var everyone []ratedEntry
	for _, t := range mt.Tickets {
		p := t.Players[0]
		_, bot := l.bots[t.ID]
		everyone = append(everyone, ratedEntry{Name: p.ID, Bot: bot, Rating: ratingJSON{p.Rating.Mu, p.Rating.Sigma}})
	}
	for _, t := range mt.Tickets {
		if _, bot := l.bots[t.ID]; !bot {
			continue
		}
		delete(l.bots, t.ID) // it plays: another takes its place in line
		ar.bots++
		if err := d.startBot(ctx, mt.ID, t.Players[0].ID, d.playArenaBot); err != nil {
			stop()
			room.Close()
			return err
		}
	}
	for _, t := range mt.Tickets {
		c := l.wait[t.ID]
		if c == nil {
			continue
		}
		delete(l.wait, t.ID)
		p := t.Players[0]
		tk, err := d.srv.Ticket(p.ID, mt.ID, engine.RolePlayer, time.Minute)
		if err != nil {
			close(c)
			continue
		}
		ar.seats++
		res := matchResult{Ticket: tk, Player: p.ID, Game: "arena", Room: mt.ID, Rating: ratingJSON{p.Rating.Mu, p.Rating.Sigma}, RTTMs: t.RTT[demoRegion]}
		for _, e := range everyone {
			if e.Name != p.ID {
				res.Others = append(res.Others, e)
			}
		}
		c <- res
	}
	d.mu.Lock()
	d.arenas = append(d.arenas, ar)
	d.mu.Unlock()
	return nil
}

// serveQueue puts a person in line with the rating its page sends (mu,
// sigma; a new player's when absent) and answers once matched.
func (l *lobby) serveQueue(w http.ResponseWriter, r *http.Request) {
	rating := matchmaker.NewRating()
	q := r.URL.Query()
	if s := q.Get("mu"); s != "" {
		mu, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(mu) || math.Abs(mu) > 1000 {
			http.Error(w, "mu: a rating, such as 25", http.StatusBadRequest)
			return
		}
		rating.Mu = mu
	}
	if s := q.Get("sigma"); s != "" {
		sigma, err := strconv.ParseFloat(s, 64)
		if err != nil || !(sigma > 0 && sigma <= 100) {
			http.Error(w, "sigma: an uncertainty, such as 8.33", http.StatusBadRequest)
			return
		}
		rating.Sigma = sigma
	}
	var rtts map[string]int
	if s := q.Get("rtt"); s != "" {
		ms, err := strconv.Atoi(s)
		if err != nil || ms < 1 || ms > 10000 {
			http.Error(w, "rtt: the round trip the page measured, in ms, 1 to 10000", http.StatusBadRequest)
			return
		}
		rtts = map[string]int{demoRegion: ms}
	}
	player := fmt.Sprintf("guest-%d", l.d.guests.Add(1))
	c := make(chan matchResult, 1)
	l.mu.Lock()
	err := l.m.Add(matchmaker.Ticket{ID: player, Mode: playMode, Players: []matchmaker.Player{{ID: player, Rating: rating}}, RTT: rtts}, time.Now())
	if err == nil {
		l.wait[player] = c
	}
	l.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	select {
	case res, ok := <-c:
		if !ok {
			http.Error(w, "no match found in time", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(res)
	case <-r.Context().Done(): // the page went away: out of line
		l.mu.Lock()
		l.m.Remove(player)
		delete(l.wait, player)
		l.mu.Unlock()
	}
}

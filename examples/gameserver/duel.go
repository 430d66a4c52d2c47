//go:build !js

package main

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/interest"
	"github.com/tongbu/tongbu/matchmaker"
)

// The duel: two players in a small arena of their own, a world of 4 x 4
// regions (64 m a side, a unit being 1/64 m), each with one skill, a bolt
// that hits within 10 m. Three hits win; a match still undecided after
// three minutes goes to the one with more life (a draw when equal), and a
// player who leaves forfeits.
const (
	boltSkill    = 1
	boltRange    = 10 * 64         // units: 10 m
	boltDamage   = 34              // of 100 life: three hits
	boltCooldown = time.Second     // between two casts
	duelLimit    = 3 * time.Minute // then the one with more life wins
	duelLinger   = time.Second     // the end on screen before the world closes
)

// duelConfig is every duel's world. Two players, whose life is the
// game: each hears the other's, and its own, five times a second (an MMO's
// default policy spaces a fighter's life out to a second, for bytes).
func duelConfig() interest.Config {
	return interest.Config{RegionSize: 1024, Width: 4, Height: 4, Hz: 16,
		Policy: interest.Policy{Rules: []interest.Rule{{Every: 200 * time.Millisecond}}}}
}

// spawn is where team's player starts: 16 m apart, either side of the
// arena's middle.
func spawn(team int) interest.Vec {
	return interest.Vec{X: int32(24*64 + team*16*64), Y: 32 * 64}
}

// duel is one match being played. Its fields are the world worker's,
// but for match and the lobby's pointers, set before the world starts.
type duel struct {
	lobby *lobby
	match matchmaker.Match
	world *engine.World
	name  string // the world's

	team   map[string]int         // by player: its team in match.Teams
	player map[interest.ID]string // by entity
	ready  map[interest.ID]int    // by entity: the first frame it may cast again
	limit  int                    // the frame the match is decided at
	over   bool
}

// TUTORIAL:world
// startDuel opens the world of match m: its players, and no one else,
// join it with their tickets, and the game's hooks place them, judge
// their skills and end the match.
func (l *lobby) startDuel(m matchmaker.Match) (*duel, error) {
	d := &duel{
		lobby:  l,
		match:  m,
		name:   "duel-" + m.ID,
		team:   map[string]int{},
		player: map[interest.ID]string{},
		ready:  map[interest.ID]int{},
	}
	for t, players := range m.Teams {
		for _, p := range players {
			d.team[p.ID] = t
		}
	}
	cfg := duelConfig()
	d.limit = int(duelLimit / cfg.WithDefaults().Period())
	w, err := l.srv.CreateWorld(d.name, engine.WorldConfig{
		Interest:   cfg,
		MaxPlayers: len(d.team),
		Join:       d.join,
		Leave:      d.leave,
		Tick:       d.tick,
	})
	if err != nil {
		return nil, err
	}
	d.world = w
	w.Do(func(w *interest.World) { w.OnAction(func(a interest.Action) { d.act(w, a) }) })
	return d, nil
}

// TUTORIAL:end

// join places a player of the match at its team's side; the world's
// tickets name the duel, so no one else gets in.
func (d *duel) join(w *interest.World, player string) (interest.ID, error) {
	team, ok := d.team[player]
	if !ok {
		return 0, fmt.Errorf("%s is not in match %s", player, d.match.ID)
	}
	at := spawn(team)
	id, err := w.Spawn(interest.Player, interest.Logic{Pos: at, Dest: at, Life: 100}, interest.Display{Name: player, Camp: uint8(team)})
	if err == nil {
		d.player[id] = player
	}
	return id, err
}

// leave: a player who leaves before the end forfeits.
func (d *duel) leave(w *interest.World, player string, id interest.ID) {
	w.Despawn(id)
	delete(d.player, id)
	if !d.over {
		d.end(1 - d.team[player])
	}
}

// TUTORIAL:skill
// act judges a player's action the world accepted: a bolt hits if its
// target was within range where the caster saw it when it cast
// (World.Reach: lag compensation), so that what was in range on the
// caster's screen is in range here, whatever its round trip.
func (d *duel) act(w *interest.World, a interest.Action) {
	if d.over || a.Kind != interest.ActionSkill || a.Skill != boltSkill || a.Target == a.Player {
		return
	}
	if _, ok := d.player[a.Target]; !ok {
		return // not a player of this duel
	}
	if w.Frame() < d.ready[a.Player] {
		return // cooling down: a client that casts too often gains nothing
	}
	d.ready[a.Player] = w.Frame() + int(boltCooldown/w.Config().Period())
	if dist, ok := w.Reach(a, a.Target); !ok || dist > boltRange {
		return // a miss
	}
	lg, _ := w.Logic(a.Target)
	life := max(int(lg.Life)-boltDamage, 0)
	w.Update(a.Target, func(lg *interest.Logic) { lg.Life = uint8(life) })
	if life == 0 {
		d.end(d.team[d.player[a.Player]]) // the caster's team wins
	}
}

// TUTORIAL:end

// tick decides a match that ran out of time.
func (d *duel) tick(w *interest.World, now time.Time) {
	if d.over || w.Frame() < d.limit {
		return
	}
	life := make([]int, len(d.match.Teams))
	for id, p := range d.player {
		if lg, ok := w.Logic(id); ok {
			life[d.team[p]] += int(lg.Life)
		}
	}
	switch {
	case life[0] > life[1]:
		d.end(0)
	case life[1] > life[0]:
		d.end(1)
	default:
		d.end(-1)
	}
}

// end ends the match on the world's worker: team winner won (-1: a
// draw). The ratings are stored, and the world closed, off the worker.
func (d *duel) end(winner int) {
	d.over = true
	go func() {
		err := d.lobby.accounts.rate(d.match.Teams, winner)
		d.lobby.ended(d, winner, err)
		time.Sleep(duelLinger)
		d.world.Close()
	}()
}

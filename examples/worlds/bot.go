//go:build !js

package main

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/engine"
	"github.com/tongbu/tongbu/examples/worlds/game"
	"github.com/tongbu/tongbu/interest"
)

// botState is what a bot has done, for the lobby's status and the tests.
type botState struct {
	mu      sync.Mutex
	world   string          // the world it is in
	moves   int             // worlds it followed its player to
	visited map[string]bool // worlds it has been in
}

func (s *botState) at(world string, moved bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.world = world
	s.visited[world] = true
	if moved {
		s.moves++
	}
}

// snapshot returns the bot's world, moves, and the worlds it has been in.
func (s *botState) snapshot() (string, int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var v []string
	for w := range s.visited {
		v = append(v, w)
	}
	return s.world, s.moves, v
}

// startBot runs a bot player: a native engine.Client over WebRTC, like a
// browser's, that walks back and forth across the field's border and, now
// and then, through the portals. Its client follows its player to every
// world by itself (engine.ClientConfig.OnMove only reports it).
func (l *lobby) startBot(name string) {
	st := &botState{visited: map[string]bool{}}
	l.mu.Lock()
	l.bots[name] = st
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for l.ctx.Err() == nil {
			err := l.playBot(name, st)
			if l.ctx.Err() != nil {
				return
			}
			l.cfg.Log.Info("bot: session ended; it joins again", "bot", name, "err", err)
			select {
			case <-l.ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}()
}

// playBot plays one session of a bot, until its connection ends.
func (l *lobby) playBot(name string, st *botState) error {
	ctx := l.ctx
	jctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	p, err := l.join(jctx, name)
	cancel()
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	c, err := engine.Dial(dctx, p.URL, p.Tickets[name], &engine.ClientConfig{
		OnMove: func(m engine.Move) { st.at(m.To, true) },
	})
	cancel()
	if err != nil {
		return err
	}
	defer c.Close()
	st.at(c.Target(), false)
	rng := rand.New(rand.NewPCG(game.PlayerID(name), uint64(time.Now().UnixNano())))
	var next time.Time
	t := time.NewTicker(time.Second / 20)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			if err := c.Update(now); err != nil {
				return err
			}
			is := c.Interest()
			is.Advance(now)
			me, ok := is.Self()
			if !ok || me.Moving() || now.Before(next) {
				continue
			}
			next = now.Add(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
			goal := botGoal(rng, c.Target(), me.Pos, c.InterestConfig())
			is.Move(step(me.Pos, goal, 3500), int32(32+rng.IntN(24)))
		}
	}
}

// botGoal is where a bot in world heads next: in the field, across the
// border between the cells, or (one time in four) to the portal; in the
// town, about, or (one time in two) back through the portal.
func botGoal(rng *rand.Rand, world string, at interest.Vec, c interest.Config) interest.Vec {
	m, _, isLine := cluster.SplitLine(world)
	if !isLine {
		m, _, _ = strings.Cut(world, "#")
	}
	w, h := int32(c.Width*c.RegionSize), int32(c.Height*c.RegionSize)
	if m == game.Town {
		if rng.IntN(2) == 0 {
			return game.TownPortal.Centre()
		}
		return interest.Vec{X: 2048 + rng.Int32N(w-3072), Y: 2048 + rng.Int32N(h-3072)}
	}
	if rng.IntN(4) == 0 {
		return game.FieldPortal.Centre()
	}
	border := w / 2
	x := border + 512 + rng.Int32N(3072)
	if at.X >= border {
		x = border - 512 - rng.Int32N(3072)
	}
	y := min(max(at.Y+rng.Int32N(4097)-2048, 512), h-512)
	return interest.Vec{X: x, Y: y}
}

// step is the point at most d from `from` on the way to `to` (a move
// goes at most MaxMove regions).
func step(from, to interest.Vec, d float64) interest.Vec {
	dx, dy := float64(to.X-from.X), float64(to.Y-from.Y)
	l := math.Hypot(dx, dy)
	if l <= d {
		return to
	}
	return interest.Vec{X: from.X + int32(dx*d/l), Y: from.Y + int32(dy*d/l)}
}

package world

import (
	"fmt"
	"io"
	"time"

	"github.com/tongbu/tongbu/bench/internal/bots"
	"github.com/tongbu/tongbu/bench/internal/harness"
	"github.com/tongbu/tongbu/interest"
)

// cmdTimeout is how long a command is followed: a client that has not
// had it by then counts it undelivered.
const cmdTimeout = 5 * time.Second

// clampTo keeps p inside the rectangle lo..hi.
func (s *battleSim) clampTo(p, lo, hi interest.Vec) interest.Vec {
	p.X = min(max(p.X, lo.X), hi.X)
	p.Y = min(max(p.Y, lo.Y), hi.Y)
	return p
}

// issue records a player's command for the baseline, which applies it
// when the uplink carrying it arrives.
func (s *battleSim) issue(c jxCmd) {
	c.due = s.frame + max(s.o.delay, 1)
	s.pending = append(s.pending, c)
}

// fight plays a fighter: a move every second, a cast every 2 s.
func (s *battleSim) fight(p *bplayer) {
	me, ok := p.c.Self()
	if !ok {
		return
	}
	f, hz := s.frame, s.cfg.Hz
	if f >= p.nextMove {
		p.nextMove = f + hz
		const reach = 384 // 6 m
		dest := s.clampTo(s.randIn(interest.Vec{X: me.Pos.X - reach, Y: me.Pos.Y - reach}, interest.Vec{X: me.Pos.X + reach, Y: me.Pos.Y + reach}), s.lo, s.hi)
		if dest != me.Pos && p.c.Move(dest, 24) == nil {
			s.issue(jxCmd{tag: cmdMove, id: p.id, frame: p.c.Frame(), src: me.Pos, dest: dest, speed: 24})
			s.give(p, true, dest)
		}
	}
	if f >= p.nextCast {
		p.nextCast = f + 2*hz
		target := s.targetFor(p, me.Pos)
		skill := uint16(100 + s.rng.IntN(8))
		if target != 0 && p.c.Skill(skill, target) == nil {
			s.issue(jxCmd{tag: cmdSkill, id: p.id, frame: p.c.Frame(), skill: skill, target: target})
			s.give(p, false, interest.Vec{})
			s.hit(target)
		}
	}
}

// targetFor picks p's target: one cast in four the nearest NPC in its
// region, else the nearest of eight enemies drawn at random.
func (s *battleSim) targetFor(p *bplayer, pos interest.Vec) interest.ID {
	n := bots.Nearest{From: pos}
	if s.rng.IntN(4) == 0 {
		s.w.Each(s.w.RegionOf(pos), func(id interest.ID, kind interest.Kind, lg *interest.Logic) {
			if kind == interest.NPC {
				n.Consider(id, lg.Pos)
			}
		})
		if n.ID != 0 {
			return n.ID
		}
	}
	for range 8 {
		q := s.players[s.rng.IntN(s.o.players/2)*2+int(1-p.camp)%2]
		if q.camp == p.camp {
			continue
		}
		if lg, ok := s.w.Logic(q.id); ok {
			n.Consider(q.id, lg.Pos)
		}
	}
	return n.ID
}

// hit takes 2-6 life off the target, in the world and the baseline; one
// below 20 drinks back to full. Both stay in combat.
func (s *battleSim) hit(id interest.ID) {
	lg, ok := s.w.Logic(id)
	if !ok {
		return
	}
	life := int(lg.Life) - 2 - s.rng.IntN(5)
	if life < 20 {
		life = 100
	}
	_ = s.w.Update(id, func(lg *interest.Logic) { lg.Life, lg.Combat = uint8(life), true })
	s.base.ents[id].life = uint8(life)
}

// run1 plays a runner: out, in, stay, out again.
func (s *battleSim) run1(p *bplayer) {
	me, ok := p.c.Self()
	if !ok {
		return
	}
	f, hz := s.frame, s.cfg.Hz
	switch p.state {
	case runOut:
		if f >= p.until {
			p.state, p.goal = runIn, s.randIn(s.lo, s.hi)
			s.runTo(p, me.Pos, p.goal)
		}
	case runIn:
		if me.Moving() {
			return
		}
		if me.Pos == p.goal {
			p.state, p.until = runStay, f+3*hz
			return
		}
		s.runTo(p, me.Pos, p.goal)
	case runStay:
		if f >= p.until {
			p.state, p.home = runLeave, s.outside()
			s.runTo(p, me.Pos, p.home)
		}
	case runLeave:
		if me.Moving() {
			return
		}
		if me.Pos == p.home {
			p.state, p.until = runOut, f+hz+s.rng.IntN(2*hz)
			return
		}
		s.runTo(p, me.Pos, p.home)
	}
}

// runTo sends runner p from pos towards dest at the top speed, no
// further than a move reaches.
func (s *battleSim) runTo(p *bplayer, pos, dest interest.Vec) {
	dest = s.clampTo(clampTo(dest, pos, int32(s.cfg.MaxMove)), interest.Vec{}, s.cfg.Bounds())
	speed := int32(s.cfg.MaxSpeed)
	if p.c.Move(dest, speed) == nil {
		s.issue(jxCmd{tag: cmdMove, id: p.id, frame: p.c.Frame(), src: pos, dest: dest, speed: speed})
	}
}

// give starts following a fighter's command, while measuring: every other
// player whose range holds the fighter's region is waited for.
func (s *battleSim) give(p *bplayer, move bool, dest interest.Vec) {
	if !s.measuring {
		return
	}
	c := &sentCmd{actor: p, move: move, dest: dest, frame: s.frame, got: make([]bool, len(s.players)), knew: make([]bool, len(s.players))}
	at := s.regionOf(p.id)
	for _, q := range s.players {
		if q == p || !near(s.regionOf(q.id), at) {
			c.got[q.index] = true
			continue
		}
		c.left++
		if _, ok := q.c.Entity(p.id); ok {
			c.knew[q.index] = true
			c.leftKnew++
		}
	}
	if c.leftKnew == 0 {
		s.latKnew = append(s.latKnew, 0)
	}
	if c.left == 0 {
		return
	}
	s.sent = append(s.sent, c)
}

// regionOf returns the region entity id is in, by the world.
func (s *battleSim) regionOf(id interest.ID) interest.Region {
	lg, _ := s.w.Logic(id)
	return s.w.RegionOf(lg.Pos)
}

// heardCast credits player p's client with a cast it heard from actor:
// the oldest of actor's casts on their way that p had not had.
func (s *battleSim) heardCast(p *bplayer, actor interest.ID) {
	a := s.byID[actor]
	if a == nil {
		return
	}
	for _, c := range s.sent {
		if c.actor == a && !c.move && !c.got[p.index] {
			s.got(c, p)
			return
		}
	}
}

// got records that player p's client has command c.
func (s *battleSim) got(c *sentCmd, p *bplayer) {
	c.got[p.index] = true
	lat := time.Duration(s.frame-c.frame) * s.period
	if c.knew[p.index] {
		if c.leftKnew--; c.leftKnew == 0 {
			s.latKnew = append(s.latKnew, lat)
		}
	}
	if c.left--; c.left == 0 {
		c.closed = true
		s.latency = append(s.latency, lat)
	}
}

// checkSent credits every client that now knows a move's destination,
// stops waiting for clients the fighter's range no longer holds, and
// drops the commands done or followed for cmdTimeout.
func (s *battleSim) checkSent() {
	timeout := int(cmdTimeout / s.period)
	keep := s.sent[:0]
	for _, c := range s.sent {
		at := s.regionOf(c.actor.id)
		for _, q := range s.players {
			if c.closed {
				break
			}
			if c.got[q.index] {
				continue
			}
			if !near(s.regionOf(q.id), at) {
				s.got(c, q) // left the range: no longer waited for
				continue
			}
			if c.move {
				if v, ok := q.c.Entity(c.actor.id); ok && v.Logic.Dest == c.dest {
					s.got(c, q)
				}
			}
		}
		if c.closed {
			continue
		}
		if s.frame-c.frame >= timeout {
			s.undeliv++
			if c.leftKnew > 0 {
				s.undelivKnew++
			}
			continue
		}
		keep = append(keep, c)
	}
	clear(s.sent[len(keep):])
	s.sent = keep
}

// heard is the baseline's report that a runner was sent an entity's
// state sync this frame: its client knows it once the packet arrives.
func (s *battleSim) heard(player, id interest.ID) {
	learnAt(s.byID[player].knows, id, s.frame+s.o.delay)
}

// follow tracks the runners' ranges: a block region a range takes in
// opens an episode, closed for each side when its client knows every
// entity that was there then and has stayed since. It applies the baseline
// client's removal rule (out of range for half a second) too.
func (s *battleSim) follow(open bool) {
	f := s.frame
	grace := s.cfg.Hz / 2
	for _, p := range s.players {
		if !p.runner {
			continue
		}
		reg := s.regionOf(p.id)
		if reg != p.reg && s.measuring && open {
			s.openEpisodes(p, p.reg, reg)
		}
		p.reg = reg
		p.open = trackRange(f, grace, reg, s.base, p.c, p.knows, p.open)
	}
}

// openEpisodes opens an episode for each block region that runner p's
// range took in on moving from region from to region to.
func (s *battleSim) openEpisodes(p *bplayer, from, to interest.Region) {
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			r := interest.Region{X: to.X + dx, Y: to.Y + dy}
			if !s.inBlock(r) || near(from, r) {
				continue
			}
			e := &episode{reg: r, start: s.frame, ours: -1, base: -1}
			for _, id := range s.base.regions[s.base.index(r)].ents {
				if id != p.id {
					e.ids = append(e.ids, id)
				}
			}
			if len(e.ids) > 0 {
				s.episodes = append(s.episodes, e)
				p.open = append(p.open, e)
			}
		}
	}
}

// battleFigures are the in-memory run's figures the WebRTC run prints
// beside its own: the baseline's, and ours in memory.
type battleFigures struct {
	down, baseDown           float64       // fighters' bytes down a second, mean
	cmd99, baseCmd99         time.Duration // command to every other client
	newEntity, baseNewEntity time.Duration // runner knows a block region, p99
	baseCensored             int           // baseline episodes never known
}

// report prints the measured window's figures beside the baseline's and
// the RESULT line, and returns them.
func (s *battleSim) report(out io.Writer, tick, baseTick []time.Duration, st0 interest.Stats, wall time.Duration) (battleFigures, error) {
	secs := s.o.seconds
	var down, base, up, runDown []int64
	for _, p := range s.players {
		if p.runner {
			runDown = append(runDown, int64(float64(p.bytes)/secs))
			continue
		}
		down = append(down, int64(float64(p.bytes)/secs))
		base = append(base, int64(float64(p.baseBytes)/secs))
		up = append(up, int64(float64(p.upBytes)/secs))
	}
	var ours, baseEp []time.Duration
	gone, open, baseCensored := 0, 0, 0
	for _, e := range s.episodes {
		switch {
		case e.ours >= 0:
			ours = append(ours, time.Duration(e.ours)*s.period)
		case e.gone:
			gone++
		default:
			open++
		}
		switch {
		case e.base >= 0:
			baseEp = append(baseEp, time.Duration(e.base)*s.period)
		default:
			// Never known while in range: at least as long as it was
			// (or as the run went on after it began).
			end := s.frame
			if e.gone {
				end = e.end
			}
			baseEp = append(baseEp, time.Duration(end-e.start)*s.period)
			baseCensored++
		}
	}
	atLeast := ""
	if baseCensored > len(baseEp)/100 {
		atLeast = ">="
	}
	// The baseline broadcasts each command in the tick that applies it,
	// with no byte budget: its latency is the two links' delays.
	baseLat := time.Duration(max(s.o.delay, 1)+s.o.delay) * s.period
	st := s.w.Stats()
	d := func(a, b int64) float64 { return float64(b-a) / secs / float64(len(s.players)) }
	fmt.Fprintf(out, "(simulated in %v; server measured by %s)\n\n", wall.Round(time.Millisecond), harness.ThreadClock)
	fmt.Fprintf(out, "%-40s %14s %14s\n", "", "interest", "JX1 baseline")
	fmt.Fprintf(out, "%-40s %14.2f %14.2f\n", "server ms per tick, mean", mean(tick)/1e6, mean(baseTick)/1e6)
	fmt.Fprintf(out, "%-40s %14.2f %14.2f\n", "server ms per tick, p99", ms(quantile(tick, .99)), ms(quantile(baseTick, .99)))
	fmt.Fprintf(out, "%-40s %14.0f %14.0f\n", "fighter bytes down a second, mean", mean(down), mean(base))
	fmt.Fprintf(out, "%-40s %14d %14d\n", "fighter bytes down a second, p99", quantile(down, .99), quantile(base, .99))
	fmt.Fprintf(out, "%-40s %14.0f %14s\n", "fighter bytes up a second, mean", mean(up), "")
	fmt.Fprintf(out, "%-40s %14.0f %14.0f\n", "command to every other client, p50 ms", ms(quantile(s.latKnew, .5)), ms(baseLat))
	fmt.Fprintf(out, "%-40s %14.0f %14.0f\n", "command to every other client, p99 ms", ms(quantile(s.latKnew, .99)), ms(baseLat))
	fmt.Fprintf(out, "%-40s %14.0f %14s\n", "  and to runners just in, p99 ms", ms(quantile(s.latency, .99)), "")
	fmt.Fprintf(out, "%-40s %14.0f %14s\n", "runner knows a block region, p50 ms", ms(quantile(ours, .5)), atLeast+fmt.Sprint(int64(ms(quantile(baseEp, .5)))))
	fmt.Fprintf(out, "%-40s %14.0f %14s\n", "runner knows a block region, p99 ms", ms(quantile(ours, .99)), atLeast+fmt.Sprint(int64(ms(quantile(baseEp, .99)))))
	fmt.Fprintf(out, "%-40s %14d %14d\n", "  regions followed, never known", len(s.episodes)-len(ours), baseCensored)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "commands followed %d: %d not had within %v by every client that knew the fighter, %d by every client in range;\n",
		len(s.latency)+s.undeliv, s.undelivKnew, cmdTimeout, s.undeliv)
	fmt.Fprintln(out, "  \"every other client\" is every client in range that knew the fighter when it gave the command; one that did not")
	fmt.Fprintln(out, "  (a runner just in) takes a move once it learns the fighter, which \"runner knows a block region\" measures")
	fmt.Fprintf(out, "runners' bytes down a second %.0f mean\n", mean(runDown))
	fmt.Fprintf(out, "  block regions left before known %d, still open at the end %d\n", gone, open)
	fmt.Fprintf(out, "interest per player a second: %.1f packets down; entities sent by forced sync %.1f, discovery %.1f, state sync %.1f; budget deferrals %d; uplink drops %v\n",
		d(st0.PacketsOut, st.PacketsOut), d(st0.ForcedSyncs, st.ForcedSyncs), d(st0.Discoveries, st.Discoveries), d(st0.StateSyncs, st.StateSyncs),
		st.Deferred-st0.Deferred, drops(st0, st))
	fmt.Fprintf(out, "baseline: the same commands byte-aligned (%s) plus %d-byte NPC_NORMAL_SYNC every 2 frames per region; no headers counted;\n", jxLayouts, jxSyncSize)
	fmt.Fprintf(out, "  each command broadcast in the tick it arrives, no budget (its latency is the links' %d frames); positions differ from the world's: %d\n",
		max(s.o.delay, 1)+s.o.delay, s.base.diverged(s.w))
	fmt.Fprintln(out)
	fmt.Fprintln(out, harness.Result("battle",
		"transport", "mem",
		"players", s.o.players, "runners", s.o.runners, "npcs", len(s.npcs),
		"one_way_ms", ms(time.Duration(s.o.delay)*s.period),
		"client_down_bps_mean", int64(mean(down)+0.5),
		"client_down_bps_p99", quantile(down, .99),
		"client_up_bps_mean", int64(mean(up)+0.5),
		"command_to_others_p99_ms", int64(ms(quantile(s.latKnew, .99))+0.5),
		"command_to_all_p99_ms", int64(ms(quantile(s.latency, .99))+0.5),
		"commands_undelivered", s.undelivKnew,
		"tick_p99_ms", ms(quantile(tick, .99)),
		"new_entity_sync_p99_ms", int64(ms(quantile(ours, .99))+0.5),
		"baseline_client_down_bps_mean", int64(mean(base)+0.5),
		"baseline_command_to_others_p99_ms", int64(ms(baseLat)+0.5),
		// A lower bound when the baseline's client left regions before
		// it knew them (baseline_regions_never_known).
		"baseline_new_entity_sync_p99_ms", int64(ms(quantile(baseEp, .99))+0.5),
		"baseline_regions_never_known", baseCensored,
	))
	return battleFigures{
		down: mean(down), baseDown: mean(base),
		cmd99: quantile(s.latKnew, .99), baseCmd99: baseLat,
		newEntity: quantile(ours, .99), baseNewEntity: quantile(baseEp, .99), baseCensored: baseCensored,
	}, nil
}

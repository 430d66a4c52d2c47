package world

import "github.com/tongbu/tongbu/interest"

// Player states of the model.
const (
	stIdle = iota
	stWalk
	stApproach
	stFight
	stRest
)

// issue records a player's command for the baseline, which applies it when
// the world does: when the uplink carrying it arrives.
func (s *worldSim) issue(c jxCmd) {
	c.due = s.frame + max(s.o.delay, 1)
	s.pending = append(s.pending, c)
}

// drive plays one player's state machine through its client.
func (s *worldSim) drive(p *wplayer) {
	me, ok := p.c.Self()
	if !ok {
		return
	}
	f := s.frame
	switch p.state {
	case stIdle, stRest:
		if f < p.until {
			return
		}
		if p.state == stRest {
			p.life = 100
			s.setLife(p.id, p.life, false)
		}
		if p.city >= 0 {
			s.cityDecide(p, me)
		} else {
			s.fieldDecide(p, me)
		}
	case stWalk:
		if !me.Moving() {
			s.idle(p)
		}
	case stApproach:
		npc := s.byNPC[p.target]
		if npc.life <= 0 || (npc.fighter != 0 && npc.fighter != p.id) {
			p.target = 0
			s.idle(p)
			return
		}
		if me.Moving() {
			return
		}
		npc.fighter, npc.nextHit = p.id, f+s.cfg.Hz
		p.state, p.nextHit = stFight, f
		_ = s.w.SetTarget(p.id, npc.id)
		s.setLife(p.id, p.life, true)
	case stFight:
		npc := s.byNPC[p.target]
		if f >= p.nextHit {
			if p.c.Skill(uint16(100+s.rng.IntN(8)), npc.id) == nil {
				s.issue(jxCmd{tag: cmdSkill, id: p.id, frame: p.c.Frame(), skill: 100, target: npc.id})
				npc.life = max(0, npc.life-20-s.rng.IntN(16))
				s.setLife(npc.id, npc.life, npc.life > 0)
			}
			p.nextHit = f + s.cfg.Hz*3/2
		}
		if npc.life > 0 {
			return
		}
		npc.fighter, npc.rise = 0, f+20*s.cfg.Hz
		s.setState(npc.id, 1)
		p.target = 0
		_ = s.w.SetTarget(p.id, 0)
		s.setLife(p.id, p.life, false)
		if p.life < 40 {
			p.state, p.until = stRest, f+8*s.cfg.Hz
			return
		}
		s.idle(p)
	}
}

// idle lets p stand for a while: 1-4 s in a city, 0.5-2.5 s in the
// field.
func (s *worldSim) idle(p *wplayer) {
	p.state = stIdle
	if p.city >= 0 {
		p.until = s.frame + s.secs(1, 4)
	} else {
		p.until = s.frame + s.secs(0.5, 2.5)
	}
}

// move sends p towards dest at speed through its client, no further than
// a move reaches, and gives the baseline the same command; a move the
// client refuses leaves p idle.
func (s *worldSim) move(p *wplayer, me interest.Logic, dest interest.Vec, speed int32) {
	dest = clampTo(s.clamp(dest), me.Pos, int32(s.cfg.MaxMove))
	if p.c.Move(dest, speed) != nil {
		s.idle(p)
		return
	}
	s.issue(jxCmd{tag: cmdMove, id: p.id, frame: p.c.Frame(), src: me.Pos, dest: dest, speed: speed})
	p.state = stWalk
}

// cityDecide is a city player's next step after standing: an emote one
// time in ten, else a walk within 4 regions, inside its city.
func (s *worldSim) cityDecide(p *wplayer, me interest.Logic) {
	if r := s.rng.Float64(); r < 0.1 {
		if r < 0.05 {
			if p.c.Jump() == nil {
				s.issue(jxCmd{tag: cmdJump, id: p.id, frame: p.c.Frame()})
			}
		} else {
			data := []byte{byte(s.rng.IntN(32)), 0}
			if p.c.Custom(1, data) == nil {
				s.issue(jxCmd{tag: cmdCustom, id: p.id, frame: p.c.Frame(), ctag: 1, data: data})
			}
		}
		s.idle(p)
		return
	}
	c := s.cities[p.city]
	rs := int32(s.cfg.RegionSize)
	dest := s.around(me.Pos, 4*s.cfg.RegionSize)
	dest.X = min(max(dest.X, int32(c[0].X)*rs), int32(c[1].X+1)*rs-1)
	dest.Y = min(max(dest.Y, int32(c[0].Y)*rs), int32(c[1].Y+1)*rs-1)
	speed := int32(24)
	if s.rng.IntN(2) == 0 {
		speed = int32(s.cfg.MaxSpeed)
	}
	s.move(p, me, dest, speed)
}

// fieldDecide is a field player's next step after standing: 30% of the
// time a fight with the nearest free NPC in range, else a trip around
// its party's spot, which moves one time in five.
func (s *worldSim) fieldDecide(p *wplayer, me interest.Logic) {
	if s.rng.Float64() < 0.3 {
		if npc := s.nearestFree(me.Pos); npc != nil {
			p.target = npc.id
			lg, _ := s.w.Logic(npc.id)
			s.move(p, me, s.around(lg.Pos, 48), int32(s.cfg.MaxSpeed))
			if p.state == stWalk {
				p.state = stApproach
			} else {
				p.target = 0
			}
			return
		}
	}
	if s.rng.IntN(5) == 0 {
		for range 8 {
			q := s.clamp(s.around(p.spot, 3*s.cfg.RegionSize))
			if s.cityOf(s.w.RegionOf(q)) < 0 {
				p.spot = q
				break
			}
		}
	}
	speed := int32(s.cfg.MaxSpeed)
	if s.rng.IntN(5) == 0 {
		speed = 24
	}
	s.move(p, me, s.around(p.spot, 3*s.cfg.RegionSize), speed)
}

// nearestFree returns the nearest standing, living NPC no one fights, in
// the 3x3 range of pos.
func (s *worldSim) nearestFree(pos interest.Vec) *wnpc {
	var best *wnpc
	var bestD int64
	s.w.Each(s.w.RegionOf(pos), func(id interest.ID, kind interest.Kind, lg *interest.Logic) {
		if kind != interest.NPC || lg.Moving() {
			return
		}
		n := s.byNPC[id]
		if n.life <= 0 || n.fighter != 0 {
			return
		}
		if d := pos.DistSq(lg.Pos); best == nil || d < bestD {
			best, bestD = n, d
		}
	})
	return best
}

// npcLogic is the NPCs' part of the model: wander, strike back, rise.
func (s *worldSim) npcLogic() {
	f := s.frame
	for _, n := range s.npcs {
		switch {
		case n.life <= 0:
			if f >= n.rise {
				n.life, n.next = 100, f+s.secs(5, 20)
				s.setLife(n.id, 100, false)
				s.setState(n.id, 0)
			}
		case n.fighter != 0:
			if f >= n.nextHit {
				p := s.byPlayer[n.fighter]
				if s.w.Skill(n.id, 200, p.id) == nil {
					s.base.command(jxCmd{tag: cmdSkill, id: n.id, frame: s.w.Frame(), skill: 200, target: p.id})
				}
				p.life = max(1, p.life-3-s.rng.IntN(6))
				s.setLife(p.id, p.life, true)
				n.nextHit = f + 2*s.cfg.Hz
			}
		case f >= n.next:
			lg, _ := s.w.Logic(n.id)
			dest := s.clamp(s.around(n.home, s.cfg.RegionSize*3/2))
			speed := int32(12 + s.rng.IntN(13))
			if s.w.Move(n.id, dest, speed) == nil {
				s.base.command(jxCmd{tag: cmdMove, id: n.id, frame: s.w.Frame(), src: lg.Pos, dest: dest, speed: speed})
			}
			n.next = f + s.secs(5, 20)
		}
	}
}

// setLife changes an entity's life and combat flag in the world (clients
// learn it by state sync) and in the baseline (it rides the next
// NPC_NORMAL_SYNC).
func (s *worldSim) setLife(id interest.ID, life int, combat bool) {
	_ = s.w.Update(id, func(lg *interest.Logic) { lg.Life, lg.Combat = uint8(life), combat })
	s.base.ents[id].life = uint8(life)
	if s.groups != nil {
		s.groupLife(id, life, combat)
	}
}

// setState changes an entity's state (an NPC's 1: dead) in the world and
// in the baseline.
func (s *worldSim) setState(id interest.ID, state uint8) {
	_ = s.w.Update(id, func(lg *interest.Logic) { lg.State = state })
	s.base.ents[id].state = state
}

package world

import (
	"time"

	"github.com/tongbu/tongbu/interest"
)

// -groups: the seed's field sets (seed 000 §5.1.4: the fields of an
// entity that share its ID, in sets sent every 1 s, every 10 s and every
// minute), as a game declares them (interest.Config.Groups), and the
// model's changes to them:
//   - "second" (at most every 1 s): hit points (16 bits, the life in the
//     logic data times 137) and a buff mask (16 bits): every hit changes
//     them, a fight adds a debuff, the end of a fight clears them;
//   - "ten" (at most every 10 s): gear, weapon, armour and mount (16 bits
//     each): a player changes one every 30-90 s;
//   - "minute" (at most every minute): guild (24 bits) and title (16
//     bits): a player changes its title every 3-10 minutes.
//
// Every entity has all three set from its spawn (NPCs their template's
// gear and no guild).
func seedGroups() []interest.Group {
	return []interest.Group{
		{Name: "second", Every: time.Second, Fields: []interest.Field{{Name: "hp", Bits: 16}, {Name: "buffs", Bits: 16}}},
		{Name: "ten", Every: 10 * time.Second, Fields: []interest.Field{{Name: "weapon", Bits: 16}, {Name: "armour", Bits: 16}, {Name: "mount", Bits: 16}}},
		{Name: "minute", Every: time.Minute, Fields: []interest.Field{{Name: "guild", Bits: 24}, {Name: "title", Bits: 16}}},
	}
}

var groupsModel = "  -groups: the seed's field sets, every 1 s (hp, buffs: each hit), 10 s (gear: a player's every 30-90 s), 1 min (guild, title: every 3-10 min)"

// groupState is what the model keeps of an entity's groups.
type groupState struct {
	buffs          uint16
	gear           [3]int64
	guild, title   int64
	gearAt, nameAt int // frames of the next changes (players)
}

// initGroups sets every entity's groups.
func (s *worldSim) initGroups() error {
	s.groups = make([]groupState, len(s.byPlayer))
	f := s.frame
	for _, n := range s.npcs {
		g := &s.groups[n.id]
		g.gear = [3]int64{int64(n.id % 64), int64(n.id % 64), 0}
		if err := s.setGroups(n.id, g, 100); err != nil {
			return err
		}
	}
	for _, p := range s.players {
		g := &s.groups[p.id]
		g.gear = [3]int64{s.rng.Int64N(1 << 16), s.rng.Int64N(1 << 16), s.rng.Int64N(1 << 16)}
		g.guild, g.title = s.rng.Int64N(1<<24), s.rng.Int64N(1<<16)
		g.gearAt, g.nameAt = f+s.secs(0, 90), f+s.secs(0, 600)
		if err := s.setGroups(p.id, g, 100); err != nil {
			return err
		}
	}
	return nil
}

func (s *worldSim) setGroups(id interest.ID, g *groupState, life int) error {
	if err := s.w.SetGroup(id, 0, int64(life*137), int64(g.buffs)); err != nil {
		return err
	}
	if err := s.w.SetGroup(id, 1, g.gear[:]...); err != nil {
		return err
	}
	return s.w.SetGroup(id, 2, g.guild, g.title)
}

// groupLife changes the "second" group with a hit or the end of a fight.
func (s *worldSim) groupLife(id interest.ID, life int, combat bool) {
	g := &s.groups[id]
	if combat {
		g.buffs |= 1 << s.rng.IntN(16)
	} else {
		g.buffs = 0
	}
	_ = s.w.SetGroup(id, 0, int64(life*137), int64(g.buffs))
}

// groupLogic changes the players' gear and titles when they are due.
func (s *worldSim) groupLogic(f int) {
	for _, p := range s.players {
		g := &s.groups[p.id]
		if f >= g.gearAt {
			g.gear[s.rng.IntN(3)] = s.rng.Int64N(1 << 16)
			_ = s.w.SetGroup(p.id, 1, g.gear[:]...)
			g.gearAt = f + s.secs(30, 90)
		}
		if f >= g.nameAt {
			g.title = s.rng.Int64N(1 << 16)
			_ = s.w.SetGroup(p.id, 2, g.guild, g.title)
			g.nameAt = f + s.secs(180, 600)
		}
	}
}

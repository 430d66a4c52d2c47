package world

import "github.com/tongbu/tongbu/interest"

// episode is a region a sampled player's range took in: the entities there
// then, and when each side first knew all of those still there.
type episode struct {
	reg        interest.Region
	start      int
	ids        []interest.ID
	ours, base int // frames to know them all; -1 while not yet
	gone       bool
	end        int // the frame the range let the region go, when gone
}

// heard is the baseline's report that a sampled player was sent an
// entity's state sync this frame: its client knows it once the packet
// arrives.
func (s *worldSim) heard(player, id interest.ID) {
	learnAt(s.byPlayer[player].knows, id, s.frame+s.o.delay)
}

// learnAt records in a baseline client's knowledge that it holds entity
// id from frame due on (when the sync sent now arrives).
func learnAt(knows map[interest.ID]*baseKnown, id interest.ID, due int) {
	if k := knows[id]; k != nil {
		k.doom = 0
		k.from = min(k.from, due)
		return
	}
	knows[id] = &baseKnown{from: due}
}

// follow tracks the sampled players' ranges: a region a range takes in
// opens an episode (if anyone is there), closed for each side when its
// client knows every entity that was there then and has stayed since. It also
// applies the baseline client's removal rule (the interest client's: out
// of range for half a second).
func (s *worldSim) follow(open bool) {
	f := s.frame
	grace := s.cfg.Hz / 2
	for _, p := range s.players {
		lg, _ := s.w.Logic(p.id)
		reg := s.w.RegionOf(lg.Pos)
		moved := reg != p.reg
		if moved && s.measuring {
			s.playerCross++
		}
		if !p.sampled {
			p.reg = reg
			continue
		}
		if moved && s.measuring && open {
			s.openEpisodes(p, p.reg, reg)
		}
		p.reg = reg
		p.open = trackRange(f, grace, reg, s.base, p.c, p.knows, p.open)
	}
}

// trackRange does a followed player's part of a frame f, in region reg:
// its baseline client forgets what was out of its range for more than
// grace frames, and each open episode closes for each side whose client
// knows every entity that was in the region then and has stayed there
// since, or is gone when the range let the region go. It returns the episodes still
// open, in open's storage.
func trackRange(f, grace int, reg interest.Region, base *jx1, c *interest.Client, knows map[interest.ID]*baseKnown, open []*episode) []*episode {
	for id, k := range knows {
		if near(reg, base.region(id)) {
			k.doom = 0
		} else if k.doom++; k.doom > grace {
			delete(knows, id)
		}
	}
	keep := open[:0]
	for _, e := range open {
		if !near(reg, e.reg) {
			e.gone, e.end = true, f
			continue
		}
		ours, theirs := e.ours < 0, e.base < 0
		ids := e.ids[:0]
		for _, id := range e.ids {
			if base.region(id) != e.reg {
				// It left: no longer required, even if it comes back (it
				// is then an entity new to the range on its own, which the
				// episode of the region it came from, or its broadcast,
				// covers).
				continue
			}
			ids = append(ids, id)
			if _, ok := c.Entity(id); ours && !ok {
				ours = false
			}
			if k := knows[id]; theirs && (k == nil || k.from > f) {
				theirs = false
			}
		}
		e.ids = ids
		if ours {
			e.ours = f - e.start
		}
		if theirs {
			e.base = f - e.start
		}
		if e.ours < 0 || e.base < 0 {
			keep = append(keep, e)
		}
	}
	clear(open[len(keep):])
	return keep
}

// near reports whether region b is in the 3x3 range around region a.
func near(a, b interest.Region) bool {
	return a.X-b.X >= -1 && a.X-b.X <= 1 && a.Y-b.Y >= -1 && a.Y-b.Y <= 1
}

// openEpisodes opens an episode for each region that p's range took in
// on moving from region from to region to, with the entities there then
// but p; a region with no one there is only counted.
func (s *worldSim) openEpisodes(p *wplayer, from, to interest.Region) {
	for dy := -1; dy <= 1; dy++ {
		for dx := -1; dx <= 1; dx++ {
			r := interest.Region{X: to.X + dx, Y: to.Y + dy}
			if r.X < 0 || r.Y < 0 || r.X >= s.cfg.Width || r.Y >= s.cfg.Height || near(from, r) {
				continue
			}
			ids := s.base.regions[s.base.index(r)].ents
			e := &episode{reg: r, start: s.frame, ours: -1, base: -1}
			for _, id := range ids {
				if id != p.id {
					e.ids = append(e.ids, id)
				}
			}
			if len(e.ids) == 0 {
				s.epEmpt++
				continue
			}
			s.episodes = append(s.episodes, e)
			p.open = append(p.open, e)
		}
	}
}

package interest

// Inherit takes over what old knows of the world: its clock, the
// entities it knows, with their logic and display data, and its own
// entity with the commands the world has not acknowledged. A client that
// follows its player into the next cell of a map cut into cells inherits
// the one it leaves, so that nothing it sees goes missing while the new
// cell's first packets come: the cells share the map, its entity IDs and
// its frames. old must be a client of the same map for the same player,
// and is not used afterwards; a client of another map or player is
// ignored.
//
// The unacknowledged commands go to the new cell in the sequence they
// had, which the old cell handed over with the entity (World.Join): the
// new cell skips those the old one applied and applies the others, so
// a move, jump, skill or custom command in flight at the crossing is
// applied exactly once. The new cell must join it with
// World.JoinInherited; one that joins it with Join (an older server)
// takes a client that inherited with InheritMoves.
func (c *Client) Inherit(old *Client) { c.inherit(old, false) }

// InheritMoves inherits as Inherit does, for a new cell that does not go
// on in the old cell's command sequence (World.Join; engine servers
// before wire version 8): the unacknowledged moves are sent
// again as new commands, checked there against the movement history
// that came with the entity (a move the old cell applied is applied
// again to the same effect), and the unacknowledged jumps, skills and
// custom commands are dropped, as the old cell may have applied them.
func (c *Client) InheritMoves(old *Client) { c.inherit(old, true) }

func (c *Client) inherit(old *Client, movesOnly bool) {
	if old == nil || old == c || old.self != c.self || old.lay.cfg.Width != c.lay.cfg.Width || old.lay.cfg.Height != c.lay.cfg.Height ||
		old.lay.cfg.RegionSize != c.lay.cfg.RegionSize || old.lay.cfg.MaxEntities != c.lay.cfg.MaxEntities || old.lay.cfg.Hz != c.lay.cfg.Hz {
		return
	}
	c.synced, c.base, c.baseAt, c.frame = old.synced, old.base, old.baseAt, old.frame
	c.me, c.haveMe, c.lossy = old.me, old.haveMe, old.lossy
	c.unacked = c.unacked[:0]
	if movesOnly {
		for _, cmd := range old.unacked {
			if cmd.tag == cmdMove {
				c.unacked = append(c.unacked, cmd)
			}
		}
		c.firstCmd, c.nextCmd = c.nextCmd, c.nextCmd+uint16(len(c.unacked))
	} else {
		c.unacked = append(c.unacked, old.unacked...)
		c.firstCmd, c.nextCmd = old.firstCmd, old.nextCmd
	}
	c.region = old.region
	for id, k := range old.ents {
		if id == c.self || c.ents[id] != nil {
			continue
		}
		cp := *k
		cp.active = true
		cp.lastOK = false // moves are numbered per world
		c.ents[id] = &cp
		c.active = append(c.active, activeEntry{id: id, k: &cp})
	}
	c.full = true
	for id, d := range old.displays {
		if _, ok := c.displays[id]; !ok {
			c.displays[id] = d
		}
	}
}

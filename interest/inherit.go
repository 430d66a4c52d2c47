package interest

// Inherit takes over what old knows of the world: its clock, the
// entities it knows, with their logic and display data, and its own
// entity with the moves the world has not acknowledged. A client that
// follows its player into the next cell of a map cut into cells inherits
// the one it leaves, so that nothing it sees goes missing while the new
// cell's first packets come: the cells share the map, its entity IDs and
// its frames. old must be a client of the same map for the same player,
// and is not used afterwards; a client of another map or player is
// ignored.
func (c *Client) Inherit(old *Client) {
	if old == nil || old == c || old.self != c.self || old.lay.cfg.Width != c.lay.cfg.Width || old.lay.cfg.Height != c.lay.cfg.Height ||
		old.lay.cfg.RegionSize != c.lay.cfg.RegionSize || old.lay.cfg.MaxEntities != c.lay.cfg.MaxEntities || old.lay.cfg.Hz != c.lay.cfg.Hz {
		return
	}
	c.synced, c.base, c.baseAt, c.frame = old.synced, old.base, old.baseAt, old.frame
	// The player's own entity goes on, and so do its moves the world has
	// not acknowledged: the old cell may have dropped them as it handed the
	// entity over. They are sent to the new cell again, as new commands,
	// checked there against the movement history that came with the
	// entity (a move the old cell did apply is applied again to the same
	// effect). Jumps, skills and custom commands are not sent again: the
	// old cell may have applied them.
	c.me, c.haveMe, c.lossy = old.me, old.haveMe, old.lossy
	c.unacked = c.unacked[:0]
	for _, cmd := range old.unacked {
		if cmd.tag == cmdMove {
			c.unacked = append(c.unacked, cmd)
		}
	}
	c.firstCmd, c.nextCmd = c.nextCmd, c.nextCmd+uint16(len(c.unacked))
	c.region = old.region
	for id, k := range old.ents {
		if id == c.self || c.ents[id] != nil {
			continue
		}
		cp := *k
		cp.active = true
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

package interest

// Inherit takes over what old knows of the world: its clock, and the
// entities it knows, with their logic and display data. A client that
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
	// The player's own entity waits for the new cell's first word of it
	// (Self reports false until then, for a frame or two): the commands
	// the old cell had not applied when it let the player go are lost
	// with it, so the old prediction may be ahead of what the new cell
	// holds, and the player's next command must start from the latter.
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

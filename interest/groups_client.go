package interest

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// groupRec is one decoded group record of a display message.
type groupRec struct {
	id   ID
	g    int
	vals []int64
}

// Group returns the values of entity id's field group g (an index into
// Config.Groups) as the client last heard them, and whether it has heard
// them. The slice is the client's: read it, do not keep it past the next
// Deliver.
func (c *Client) Group(id ID, g int) ([]int64, bool) {
	if g < 0 || g >= len(c.lay.cfg.Groups) {
		return nil, false
	}
	gs := c.groups[id]
	if gs == nil || gs[g] == nil {
		return nil, false
	}
	return gs[g], true
}

// RequestGroup asks the world for entity id's group g now: a group sent
// only on request (Group.Request), or any other the game wants at once.
// The answer comes on the reliable channel (Group has it a round trip
// later); the world answers for entities in the player's range, within
// its request rate.
func (c *Client) RequestGroup(id ID, g int) error {
	if g < 0 || g >= len(c.lay.cfg.Groups) {
		return fmt.Errorf("%w: group %d of %d", ErrConfig, g, len(c.lay.cfg.Groups))
	}
	if id == 0 || int(id) >= c.lay.cfg.MaxEntities {
		return fmt.Errorf("%w: entity %d", ErrUnknown, id)
	}
	k := gkey{id, g}
	if _, ok := c.wantGrp[k]; !ok {
		c.wantGrp[k] = ask{}
	}
	return nil
}

// pickGroups takes up to maxUpGroups of the group requests due for
// (re)asking, and gives up on those asked too often.
func (c *Client) pickGroups(dst []gkey, now time.Time) []gkey {
	for k, a := range c.wantGrp {
		switch {
		case a.tries >= maxTries && now.Sub(a.at) >= retryAfter:
			delete(c.wantGrp, k)
		case len(dst) < maxUpGroups && (a.tries == 0 || now.Sub(a.at) >= retryAfter):
			dst = append(dst, k)
			c.wantGrp[k] = ask{at: now, tries: a.tries + 1}
		}
	}
	return dst
}

// readGroupRecords reads a display message's group records into recs
// (reused), after its display entries, in a world with Config.Groups:
// one record a group of each entity.
func (c *Client) readGroupRecords(r *codec.Reader, recs []groupRec) []groupRec {
	n := int(r.ReadUint(maxGroupRecords))
	ng := len(c.lay.cfg.Groups)
	k := 0
	for i := 0; i < n && r.Err() == nil; i++ {
		id := c.lay.readID(r)
		mask := r.ReadBits(ng)
		if mask == 0 && r.Err() == nil {
			r.Fail(fmt.Errorf("%w: group record of entity %d with no group", ErrMalformed, id))
		}
		for g := 0; g < ng && r.Err() == nil; g++ {
			if mask&(1<<g) == 0 {
				continue
			}
			if k == len(recs) {
				recs = append(recs, groupRec{})
			}
			rec := &recs[k]
			rec.id, rec.g = id, g
			rec.vals = c.lay.readGroupValues(r, g, rec.vals)
			k++
		}
	}
	return recs[:k]
}

// applyGroups keeps what a display message said: its entities' groups
// count as fetched (a newcomer's come with its display data), and each
// record's values replace the group's, for the entities the client knows.
func (c *Client) applyGroups(disp []displayEntry, recs []groupRec) {
	n := len(c.lay.cfg.Groups)
	for _, e := range disp {
		if c.groups[e.id] == nil {
			c.groups[e.id] = make([][]int64, n)
		}
	}
	for _, rec := range recs {
		delete(c.wantGrp, gkey{rec.id, rec.g})
		if _, known := c.ents[rec.id]; !known && rec.id != c.self && c.groups[rec.id] == nil {
			continue // out of its sight: it fetches the groups when it learns the entity
		}
		gs := c.groups[rec.id]
		if gs == nil {
			gs = make([][]int64, n)
			c.groups[rec.id] = gs
		}
		gs[rec.g] = append(gs[rec.g][:0], rec.vals...)
		c.stats.GroupRecords++
	}
}

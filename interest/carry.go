package interest

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// carried is what a player's observer hands to the next cell with its
// entity (Border.Write, in the handover op): the frame of its last
// correction, its speed limit, and the entity's recent positions, against
// which the moves stamped before the crossing, which its client sends the
// new cell again (Client.Inherit), are checked.
type carried struct {
	lastCorr int   // frame
	limit    int32 // the player's speed limit (0: the world's MaxSpeed)
	from     int   // the frame of hist[0]
	hist     []Vec // positions at frames from, from+1, ...
	at       Logic // the entity as handed over, for the frames after
	// The last command the old cell applied (the border message's
	// trailer; cmds is false from a sender that does not write it).
	cmds    bool
	haveCmd bool
	cmdSeq  uint16
}

// carryFrames is how much of a player's history goes with it: commands
// in flight at a crossing are stamped within a round trip of it.
const carryFrames = 32

// writeCarried writes a handed-over entity's observer state, or a 0 bit
// when it has none (an NPC, a player without a client here).
func (b *Border) writeCarried(o *observer) {
	wr, w := &b.wr, b.w
	wr.WriteBool(o != nil)
	if o == nil {
		return
	}
	wr.WriteUvarint(uint64(min(max(w.frame-o.lastCorr, 0), w.lay.history)))
	limit := o.limitAt(w, w.frame)
	if limit == int32(w.cfg.MaxSpeed) {
		limit = 0
	}
	wr.WriteUvarint(uint64(limit))
	n := min(carryFrames, len(o.hist)-1, w.frame+1)
	wr.WriteUvarint(uint64(n))
	for f := w.frame - n + 1; f <= w.frame; f++ {
		w.lay.writePos(wr, o.at(f))
	}
}

// readCarried reads what writeCarried wrote, for a message of the
// sender's frame.
func (b *Border) readCarried(r *codec.Reader, frame int) *carried {
	w := b.w
	c := &carried{}
	ago := r.ReadUvarint()
	limit := r.ReadUvarint()
	n := r.ReadUvarint()
	if ago > uint64(w.lay.history) || limit > uint64(w.cfg.MaxSpeed) || n > carryFrames {
		r.Fail(fmt.Errorf("%w: carried state: %d frames since the correction, limit %d, %d positions", ErrMalformed, ago, limit, n))
		return nil
	}
	c.lastCorr, c.limit, c.from = frame-int(ago), int32(limit), frame-int(n)+1
	c.hist = make([]Vec, n)
	for i := range c.hist {
		c.hist[i] = w.lay.readPos(r)
	}
	return c
}

// adopt makes a new observer go on from what its entity's old cell
// carried; the frames between the crossing and now are filled from the
// entity's path at the crossing. inherited: the client goes on in the
// old cell's command sequence (World.JoinInherited).
func (o *observer) adopt(w *World, c *carried, inherited bool) {
	at := c.at
	last := c.from + len(c.hist) - 1
	switch {
	case !inherited:
	case c.cmds: // its commands go on in the old cell's sequence: each is applied once
		o.haveCmd, o.cmdSeq, o.ackDue = c.haveCmd, c.cmdSeq, c.haveCmd
	default:
		// An old cell that does not say what it applied: the client's
		// jumps, skills and custom commands stamped by the crossing may
		// have been, and are dropped, as before the cells said it.
		o.movesTo = last
	}
	o.lastCorr = min(c.lastCorr, w.frame)
	if c.limit > 0 {
		o.limits = append(o.limits[:0], speedLimit{frame: c.from, speed: c.limit, prev: c.limit})
	}
	for f := max(c.from, w.frame-len(o.hist)+2); f <= w.frame; f++ {
		if f <= last {
			o.hist[f%len(o.hist)] = c.hist[f-c.from]
		} else {
			o.hist[f%len(o.hist)] = StepN(at.Pos, at.Dest, at.Speed, f-last)
		}
	}
}

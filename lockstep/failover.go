package lockstep

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// A match that outlives its server (SPEC.md §9.6). The room that cuts a
// match taps every frame it cuts to a standby (Tap); if the room's server
// stops, the standby continues the match with RestoreRoom, on the
// original room's schedule, extends its log with the frames the players
// carried back (Client.Carry, Room.Extend) and takes each player back
// where its client stands (Rejoin): no frame is cut twice, and a client
// keeps its lockstep state across the move.

// CarryFrames is how many of the newest frames a client keeps to carry
// to a room that continues its match: the standby lags the room it
// stands by for by a few milliseconds, so a handful is all that is ever
// asked for.
const CarryFrames = 64

// Tap calls f with every frame the room cut so far, then with each frame
// as it is cut, in order from frame 0: the frame's full body
// (EncodedFrame.Full; Rel is not set), valid only during the call. It
// runs on the room's goroutine, as the room cuts: f must not block. A
// nil f stops the tap. It is how a standby follows a room.
func (r *Room) Tap(f func(EncodedFrame)) {
	r.tap = f
	if f == nil {
		return
	}
	for i := range r.next {
		body, bits := r.log.body(i, true)
		f(EncodedFrame{Number: i, Full: body, FullBits: bits})
	}
}

// FullBody returns frame n's body in full, as the room encodes it (the
// room's bytes: valid until its next cut), or false for a frame not cut.
func (r *Room) FullBody(n int) ([]byte, int, bool) {
	if n < 0 || n >= r.next {
		return nil, 0, false
	}
	body, bits := r.log.body(n, true)
	return body, bits, true
}

// Start returns the moment of the room's frame 0 on its schedule: frame
// n is due at Start plus n frame periods (in a strict room, the schedule
// as its waits so far moved it). A room that continues the match
// (RestoreRoom) takes it, so that every client's frame clock stays true.
func (r *Room) Start() time.Time { return r.start.Add(r.strict.paused) }

// RestoreRoom returns a room that continues a match another room cut
// frames 0 .. len(frames)-1 of, on that room's schedule (start, its
// Start): the frames, in order, as the tap gave them (their full
// bodies), are its log, and its next cut is frame len(frames), as soon
// as it is due (a room that took over late cuts the frames it owes at
// once). Every player is away until it Rejoins (or Joins); until then
// its input is made up as late, not gone, so that a player coming back
// within moments does not flicker out of the match: Leave marks one that
// will not come back. A room with a Simulation runs it through the log
// as it would catch up, within its budget per tick.
func RestoreRoom(cfg Config, start time.Time, frames []EncodedFrame, out Sender) (*Room, error) {
	r, err := NewRoom(cfg, start, out)
	if err != nil {
		return nil, err
	}
	if err := r.adopt(frames); err != nil {
		return nil, err
	}
	for i := range r.players {
		p := &r.players[i]
		p.away, p.restoring, p.live = true, true, false
	}
	r.restored = r.next
	return r, nil
}

// Extend appends to the log of a room made by RestoreRoom frames the
// room it continues had cut and its log lacked (the players carried them
// back: Client.Carry): frames[0] must be the room's next frame, and the
// room must not have cut one of its own yet. The frames must be bodies
// as the room encodes them, in order.
func (r *Room) Extend(frames []EncodedFrame) error {
	if r.next != r.restored {
		return fmt.Errorf("%w: the room cut frames of its own since it was restored (next %d, restored %d)", ErrConfig, r.next, r.restored)
	}
	if err := r.adopt(frames); err != nil {
		return err
	}
	r.restored = r.next
	return nil
}

// Restored returns how many frames of the match the room took from the
// room it continues (RestoreRoom, Extend): 0 for a room that cut its
// match from the start.
func (r *Room) Restored() int { return r.restored }

// adopt appends frames cut elsewhere to the log, checking each.
func (r *Room) adopt(frames []EncodedFrame) error {
	if r.auth != nil && len(frames) > 0 {
		return fmt.Errorf("%w: an authoritative room's frames are views; restore the match from its inputs", ErrConfig)
	}
	for _, ef := range frames {
		if ef.Number != r.next {
			return fmt.Errorf("%w: frame %d where frame %d is next", ErrMalformed, ef.Number, r.next)
		}
		rd := codec.NewReader(ef.Full)
		f, err := readFrame(rd, ef.Number, len(r.players), nil, &r.mem)
		if err != nil {
			return err
		}
		if rd.Pos() != ef.FullBits {
			return fmt.Errorf("%w: frame %d: %d bits of body, %d read", ErrMalformed, ef.Number, ef.FullBits, rd.Pos())
		}
		cf := cutFrame{Frame: f, fullBits: ef.FullBits, full: r.mem.keep(ef.Full[:(ef.FullBits+7)/8])}
		r.log.add(cf)
		r.next++
		r.stats.Frames++
		if r.tap != nil {
			r.tap(EncodedFrame{Number: f.Number, Full: cf.full, FullBits: cf.fullBits})
		}
		r.log.cool()
	}
	return nil
}

// Rejoin gives slot back to a client that kept its lockstep state (the
// player's client followed the match here from the room this one
// continues): it holds frames 0 .. have-1 and the room it left took its
// inputs up to sequence number acked. The room streams it only the
// frames it lacks, and takes its inputs after acked; a have beyond the
// room's log is refused (ErrMalformed), and the client must Join as a
// fresh one.
func (r *Room) Rejoin(slot, have int, acked uint32, now time.Time) error {
	if slot < 0 || slot >= len(r.players) {
		return fmt.Errorf("%w: %d", ErrSlot, slot)
	}
	if have < 0 || have > r.next {
		return fmt.Errorf("%w: the client holds %d frames, the room %d", ErrMalformed, have, r.next)
	}
	r.Leave(slot)
	p := &r.players[slot]
	p.away, p.restoring = false, false
	p.q.reconnects++
	p.reset(now, r.start, r.cfg.Redundancy)
	p.have, p.inAck = have, acked
	r.life.startFrom(p, have, r.sendable(slot))
	p.evFrom, p.evRerun = have, false
	if r.ver != nil {
		r.ver.joined(slot, p.evFrom)
	}
	if r.rec != nil {
		r.rec.RecordJoin(slot, r.next)
	}
	return nil
}

// startFrom starts a catch-up stream to p of frames from .. end-1, for a
// client that holds the frames before from: none when it is short of
// nothing but what the unreliable channel brings.
func (l *lifecycle) startFrom(p *player, from, end int) {
	if end-from <= maxRunFrames {
		return // the newest frames' packets bring them: the client plays on live
	}
	p.live = false
	p.stream = stream{active: true, next: from, end: end}
	l.streaming = true
}

// Carry returns the frames from .. Have()-1 the client still holds (the
// newest CarryFrames of them at most), encoded in full as the room
// encodes them: what a room that continues the match may lack (Extend).
// It returns nil in an authoritative room, whose frames are the player's
// views. The bodies are new slices.
func (c *Client) Carry(from int) []EncodedFrame {
	if c.players() == authPlayers || from >= c.have {
		return nil
	}
	from = max(from, c.have-CarryFrames, 0)
	out := make([]EncodedFrame, 0, c.have-from)
	var w codec.Writer
	for n := from; n < c.have; n++ {
		f := &c.held[n%CarryFrames]
		if f.Number != n || f.Slots == nil {
			continue // never held (a client that joined after it)
		}
		w.Reset(nil)
		encodeFrameBody(&w, f, nil)
		out = append(out, EncodedFrame{Number: n, Full: w.Bytes(), FullBits: w.Len()})
	}
	return out
}

// Acked returns the sequence number of the client's newest input the
// room acknowledged with all those before it: what Rejoin takes.
func (c *Client) Acked() uint32 {
	if len(c.unacked) > 0 {
		return c.unacked[0].seq - 1
	}
	return c.nextSeq - 1
}

// Reconnected tells the client that its packets now come from another
// connection (its match moved to another server, and the client kept its
// state): the downlink's packet count starts anew there, and so do a
// strict room's pauses (the room that continues the match takes the
// schedule as they moved it: Room.Start).
func (c *Client) Reconnected() {
	c.seqSeen, c.run, c.maxRun, c.runDecay = false, 0, 0, 0
	c.rebasePauses()
}

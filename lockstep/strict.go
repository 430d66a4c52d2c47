package lockstep

import (
	"fmt"
	"math/bits"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Strict lockstep (Config.Strict): the room cuts a frame only when every
// live player has sealed it, that is said with a packet that it will send
// no more input for it (uplink.sealed), so every input is in. While it
// waits, the room's clock stops: the frames after the wait are cut on a
// schedule moved by it, which every frames packet states (writePause) so
// that clients' clocks and jitter buffers move with it. A player waited
// for longer than Config.StrictWait is given up on (its input made up,
// as a late player's) until its seals are ahead of the room again.

// strictRoom is a strict room's state.
type strictRoom struct {
	paused    time.Duration // the schedule's delay so far, from all the waits
	pauseFrom int           // the first frame cut after the latest wait
	waiting   bool          // the next frame is due and some player has not sealed it
	since     time.Duration // when it was due, from the room's start
	told      uint32        // the slots the peers were last told the room waits for
	sentAt    time.Duration // when the last packets of the wait went out
	gaveUp    uint32        // the slots given up on during this wait
	resent    bool          // the tick resent the newest frames (tickLife runs)
}

// Strict rooms' bounds.
const (
	// waitNoticeAfter is how long a wait lasts before the peers are told
	// whom they wait for (and the engine gets EventWaiting): a wait of a
	// frame or two is a link's jitter, not something to show.
	waitNoticeAfter = 150 * time.Millisecond
	// waitPollMax bounds how long a waiting room goes between two looks
	// at the seals (Room.NextCut).
	waitPollMax = 4 * time.Millisecond
)

// trailerBits is the room a frames packet keeps for what follows its
// frames: a strict room's pause (writePause).
func (r *Room) trailerBits() int {
	if r.cfg.Strict {
		return 1 + 2*80 // a bit and two uvarints of up to 10 bytes
	}
	return 0
}

// cutDue returns when frame n is due, from the room's start: on the
// schedule, moved by the waits so far.
func (r *Room) cutDue(n int) time.Duration { return r.cfg.cutOffset(n) + r.strict.paused }

// unsealed returns the players the room waits for before it cuts frame
// n, a bit per slot: those present (not Left) and live (not catching up;
// a seal since its Join says a client is live, before its word that it
// is) who have not been given up on and have not sealed n. A player the
// room has not heard from yet is waited for too: a host that starts a
// strict room before every player is there marks the absent ones gone
// (Leave) until they join.
func (r *Room) unsealed(n int) uint32 {
	var wait uint32
	for i := range r.players {
		p := &r.players[i]
		if !p.away && (p.live || p.sealed > 0) && !p.givenUp && p.sealed <= n {
			wait |= 1 << i
		}
	}
	return wait
}

// strictHold reports whether the strict room must wait before it cuts
// r.next, due at due, at time at (both from the room's start); when it
// may cut, it moves the room's schedule by the wait that just ended.
func (r *Room) strictHold(due, at time.Duration) bool {
	st := &r.strict
	wait := r.unsealed(r.next)
	if wait != 0 && at-due >= r.cfg.StrictWait {
		// Waited long enough: the room plays on without them.
		for s := wait; s != 0; s &= s - 1 {
			r.players[bits.TrailingZeros32(s)].givenUp = true
		}
		st.gaveUp |= wait
		r.stats.GivenUp += uint64(bits.OnesCount32(wait))
		wait = 0
	}
	if wait != 0 {
		if !st.waiting {
			st.waiting, st.since, st.sentAt, st.gaveUp = true, due, at, 0
		}
		if at-due >= waitNoticeAfter && wait != st.told {
			if st.told == 0 {
				r.stats.Waits++
				r.events = append(r.events, Event{Kind: EventWaiting, Frame: r.next, Players: slotList(wait)})
			}
			r.tellWait(wait)
		}
		if at-st.sentAt >= r.period {
			// The newest frames again, every period, for a player who
			// lost them; and the catch-up streams and spectators go on.
			st.sentAt, st.resent = at, true
			r.sendAll(r.next-1, at)
		}
		return true
	}
	if st.waiting {
		waited := at - due
		st.paused += waited
		st.pauseFrom = r.next
		r.stats.Waited += waited
		if st.told != 0 || st.gaveUp != 0 {
			r.events = append(r.events, Event{Kind: EventWaited, Frame: r.next, After: waited, Players: slotList(st.gaveUp)})
		}
		if st.told != 0 {
			r.tellWait(0)
		}
		st.waiting, st.gaveUp = false, 0
	}
	return false
}

// seal takes a player's seal from a packet, after its inputs.
func (r *Room) seal(p *player, sealed int) error {
	if sealed == 0 || p.spectator {
		return nil
	}
	if sealed > r.next+r.cfg.MaxAhead+1 {
		r.stats.Dropped[DropFuture]++
		return fmt.Errorf("%w: seals frame %d, next cut is %d", ErrMalformed, sealed, r.next)
	}
	p.sealed = max(p.sealed, sealed)
	if p.givenUp && p.sealed > r.next {
		p.givenUp = false // in time again: waited for again
	}
	return nil
}

// tellWait tells every peer whom the room waits for (none: the wait is
// over), on the reliable channel.
func (r *Room) tellWait(wait uint32) {
	r.strict.told = wait
	w := &r.w
	w.Reset(r.buf[:0])
	encodeWait(w, r.next, wait)
	msg := w.Bytes()
	r.buf = msg[:0]
	for slot := range r.players {
		if p := &r.players[slot]; !p.away {
			r.sendReliable(slot, p, msg)
		}
	}
	for id, s := range r.specs.all() {
		r.sendReliable(id, s, msg)
	}
}

// sendAll sends every present player its packet with frames up to newest.
func (r *Room) sendAll(newest int, at time.Duration) {
	for slot := range r.players {
		if p := &r.players[slot]; !p.away {
			r.send(slot, p, min(newest, r.sendable(slot)-1), at)
		}
	}
}

// slotList returns the slots of a bit set, ascending; nil for none.
func slotList(set uint32) []int {
	var out []int
	for s := set; s != 0; s &= s - 1 {
		out = append(out, bits.TrailingZeros32(s))
	}
	return out
}

// encodeWait writes a lifecycle message of whom a strict room waits for
// before it cuts frame: a bit per slot, none when the wait is over.
func encodeWait(w *codec.Writer, frame int, wait uint32) {
	writeLife(w, lifeMore)
	w.WriteUvarint(lifeWait)
	w.WriteUvarint(uint64(frame))
	w.WriteUvarint(uint64(wait))
}

// decodeWait reads what encodeWait wrote, for a room of players slots.
func decodeWait(r *codec.Reader, players int) (frame int, wait uint32, err error) {
	f, m := r.ReadUvarint(), r.ReadUvarint()
	if err := r.Done(); err != nil {
		return 0, 0, fmt.Errorf("%w: wait: %w", ErrMalformed, err)
	}
	if players < 1 || players > MaxPlayers || f > maxFrame || m >= 1<<players {
		return 0, 0, fmt.Errorf("%w: waiting for slots %b before frame %d, of %d players", ErrMalformed, m, f, players)
	}
	return int(f), uint32(m), nil
}

package lockstep

import (
	"math/bits"
	"time"
)

// A room's downlink: each peer's packet of frames, the retransmissions of
// what it has not acknowledged, its notices, and the reliable channel.

// encodeViews encodes every player's view of the frame the simulation
// just ran, and sends each present player the further parts of its view
// at once, on the reliable channel: the head follows in frames packets.
func (r *Room) encodeViews() {
	n := r.auth.frames(0)
	cut, overflow := r.auth.encodeFrame(&r.mem, n)
	r.stats.ViewOverflow += overflow
	if cut != 0 {
		r.events = append(r.events, Event{Kind: EventViewCut, Frame: n, Players: slotList(uint32(cut))})
	}
	for slot := range r.players {
		if p := &r.players[slot]; !p.away {
			for _, part := range r.auth.viewParts(slot, n) {
				r.sendReliable(slot, p, part)
			}
		}
	}
}

// viewParts returns the further parts of peer id's view of frame n, for a
// catch-up stream: none outside an authoritative room.
func (r *Room) viewParts(id, n int) [][]byte {
	if r.auth == nil {
		return nil
	}
	return r.auth.viewParts(id, n)
}

// send builds and sends one player's packet: the input acknowledgement,
// the newest frames it does not hold (the newest plus its redundancy, or
// more when several were cut at once), and retransmissions of older frames
// it reported missing.
func (r *Room) send(slot int, p *player, newest int, at time.Duration) {
	first := max(p.have, newest-int(p.redundancy), 0)
	if newest-first+1 > maxRunFrames {
		first = newest - maxRunFrames + 1
	}
	w := &r.w
	w.Reset(r.buf[:0])
	back := uint32(0)
	if p.hasMargin && p.marginSeq <= p.inAck {
		back = p.inAck - p.marginSeq
	} else {
		p.hasMargin = false // the input is beyond the contiguous ack: report it later
	}
	downlinkHeader(w, p.seq, p.inAck, p.hasMargin, int(p.margin), back)
	w.WriteUvarint(uint64(first))
	countAt := w.Len()
	w.WriteUint(0, maxRunFrames) // placeholder, rewritten below
	run := 0
	for n := first; n <= newest; n++ {
		body, bits := r.body(slot, n, run == 0)
		if w.Len()+bits+16+r.trailerBits() > packetBits {
			break
		}
		w.WriteBitString(body, bits)
		run++
	}
	// Retransmissions: frames older than the run that the player lacks,
	// at most once every few frames each.
	if at-p.heard > retransmitSilence {
		first = newest // a player who went quiet gets the newest frame alone until it reports again
	}
	retransAt, sentRetrans := w.Len(), 0
	if p.have < first { // else nothing older is missing, and the stream is not read
		sentRetrans = r.retransmit(slot, p, first)
	} else {
		w.WriteUint(0, maxRetransmits)
	}
	if r.cfg.Strict {
		writePause(w, r.strict.pauseFrom, r.strict.paused)
	}
	msg := w.Bytes()
	patchUint(msg, countAt, uint64(run), maxRunFrames)
	if sentRetrans > 0 {
		patchUint(msg, retransAt, uint64(sentRetrans), maxRetransmits)
	}
	r.buf = msg[:0]
	r.stats.Retransmits += uint64(sentRetrans)
	p.hasMargin = false
	e := echoEntry{at: uint32(at / time.Microsecond), seq: p.seq, ok: true}
	p.recent[p.seq%2] = e
	p.echo[p.seq%echoRing] = e
	p.seq++
	r.stats.Packets++
	r.sendUnreliable(slot, p, msg)
	if p.noticed {
		r.sendNotices(slot, p)
	}
}

// retransmit writes the retransmission part of a player's packet: the
// frames before first that it lacks, each at most once every few frames,
// as many as fit. It returns how many it wrote.
func (r *Room) retransmit(slot int, p *player, first int) int {
	w := &r.w
	if p.stream.active {
		first = 0 // the catch-up stream brings the old frames
	}
	var retransBuf [maxRetransmits]int
	retrans := retransBuf[:0]
	for n, looked := max(p.have, p.stream.end), 0; n < first && len(retrans) < maxRetransmits && looked < 4*maxRetransmits; n, looked = n+1, looked+1 {
		if off := n - p.have - 1; off >= 0 && off < int(p.maskLen) && p.mask&(1<<off) != 0 {
			continue // held
		}
		if last, ok := p.retransAt[n]; ok && r.next-last < retransmitEvery {
			continue
		}
		retrans = append(retrans, n)
	}
	w.WriteUint(0, maxRetransmits) // the count, patched by send
	sent := 0
	prevNum := -1
	for _, n := range retrans {
		body, bits := r.body(slot, n, true)
		if w.Len()+bits+40+r.trailerBits() > packetBits {
			break
		}
		w.WriteUvarint(uint64(n - prevNum - 1))
		w.WriteBitString(body, bits)
		prevNum = n
		if p.retransAt == nil {
			p.retransAt = make(map[int]int)
		}
		p.retransAt[n] = r.next
		p.retransWait = true
		sent++
	}
	return sent
}

// sendNotices sends a player the notices about its late inputs.
func (r *Room) sendNotices(slot int, p *player) {
	w := &r.w
	for ns := p.notices; len(ns) > 0; {
		k := min(len(ns), 63)
		w.Reset(r.buf[:0])
		encodeNotices(w, ns[:k])
		r.sendReliable(slot, p, w.Bytes())
		ns = ns[k:]
	}
	p.notices, p.noticed = p.notices[:0], false
}

// body returns what frame n looks like on the wire to peer: its inputs
// (in full, or relative to the frame before), or in an authoritative room
// the player's view.
func (r *Room) body(id, n int, full bool) ([]byte, int) {
	if r.auth != nil {
		return r.auth.view(id, n)
	}
	return r.log.body(n, full)
}

// sendable returns how many frames, from frame 0, can be sent to peer id:
// the frames cut, or in an authoritative room the views computed.
func (r *Room) sendable(id int) int {
	if r.auth != nil {
		return r.auth.frames(id)
	}
	return r.next
}

// peer returns the player or spectator with id, or nil.
func (r *Room) peer(id int) *player {
	switch {
	case id >= 0 && id < len(r.players):
		return &r.players[id]
	case id >= len(r.players):
		return r.specs.find(id)
	}
	return nil
}

func (r *Room) sendUnreliable(id int, p *player, msg []byte) {
	p.q.bytesDown += uint64(len(msg))
	if err := r.out.SendUnreliable(id, msg); err != nil {
		r.stats.SendErrors++
	}
}

func (r *Room) sendReliable(id int, p *player, msg []byte) {
	p.q.bytesDown += uint64(len(msg))
	if err := r.out.SendReliable(id, msg); err != nil {
		r.stats.SendErrors++
	}
}

// packetBits is the room's budget for one downlink packet.
const packetBits = maxPacketBytes * 8

// retransmitSilence is how long a player may stay silent before the room
// stops retransmitting to it.
const retransmitSilence = time.Second

// retransmitEvery is how many frames the room waits before retransmitting
// the same missing frame again.
const retransmitEvery = 3

// patchUint overwrites a field written by WriteUint(_, max) at bit pos,
// a byte at a time.
func patchUint(b []byte, pos int, v, max uint64) {
	for n := bits.Len64(max); n > 0; {
		i, s := pos/8, pos%8
		k := min(n, 8-s)
		m := byte((1<<k - 1) << s)
		b[i] = b[i]&^m | byte(v<<s)&m
		v >>= k
		pos += k
		n -= k
	}
}

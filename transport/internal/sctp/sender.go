package sctp

import (
	"encoding/binary"
	"fmt"
	"time"
)

// handleSack takes the peer's SACK: what it acknowledged leaves the
// outstanding list, what it reports missing is counted, unreliable chunks
// it misses twice are given up, reliable ones three times are resent.
func (a *Assoc) handleSack(c Chunk, t time.Duration) error {
	if a.st != stateEstablished {
		return nil
	}
	s, err := parseSack(c)
	if err != nil {
		return err
	}
	if tsnLE(a.nextTSN, s.cum) {
		a.close(fmt.Errorf("%w: SACK of TSN %d, never sent (next %d)", ErrProtocol, s.cum, a.nextTSN))
		return a.err
	}
	if tsnLess(s.cum, a.cumAck) {
		return nil // older than one already taken
	}
	advanced := s.cum != a.cumAck
	acked := 0
	var sample time.Duration = -1
	for a.outHead < len(a.out) && tsnLE(a.out[a.outHead].tsn, s.cum) {
		oc := &a.out[a.outHead]
		if !oc.acked {
			acked += a.ack(oc)
			if oc.sends == 1 && !oc.abandoned {
				sample = t - oc.sent
			}
		}
		if oc.rtx {
			a.nrtx--
		}
		*oc = outChunk{}
		a.outHead++
	}
	a.cumAck = s.cum
	a.compact()
	// The highest TSN this SACK acknowledges for the first time: only the
	// chunks missing below it get a miss indication (HTNA, RFC 9260
	// §7.2.4), so a SACK that repeats an earlier one costs nothing more.
	var highest uint32
	newly := false
	var prevEnd uint16
	for i := 0; i < s.ngaps; i++ {
		start, end := s.gap(i)
		if start == 0 || end < start {
			return fmt.Errorf("%w: SACK gap %d-%d", ErrMalformed, start, end)
		}
		if start <= prevEnd {
			// Gap blocks go up and do not overlap (RFC 9260 §3.3.4): the
			// rest are ignored, so that no chunk is visited twice.
			break
		}
		prevEnd = end
		lo, hi := s.cum+uint32(start), s.cum+uint32(end)
		if tsnLE(a.nextTSN, hi) {
			a.close(fmt.Errorf("%w: SACK gap up to TSN %d, never sent", ErrProtocol, hi))
			return a.err
		}
		k := a.index(lo)
		if k < 0 {
			continue
		}
		for k = a.nextLive(k); k < len(a.out) && tsnLE(a.out[k].tsn, hi); k = a.nextLive(k + 1) {
			oc := &a.out[k]
			acked += a.ack(oc)
			oc.acked = true
			a.settled(k)
			if oc.sends == 1 {
				sample = t - oc.sent
			}
			highest, newly = oc.tsn, true
		}
	}
	if sample >= 0 {
		a.rttSample(sample)
	}
	// Miss indications: every chunk still missing below the highest newly
	// acknowledged.
	for k := a.nextLive(a.outHead); newly && k < len(a.out) && tsnLess(a.out[k].tsn, highest); k = a.nextLive(k + 1) {
		oc := &a.out[k]
		if oc.rtx {
			continue
		}
		oc.misses++
		switch {
		case !oc.reliable && oc.misses >= 2:
			a.abandon(k)
		case oc.reliable && oc.misses >= 3:
			oc.rtx = true
			a.nrtx++
			oc.misses = 0
			if !a.inRecovery {
				a.inRecovery, a.recoverTSN = true, a.nextTSN-1
				a.ssthresh = max(a.cwnd/2, 4*a.cfg.MTU)
				a.cwnd = a.ssthresh
				a.pba = 0
			}
		}
	}
	if a.inRecovery && tsnLE(a.recoverTSN, s.cum) {
		a.inRecovery = false
	}
	a.peerRwnd = max(int(s.rwnd)-a.outBytes, 0)
	if advanced {
		a.errCount = 0
		if acked > 0 && !a.inRecovery {
			if a.cwnd <= a.ssthresh {
				a.cwnd += min(acked, a.cfg.MTU)
			} else {
				a.pba += acked
				if a.pba >= a.cwnd {
					a.pba -= a.cwnd
					a.cwnd += a.cfg.MTU
				}
			}
		}
	}
	switch {
	case a.flight == 0:
		a.t3 = 0
	case advanced:
		a.t3 = t + a.rto
	}
	if !tsnLess(a.cumAck, a.advAck) {
		a.fwdAt = 0
	}
	if tsnLess(a.advAck, a.cumAck) {
		a.advAck = a.cumAck
	} else if tsnLess(a.cumAck, a.advAck) {
		a.fwdOwed = true // the peer has not taken the last FORWARD-TSN
	}
	a.advance()
	return nil
}

// ack counts an acknowledged chunk out of flight and returns its reliable
// bytes.
func (a *Assoc) ack(oc *outChunk) int {
	if oc.abandoned {
		return 0
	}
	a.outBytes -= oc.size
	if !oc.reliable {
		return 0
	}
	a.flight -= oc.size
	a.rel.release(oc.slab, oc.size)
	oc.data, oc.slab = nil, nil
	return oc.size
}

// abandon gives up the unreliable chunk out[k].
func (a *Assoc) abandon(k int) {
	oc := &a.out[k]
	oc.abandoned = true
	a.outBytes -= oc.size
	a.stats.Abandoned++
	a.settled(k)
}

// advance moves the Advanced.Peer.Ack.Point over abandoned and
// acknowledged chunks; past the cumulative ack, a FORWARD-TSN is owed.
func (a *Assoc) advance() {
	if !a.peerFwd {
		return
	}
	for k := a.index(a.advAck + 1); k >= a.outHead && k < len(a.out); k++ {
		a.work++
		oc := &a.out[k]
		if !oc.abandoned && !oc.acked {
			break
		}
		a.advAck = oc.tsn
	}
	if tsnLess(a.cumAck, a.advAck) {
		a.fwdOwed = true
	}
}

// index returns the position of tsn in out, or -1.
func (a *Assoc) index(tsn uint32) int {
	if a.outHead == len(a.out) {
		return -1
	}
	k := a.outHead + int(tsn-a.out[a.outHead].tsn)
	if k < a.outHead || k >= len(a.out) {
		return -1
	}
	return k
}

// compact reclaims the acknowledged head of out, after a SACK. A list a
// burst moved out of the association's own memory (outFew) moves back
// once it has stayed short a while, so that a peer that keeps a few more
// outstanding does not allocate.
func (a *Assoc) compact() {
	live := len(a.out) - a.outHead
	if cap(a.out) > outFewN {
		a.outCalm++
		if live > outFewN {
			a.outCalm = 0
		}
		if a.outCalm >= outCalmRuns {
			n := copy(a.outFew[:], a.out[a.outHead:])
			clear(a.outFew[n:]) // what it held before the burst
			a.out, a.outHead, a.outCalm = a.outFew[:n], 0, 0
			return
		}
	}
	if live == 0 {
		a.out, a.outHead = a.out[:0], 0
	}
}

// shift moves out's chunks in play to its front when it is full and a
// quarter or more of it is acknowledged head, rather than growing it: a
// peer whose round trip is longer than the time between its messages
// never has its whole list acknowledged at once, and its list stays as
// long as what it has outstanding, not what it has ever sent.
func (a *Assoc) shift() {
	if len(a.out) < cap(a.out) || a.outHead == 0 || 4*a.outHead < len(a.out) {
		return
	}
	n := copy(a.out, a.out[a.outHead:])
	clear(a.out[n:])
	a.out, a.outHead = a.out[:n], 0
}

// settled marks out[k] acknowledged by a gap block or given up: the
// loops over what is still in play step over it from now on.
func (a *Assoc) settled(k int) {
	oc := &a.out[k]
	oc.skip = 1
	if oc.rtx {
		oc.rtx = false
		a.nrtx--
	}
}

// nextLive returns the index of the first chunk at or after k that is
// neither acknowledged nor given up, or len(out). Each settled chunk
// keeps how far ahead the next one in play may be, and the walk shortens
// those distances as it goes (path halving), so that a peer that never
// acknowledges what it was sent, or acknowledges everything but the
// first chunk, does not make every SACK and every timer pass over all it
// was sent: the loops over out visit the chunks still in play.
func (a *Assoc) nextLive(k int) int {
	k = max(k, a.outHead)
	for k < len(a.out) {
		s := int(a.out[k].skip)
		if s == 0 {
			return k
		}
		a.work++
		j := k + s
		if j < len(a.out) && a.out[j].skip != 0 {
			a.out[k].skip += a.out[j].skip
		}
		k = j
	}
	return len(a.out)
}

func (a *Assoc) rttSample(r time.Duration) {
	if a.srtt == 0 {
		a.srtt, a.rttvar = r, r/2
	} else {
		d := a.srtt - r
		if d < 0 {
			d = -d
		}
		a.rttvar = (3*a.rttvar + d) / 4
		a.srtt = (7*a.srtt + r) / 8
	}
	a.rto = min(max(a.srtt+4*a.rttvar, a.cfg.RTOMin), a.cfg.RTOMax)
	a.rtoBase = a.rto
}

// Deadline returns when Flush next has timer work (a retransmission, a
// delayed SACK, an INIT to resend); zero when none.
func (a *Assoc) Deadline() time.Time {
	var d time.Duration
	pick := func(t time.Duration) {
		if t > 0 && (d == 0 || t < d) {
			d = t
		}
	}
	pick(a.t1)
	pick(a.t3)
	pick(a.fwdAt)
	if a.sackOwed {
		pick(a.owedAt + a.cfg.SackDelay)
	}
	if k := a.nextLive(a.outHead); k < len(a.out) {
		pick(a.out[k].sent + a.giveUpAfter())
	}
	if d == 0 {
		return time.Time{}
	}
	return a.base.Add(d)
}

// giveUpAfter is how long an unreliable chunk waits for a SACK before it
// is given up without one.
func (a *Assoc) giveUpAfter() time.Duration {
	if a.srtt == 0 {
		return 400 * time.Millisecond
	}
	// At most MaxBackoff: unreliable data that old is of no use, and a
	// peer that slows its SACKs would otherwise make the association keep
	// all it sent for as long as it likes.
	return min(max(2*a.srtt+4*a.rttvar, 50*time.Millisecond), a.cfg.MaxBackoff)
}

// backOff doubles the retransmission timeout after a timeout, up to
// MaxBackoff (or the timeout measured, if longer) and RTOMax.
func (a *Assoc) backOff() {
	a.rto = min(2*a.rto, max(a.cfg.MaxBackoff, a.rtoBase), a.cfg.RTOMax)
}

// timers runs what is due at t.
func (a *Assoc) timers(t time.Duration) {
	if a.t1 != 0 && t >= a.t1 {
		a.t1count++
		if a.t1count > maxInitRetries {
			a.close(ErrTimeout)
			return
		}
		a.backOff()
		a.t1 = t + a.rto
		switch a.st {
		case stateCookieWait:
			a.queueInit()
		case stateCookieEchoed:
			a.ctrl = append(a.ctrl, ctrlChunk{tag: a.peerTag, chunk: encodeChunk(ctCookieEcho, 0, a.cookie), crc: true})
		}
	}
	if a.t3 != 0 && t >= a.t3 {
		a.errCount++
		if a.errCount > a.cfg.MaxRetrans {
			a.close(ErrTimeout)
			return
		}
		a.ssthresh = max(a.cwnd/2, 4*a.cfg.MTU)
		a.cwnd = a.cfg.MTU
		a.pba = 0
		a.backOff()
		a.t3 = t + a.rto
		for k := a.nextLive(a.outHead); k < len(a.out); k = a.nextLive(k + 1) {
			switch oc := &a.out[k]; {
			case !oc.reliable:
				a.abandon(k)
			case !oc.rtx:
				oc.rtx = true
				a.nrtx++
			}
		}
		a.advance()
	}
	if a.fwdAt != 0 && t >= a.fwdAt {
		a.fwdAt = 0
		a.fwdOwed = tsnLess(a.cumAck, a.advAck)
	}
	// Unreliable chunks no SACK has spoken of in time are given up.
	limit := t - a.giveUpAfter()
	gave := false
	for k := a.nextLive(a.outHead); k < len(a.out); k = a.nextLive(k + 1) {
		oc := &a.out[k]
		if oc.reliable {
			continue // resent until acknowledged: T3 and fast retransmit see to it
		}
		if oc.sent > limit {
			break // an unreliable chunk is sent once: those after it are younger
		}
		a.abandon(k)
		gave = true
	}
	if gave {
		a.advance()
	}
}

// Flush runs the timers that are due and hands out every packet there is
// to send now, each valid only during its call to out: the control
// chunks, the SACK (when DATA goes too, or its delay is up), a
// FORWARD-TSN, retransmissions, every unreliable message queued, and the
// reliable messages the congestion window allows, bundled into as few
// packets as fit the MTU.
func (a *Assoc) Flush(now time.Time, out func(pkt []byte)) { a.FlushInto(now, nil, out) }

// FlushInto is Flush writing each packet into the buffer next returns,
// after the headroom that buffer's length leaves (for the record header
// the caller seals the packet under, where it is), with MTU bytes of
// capacity beyond it and whatever the caller needs after (a tag); out is
// handed the buffer, headroom and packet. With next nil, Flush's own
// buffer is used, with no headroom.
func (a *Assoc) FlushInto(now time.Time, next func() []byte, out func(buf []byte)) {
	a.b.next = next
	defer func() { a.b.next = nil }()
	t := a.since(now)
	if a.st != stateClosed {
		a.timers(t)
	}
	for len(a.ctrl) > 0 {
		tag := a.ctrl[0].tag
		a.b.start(a.port, a.pport, tag)
		n := 0
		for n < len(a.ctrl) && a.ctrl[n].tag == tag && (n == 0 || a.b.room() >= len(a.ctrl[n].chunk)+3) {
			a.b.raw(a.ctrl[n].chunk)
			a.b.needCRC = a.b.needCRC || a.ctrl[n].crc
			n++
		}
		clear(a.ctrl[:n])
		a.ctrl = a.ctrl[n:]
		out(a.b.finish(a.peerZero))
	}
	a.ctrl = a.ctrl[:0]
	if a.abort {
		a.abort = false
		a.b.start(a.port, a.pport, a.peerTag)
		a.b.raw(encodeChunk(ctAbort, 0, nil))
		out(a.b.finish(a.peerZero))
	}
	if a.st != stateEstablished {
		return
	}
	haveData := len(a.um) > 0 || len(a.rq) > a.rqHead && a.flight < a.cwnd && (a.peerRwnd > 0 || a.flight == 0)
	haveData = haveData || a.nrtx > 0
	sack := a.sackOwed && (haveData || a.sackNow || t >= a.owedAt+a.cfg.SackDelay)
	if !haveData && !sack && !a.fwdOwed {
		return
	}
	a.b.start(a.port, a.pport, a.peerTag)
	emit := func() {
		if !a.b.empty() {
			out(a.b.finish(a.peerZero))
			a.b.start(a.port, a.pport, a.peerTag)
		}
	}
	if sack {
		a.writeSack()
	}
	if a.fwdOwed && a.peerFwd {
		v := a.b.chunk(ctForwardTSN, 0, 4)
		binary.BigEndian.PutUint32(v, a.advAck)
		a.fwdOwed = false
		a.fwdAt = t + a.rtoBase // resent then, if no SACK has taken it
	}
	maxData := a.cfg.MTU - commonHeaderLen - dataHeaderLen
	// Retransmissions first, within the congestion window.
	budget := a.cwnd
	for k := a.nextLive(a.outHead); a.nrtx > 0 && k < len(a.out) && budget > 0; k = a.nextLive(k + 1) {
		oc := &a.out[k]
		if !oc.rtx {
			continue
		}
		oc.rtx = false
		a.nrtx--
		if a.b.room() < dataHeaderLen+len(oc.data) {
			emit()
		}
		a.writeData(oc, oc.data)
		oc.sends++
		oc.sent = t
		budget -= oc.size
		a.stats.Retransmits++
		if a.t3 == 0 {
			a.t3 = t + a.rto
		}
	}
	// Unreliable messages: all of them, now.
	for _, m := range a.um {
		msg := a.uq[m.off : m.off+m.n]
		for off := 0; off < len(msg); {
			n := min(len(msg)-off, maxData)
			flags := uint8(flagUnordered)
			if off == 0 {
				flags |= flagBegin
			}
			if off+n == len(msg) {
				flags |= flagEnd
			}
			if a.b.room() < dataHeaderLen+n {
				emit()
			}
			oc := a.push(outChunk{stream: m.stream, ppid: m.ppid, flags: flags, size: n, sent: t, sends: 1})
			a.writeData(oc, msg[off:off+n])
			off += n
		}
	}
	a.um, a.uq = a.um[:0], a.uq[:0]
	// Reliable messages, as the windows allow. A message's fragments take
	// consecutive TSNs (RFC 9260 §6.9), so a message goes out whole once
	// the window lets it start.
	for len(a.rq) > a.rqHead && a.flight < a.cwnd && (a.peerRwnd > 0 || a.flight == 0) {
		m := a.rq[a.rqHead]
		a.rq[a.rqHead] = pendMsg{}
		a.rqHead++
		for off := 0; off < len(m.data); {
			n := min(len(m.data)-off, maxData)
			var flags uint8
			if off == 0 {
				flags |= flagBegin
			}
			if off+n == len(m.data) {
				flags |= flagEnd
			}
			if a.b.room() < dataHeaderLen+n {
				emit()
			}
			piece := m.data[off : off+n : off+n]
			oc := a.push(outChunk{stream: m.stream, ssn: m.ssn, ppid: m.ppid, flags: flags, reliable: true, size: n, sent: t, sends: 1, data: piece, slab: m.slab})
			a.writeData(oc, piece)
			a.flight += n
			a.peerRwnd = max(a.peerRwnd-n, 0)
			off += n
		}
		a.rqBytes -= len(m.data)
		if a.t3 == 0 {
			a.t3 = t + a.rto
		}
	}
	if a.rqHead == len(a.rq) {
		a.rq, a.rqHead = a.rq[:0], 0
	}
	emit()
	if len(a.out)-a.outHead > maxOutstanding {
		a.close(fmt.Errorf("%w: %d chunks unacknowledged", ErrTimeout, len(a.out)-a.outHead))
	}
}

// push appends a chunk to the outstanding list with the next TSN.
func (a *Assoc) push(oc outChunk) *outChunk {
	oc.tsn = a.nextTSN
	a.nextTSN++
	a.outBytes += oc.size
	a.stats.DataSent++
	a.shift()
	a.out = append(a.out, oc)
	return &a.out[len(a.out)-1]
}

func (a *Assoc) writeData(oc *outChunk, payload []byte) {
	v := a.b.chunk(ctData, oc.flags, 12+len(payload))
	binary.BigEndian.PutUint32(v[0:], oc.tsn)
	binary.BigEndian.PutUint16(v[4:], oc.stream)
	binary.BigEndian.PutUint16(v[6:], oc.ssn)
	binary.BigEndian.PutUint32(v[8:], oc.ppid)
	copy(v[12:], payload)
	a.b.pad()
}

func (a *Assoc) writeSack() {
	ngaps := a.recv.gaps(&a.gapBuf)
	v := a.b.chunk(ctSack, 0, 12+4*ngaps+4*len(a.dups))
	binary.BigEndian.PutUint32(v[0:], a.recv.cum)
	binary.BigEndian.PutUint32(v[4:], uint32(max(int(a.cfg.RecvWindow)-a.held.charged, 0)))
	binary.BigEndian.PutUint16(v[8:], uint16(ngaps))
	binary.BigEndian.PutUint16(v[10:], uint16(len(a.dups)))
	p := v[12:]
	for _, g := range a.gapBuf[:ngaps] {
		binary.BigEndian.PutUint16(p, g[0])
		binary.BigEndian.PutUint16(p[2:], g[1])
		p = p[4:]
	}
	for _, d := range a.dups {
		binary.BigEndian.PutUint32(p, d)
		p = p[4:]
	}
	a.b.pad()
	a.sackOwed, a.sackNow, a.pkts, a.pktBytes, a.dups = false, false, 0, 0, a.dups[:0]
	a.stats.SacksSent++
}

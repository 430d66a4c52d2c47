package lockstep

import (
	"time"
)

// peerQuality is what the room measures and hears of one peer's link.
type peerQuality struct {
	// Touched by every packet.
	upSeen                 bool
	upLast                 uint16
	maxRedundancy          uint8
	upExpected, upGot      uint64
	bytesUp, bytesDown     uint64
	rttN                   uint64
	rttSum, rttMin, rttMax time.Duration

	downSent, downGot uint64 // touched once every 8 packets
	catchUpBytes      uint64

	jitN           uint64
	jitSum, jitMax float64    // ms
	cur, past      playReport // this session's last report, and earlier sessions' sums
	reconnects     int
	toLive         time.Duration
	desyncAt       int  // the first frame named in an EventDesync
	desynced       bool // desyncAt is set
}

// echoRing is how many downlink send times a peer remembers for RTT.
const echoRing = 64

// echoEntry is when a downlink packet was sent, for the RTT: microseconds
// from the room's start, wrapping (the RTT is taken modulo 2^32 us, over
// an hour, and an RTT over 30 s is discarded).
type echoEntry struct {
	at  uint32
	seq uint16
	ok  bool
}

// uplinkQuality takes the uplink's packet counter and echo.
// at is the packet's arrival, from the room's start.
func (p *player) uplinkQuality(u *uplink, at time.Duration) {
	q := &p.q
	switch d := u.sent - q.upLast; {
	case !q.upSeen:
		q.upSeen, q.upLast = true, u.sent
		q.upExpected++
		q.upGot++
	case d != 0 && d < 1<<15:
		q.upExpected += uint64(d)
		q.upLast = u.sent
		q.upGot++
	default: // reordered or duplicated
		if q.upGot < q.upExpected {
			q.upGot++
		}
	}
	q.maxRedundancy = max(q.maxRedundancy, p.redundancy)
	if !u.hasEcho {
		return
	}
	e := p.recent[u.echoSeq%2]
	if !e.ok || e.seq != u.echoSeq {
		e = p.echo[u.echoSeq%echoRing]
	}
	if !e.ok || e.seq != u.echoSeq {
		return
	}
	rtt := time.Duration(uint32(at/time.Microsecond)-e.at)*time.Microsecond - time.Duration(u.echoHold)*time.Millisecond
	if rtt < 0 || rtt > 30*time.Second {
		return
	}
	if q.rttN == 0 || rtt < q.rttMin {
		q.rttMin = rtt
	}
	q.rttMax = max(q.rttMax, rtt)
	q.rttSum += rtt
	q.rttN++
}

// report takes a client's playout report.
func (q *peerQuality) report(rep playReport) {
	ms := float64(rep.mapdv2Tenths) / 10
	q.jitN++
	q.jitSum += ms
	q.jitMax = max(q.jitMax, ms)
	q.cur = rep
}

// newSession folds the last session's playout counts into the past ones.
func (q *peerQuality) newSession() {
	q.past.stalls += q.cur.stalls
	q.past.stalledMs += q.cur.stalledMs
	q.past.fastMs += q.cur.fastMs
	q.past.catchUpMs += q.cur.catchUpMs
	q.cur = playReport{}
	q.upSeen = false
}

// PeerQuality is the quality of one peer's link and play over the match
// (stalls, loss, the highest latency and jitter), as the room
// measured it and the client reported it.
type PeerQuality struct {
	Peer      int  // slot, or spectator id
	Spectator bool // the peer is a spectator
	Away      bool // the player has left and not rejoined

	// Round trip time, measured by echoing downlink packets in the uplink.
	RTTMin, RTTMean, RTTMax time.Duration
	// LossUp is the share of uplink packets that never arrived; LossDown
	// the share of downlink packets the client did not receive.
	LossUp, LossDown float64
	// JitterMean and JitterMax are the mean and highest delay variation
	// the client reported (the mean absolute deviation of a frame's delay
	// from the mean delay), in milliseconds.
	JitterMean, JitterMax float64
	// Stalls is how often play paused for a missing frame, Stalled for
	// how long; Fast is the time spent in fast play, CatchUp the time
	// spent catching up after joining (client reports).
	Stalls                 uint64
	Stalled, Fast, CatchUp time.Duration
	// LateDrops counts inputs that arrived after their frame was cut and
	// were dropped.
	LateDrops uint64
	// Redundancy is the frames repeated per downlink packet now, and the
	// most at any time.
	Redundancy, MaxRedundancy int
	// BytesUpPerSec and BytesDownPerSec are the lockstep bytes each way
	// over the time connected; CatchUpBytes is the part of the downlink
	// that was catch-up.
	BytesUpPerSec, BytesDownPerSec float64
	CatchUpBytes                   uint64
	// Reconnects counts joins after the match started; ToLive is the last
	// join's time to live.
	Reconnects int
	ToLive     time.Duration
	Connected  time.Duration
	// DesyncFrame is the first frame at which the player's state hash
	// diverged, or -1.
	DesyncFrame int
}

// Quality is the match's quality report: one entry per player and
// spectator, and Match summing them up (minimum of the minima, mean of the
// means weighted by samples, maximum of the maxima, sums of the counts,
// losses over all packets, bytes per second over all peers).
type Quality struct {
	Frames  int
	Elapsed time.Duration
	// Desyncs counts the compared frames on which the players' state
	// hashes disagreed (EventDesync and EventDispute): 0 in a healthy
	// match. Seed 003 puts a shipped game's rate at 0.03% of matches.
	Desyncs int
	Peers   []PeerQuality
	Match   PeerQuality
}

// qualityReport sums the peers' quality up into a match's Quality report:
// the room adds each peer, then takes the report.
type qualityReport struct {
	out    Quality
	m      PeerQuality // the match, so far
	now    time.Time   // the room's last tick
	rttN   uint64
	jitN   uint64
	rttSum time.Duration
	jitSum float64

	upE, upG, dnS, dnG uint64
	secs               float64
	first              bool // no peer's RTT taken yet
}

// newQualityReport starts the report of a match that cut frames frames
// in elapsed, with desyncs compared frames in disagreement, as of the
// room's last tick, now.
func newQualityReport(frames int, elapsed time.Duration, desyncs int, now time.Time) qualityReport {
	b := qualityReport{out: Quality{Frames: frames, Elapsed: elapsed, Desyncs: desyncs}, now: now, first: true}
	b.m.Peer, b.m.DesyncFrame = -1, -1
	return b
}

// add adds the peer with id to the report.
func (b *qualityReport) add(id int, p *player) {
	m := &b.m
	q := &p.q
	connected := p.connected
	if !p.away {
		connected += b.now.Sub(p.joinedAt)
	}
	pq := PeerQuality{
		Peer: id, Spectator: p.spectator, Away: p.away,
		RTTMin: q.rttMin, RTTMax: q.rttMax,
		JitterMax: q.jitMax,
		Stalls:    q.past.stalls + q.cur.stalls,
		Stalled:   msDuration(q.past.stalledMs + q.cur.stalledMs),
		Fast:      msDuration(q.past.fastMs + q.cur.fastMs),
		CatchUp:   msDuration(q.past.catchUpMs + q.cur.catchUpMs),
		LateDrops: p.lateDrops, Redundancy: int(p.redundancy), MaxRedundancy: int(max(q.maxRedundancy, p.redundancy)),
		CatchUpBytes: q.catchUpBytes, Reconnects: q.reconnects, ToLive: q.toLive, Connected: connected,
		DesyncFrame: -1,
	}
	if q.desynced {
		pq.DesyncFrame = q.desyncAt
	}
	if q.rttN > 0 {
		pq.RTTMean = q.rttSum / time.Duration(q.rttN)
	}
	if q.jitN > 0 {
		pq.JitterMean = q.jitSum / float64(q.jitN)
	}
	if q.upExpected > 0 {
		pq.LossUp = 1 - float64(q.upGot)/float64(q.upExpected)
	}
	if q.downSent > 0 {
		pq.LossDown = 1 - float64(q.downGot)/float64(q.downSent)
	}
	if s := connected.Seconds(); s > 0 {
		pq.BytesUpPerSec = float64(q.bytesUp) / s
		pq.BytesDownPerSec = float64(q.bytesDown) / s
	}
	b.out.Peers = append(b.out.Peers, pq)

	if q.rttN > 0 && (b.first || q.rttMin < m.RTTMin) {
		m.RTTMin = q.rttMin
		b.first = false
	}
	m.RTTMax = max(m.RTTMax, q.rttMax)
	b.rttSum += q.rttSum
	b.rttN += q.rttN
	b.jitSum += q.jitSum
	b.jitN += q.jitN
	m.JitterMax = max(m.JitterMax, q.jitMax)
	b.upE, b.upG, b.dnS, b.dnG = b.upE+q.upExpected, b.upG+q.upGot, b.dnS+q.downSent, b.dnG+q.downGot
	m.Stalls += pq.Stalls
	m.Stalled += pq.Stalled
	m.Fast += pq.Fast
	m.CatchUp += pq.CatchUp
	m.LateDrops += pq.LateDrops
	m.Redundancy = max(m.Redundancy, pq.Redundancy)
	m.MaxRedundancy = max(m.MaxRedundancy, pq.MaxRedundancy)
	m.BytesUpPerSec += float64(q.bytesUp)
	m.BytesDownPerSec += float64(q.bytesDown)
	m.CatchUpBytes += q.catchUpBytes
	m.Reconnects += q.reconnects
	m.ToLive = max(m.ToLive, q.toLive)
	if pq.DesyncFrame >= 0 && (m.DesyncFrame < 0 || pq.DesyncFrame < m.DesyncFrame) {
		m.DesyncFrame = pq.DesyncFrame
	}
	b.secs = max(b.secs, connected.Seconds())
}

// done returns the report, with the match's means, losses and rates
// worked out.
func (b *qualityReport) done() Quality {
	m := b.m
	if b.rttN > 0 {
		m.RTTMean = b.rttSum / time.Duration(b.rttN)
	}
	if b.jitN > 0 {
		m.JitterMean = b.jitSum / float64(b.jitN)
	}
	if b.upE > 0 {
		m.LossUp = 1 - float64(b.upG)/float64(b.upE)
	}
	if b.dnS > 0 {
		m.LossDown = 1 - float64(b.dnG)/float64(b.dnS)
	}
	if b.secs > 0 {
		m.BytesUpPerSec /= b.secs
		m.BytesDownPerSec /= b.secs
	}
	m.Connected = time.Duration(b.secs * float64(time.Second))
	out := b.out
	out.Match = m
	return out
}

func msDuration(ms uint64) time.Duration { return time.Duration(ms) * time.Millisecond }

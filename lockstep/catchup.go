package lockstep

import (
	"time"

	"github.com/tongbu/tongbu/codec"
)

// lifecycle is a room's join and catch-up machinery: the streams that
// bring a peer who joins late (or again) up to date on the reliable
// channel, alongside the newest frames on the unreliable one, and the
// buffers of the lifecycle messages the room sends.
type lifecycle struct {
	raw []byte // catch-up scratch: frame bodies
	// streaming is set when a catch-up stream starts, and cleared by the
	// first tick that finds none active.
	streaming bool
	comp      []byte // catch-up scratch: the message
	cw        codec.Writer
}

// streamHost is what catch-up streams need of their room: what a frame
// looks like on the wire to a peer, and the reliable channel to it.
type streamHost interface {
	body(id, n int, full bool) ([]byte, int)
	viewParts(id, n int) [][]byte
	sendReliable(id int, p *player, msg []byte)
}

// peerLife is a peer's lifecycle state.
type peerLife struct {
	delay     time.Duration // spectators: how far behind the cut
	visible   int           // spectators: frames 0 .. visible-1 may be sent
	joinedAt  time.Time
	connected time.Duration // time connected before the current session
	desynced  bool
	evFrom    int    // the first frame this client runs (after a snapshot)
	evRerun   bool   // a rejoined client re-running frames it reported before
	dumpWant  int    // frame of the dump asked for, or -1
	dump      []byte // dump parts so far
	dumpParts int
}

// stream is a catch-up stream: frames next .. end-1 from the log on the
// reliable channel.
type stream struct {
	active    bool
	next, end int
	snap      []byte // a snapshot to send first (the state after frames 0 .. next-1), compressed
	snapSent  int    // its parts sent
}

func (p *player) initLife(now time.Time) {
	p.live = true
	p.joinedAt = now
	p.dumpWant = -1
}

// reset forgets a peer's connection state for a fresh client that
// connected at now, in a room that started at start and repeats
// redundancy frames per packet to begin with.
func (p *player) reset(now, start time.Time, redundancy int) {
	p.joinedAt, p.heard = now, now.Sub(start)
	p.have, p.mask, p.maskLen = 0, 0, 0
	clear(p.retransAt)
	p.retransWait = false
	p.redundancy = uint8(redundancy)
	p.lastSent, p.lastRecv, p.loss, p.lossWant = p.seq, 0, 0, 0
	p.inAck, p.inSeen, p.hasMargin = 0, 0, false
	p.notices, p.noticed = p.notices[:0], false
	p.dumpWant, p.dump, p.dumpParts = -1, nil, 0
	p.q.newSession()
	p.echo, p.recent = [echoRing]echoEntry{}, [2]echoEntry{}
	p.live = true
}

// start starts a catch-up stream to p of frames 0 .. end-1, or, when sim
// (the room's simulation, nil when it may not snapshot for a stream) can
// snapshot and has not run past end, of a snapshot of it and the frames
// after it. Snapshots taken and failed are counted in stats.
func (l *lifecycle) start(p *player, end int, sim *serverSim, stats *RoomStats) {
	if end <= 0 {
		p.live = true // nothing to catch up: the client starts live
		return
	}
	p.live = false
	p.stream = stream{active: true, next: 0, end: end}
	l.streaming = true
	if sim != nil && sim.frame <= end {
		if snap, ok := sim.snapshot(stats); ok {
			p.stream.snap, p.stream.next = snap, sim.frame
		}
	}
}

// tick sends the peers with an active stream, players first, then
// spectators, their catch-up messages while budget (Config.CatchUpBytes,
// the room's for one tick) lasts, and counts the bytes in stats.
func (l *lifecycle) tick(budget int, players []player, specs *spectators, host streamHost, stats *RoomStats) {
	if !l.streaming {
		return
	}
	active := false
	stream := func(id int, p *player) {
		if !p.away && p.stream.active {
			if budget > 0 {
				budget = l.streamTo(id, p, budget, host, stats)
			}
			active = active || p.stream.active
		}
	}
	for id := range players {
		stream(id, &players[id])
	}
	for id, s := range specs.all() {
		stream(id, s)
	}
	l.streaming = active
}

// streamTo sends catch-up messages to a peer while the budget lasts and
// returns what is left of it.
func (l *lifecycle) streamTo(id int, p *player, budget int, host streamHost, stats *RoomStats) int {
	if p.stream.snap != nil {
		if budget = l.streamSnapshot(id, p, budget, host, stats); p.stream.snap != nil {
			return budget
		}
	}
	for p.stream.active && budget > catchUpChunkBytes {
		first := p.stream.next
		w := &l.cw
		w.Reset(l.raw[:0])
		n := first
		for ; n < p.stream.end && n-first < maxChunkFrames; n++ {
			body, bits := host.body(id, n, n == first)
			if n > first && w.Len()+bits > catchUpChunkBytes*8 {
				break
			}
			w.WriteBitString(body, bits)
		}
		l.raw = w.Bytes()
		last := n == p.stream.end
		// The further parts of the chunk's views go first: the client
		// holds them until each view's head comes.
		for k := first; k < n; k++ {
			for _, part := range host.viewParts(id, k) {
				host.sendReliable(id, p, part)
				stats.CatchUp += uint64(len(part))
				p.q.catchUpBytes += uint64(len(part))
				budget -= len(part)
			}
		}
		w.Reset(l.comp[:0])
		catchUpHeader(w, first, n-first, last)
		l.comp = codec.Compress(w.Bytes(), l.raw)
		host.sendReliable(id, p, l.comp)
		stats.CatchUp += uint64(len(l.comp))
		p.q.catchUpBytes += uint64(len(l.comp))
		budget -= len(l.comp)
		p.stream.next = n
		if last {
			p.stream.active = false
		}
	}
	return budget
}

// streamSnapshot sends the parts of a stream's snapshot while the budget
// lasts and returns what is left of it.
func (l *lifecycle) streamSnapshot(id int, p *player, budget int, host streamHost, stats *RoomStats) int {
	st := &p.stream
	parts := snapshotSpec.count(len(st.snap))
	for st.snapSent < parts && budget > catchUpChunkBytes {
		i := st.snapSent
		d := snapshotPart{frame: st.next, part: i, parts: parts, data: snapshotSpec.piece(st.snap, i)}
		w := &l.cw
		w.Reset(l.comp[:0])
		d.encode(w)
		l.comp = w.Bytes()
		host.sendReliable(id, p, l.comp)
		stats.CatchUp += uint64(len(l.comp))
		p.q.catchUpBytes += uint64(len(l.comp))
		budget -= len(l.comp)
		st.snapSent++
	}
	if st.snapSent == parts {
		st.snap = nil
	}
	return budget
}

// dumpRequest returns the message asking a peer for a dump of its state
// after frame, valid until the next lifecycle message.
func (l *lifecycle) dumpRequest(frame int) []byte {
	w := &l.cw
	w.Reset(l.comp[:0])
	encodeFrameNumber(w, lifeDumpRequest, frame)
	l.comp = w.Bytes()
	return l.comp
}

package lockstep

import (
	"fmt"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// clientLife is the client's state for the match lifecycle.
type clientLife struct {
	sent        uint16    // uplink packets sent
	lastArrival time.Time // when downlink packet lastSeq arrived
	newest      int       // the newest frame number seen on the unreliable channel

	hashes []pendingHash // hash reports not yet sent hashRepeats times

	outbox   [][]byte // reliable messages for the room
	dumpReqs []int

	catching   bool // running the frames of the log after joining a running match
	streamDone bool // the last catch-up message arrived
	caughtUp   bool // went live after catching up
	catchStart time.Time
	catchTime  time.Duration
	liveFrame  int
	raw        []byte
	chunk      []Frame

	lastReport time.Time
	reported   bool

	// A snapshot of the room's simulation, arriving in parts, and the
	// decoded one waiting for Advance to hand it to the game.
	snapBuf   []byte
	snapFrame int
	snapParts int
	snapGame  []byte
	snapAt    int // the frame the waiting snapshot is the state before

	ran      int         // frames 0 .. ran-1 were handed to the game (with Substeps, some of their logic frames)
	done     int         // frames 0 .. done-1 were handed whole: every logic frame
	evs      []GameEvent // game events not yet sent
	evSent   int         // events of frames before it were sent
	evErrors uint64      // events refused by ReportEvent
}

// ReportEvent reports a game event that running frame produced (a shot, a
// goal, a score) for the room's event verification
// (Config.VerifyEvents). Report every event the game's simulation
// produces, in order, while running the frames Advance returned: the room
// compares every player's events of each frame, and a player whose events
// differ is named (EventVerdict). Events ride in the Outbox after the next
// Packet, with word that every frame handed out before is complete.
func (c *Client) ReportEvent(frame int, data []byte) error {
	frame = c.cfg.RelayFrame(frame) // the room counts relay frames
	var err error
	switch {
	case c.slot < 0:
		return ErrSpectator
	case !c.cfg.VerifyEvents:
		err = fmt.Errorf("%w: the room does not verify events", ErrEvent)
	case len(data) > MaxEventBytes:
		err = fmt.Errorf("%w: %d bytes, at most %d", ErrEvent, len(data), MaxEventBytes)
	case frame < c.evSent || frame >= c.ran:
		err = fmt.Errorf("%w: frame %d is not being run (%d run, events sent through %d)", ErrEvent, frame, c.ran, c.evSent)
	case len(c.evs) >= maxPendingEvents:
		err = fmt.Errorf("%w: %d events unsent", ErrEvent, len(c.evs))
	case len(c.evs) > 0 && frame < c.evs[len(c.evs)-1].Frame:
		err = fmt.Errorf("%w: frame %d after an event of frame %d", ErrEvent, frame, c.evs[len(c.evs)-1].Frame)
	case len(c.evs) >= MaxEventsPerFrame && c.evs[len(c.evs)-MaxEventsPerFrame].Frame == frame:
		err = fmt.Errorf("%w: over %d events for frame %d", ErrEvent, MaxEventsPerFrame, frame)
	}
	if err != nil {
		c.evErrors++
		return err
	}
	c.evs = append(c.evs, GameEvent{Frame: frame, Data: slices.Clone(data)})
	return nil
}

// flushEvents queues the events reported so far, and that the frames
// handed out are complete, when there are events or a second of frames
// went by without.
func (c *Client) flushEvents() {
	if !c.cfg.VerifyEvents || c.slot < 0 || c.done <= c.evSent || (len(c.evs) == 0 && c.done-c.evSent < c.cfg.Hz) {
		return
	}
	// The events of frames complete; those of a frame whose logic frames
	// (Substeps) are still being handed out wait for the next report.
	k := len(c.evs)
	for k > 0 && c.evs[k-1].Frame >= c.done {
		k--
	}
	evs := c.evs[:k]
	for len(evs) > 0 || k == 0 {
		// At most maxEventsPerMsg events, never splitting a frame's.
		// (A frame holds at most MaxEventsPerFrame < maxEventsPerMsg.)
		n := len(evs)
		if n > maxEventsPerMsg {
			n = maxEventsPerMsg
			for evs[n].Frame == evs[n-1].Frame {
				n--
			}
		}
		rep := eventReport{through: c.done, events: evs[:n]}
		if n < len(evs) {
			rep.through = evs[n].Frame
		}
		var w codec.Writer
		rep.encode(&w)
		c.outbox = append(c.outbox, w.Bytes())
		evs = evs[n:]
		if len(evs) == 0 {
			break
		}
	}
	c.evs, c.evSent = append(c.evs[:0], c.evs[k:]...), c.done
}

type pendingHash struct {
	frame int
	hash  uint64
	sent  int
}

// Client lifecycle bounds.
const (
	hashRepeats       = 3  // uplink packets each hash report rides in (the uplink is lossy: at 10% independent loss, 1 report in 1000 is lost)
	maxPendingHashes  = 16 // hash reports queued; older ones are dropped
	reportEvery       = 5 * time.Second
	catchUpPerAdvance = 600 // frames one Advance hands out while catching up
)

// ReportHash queues a hash of the game's state after running frame, for
// the room's desync detection. Report the frames for
// which Config.HashFrame is true (without substeps, those whose number is
// a multiple of Config.HashEvery); the hash rides in the next uplink
// packets. Hash only the state that must agree (positions, health,
// scores), never what may differ between clients (effects, timers of
// the picture).
func (c *Client) ReportHash(frame int, hash uint64) {
	if c.cfg.HashEvery < 0 || c.cfg.Authoritative || !c.cfg.HashFrame(frame) {
		return
	}
	frame = c.cfg.RelayFrame(frame) // the room counts relay frames
	if len(c.hashes) >= maxPendingHashes {
		c.hashes = c.hashes[1:]
	}
	c.hashes = append(c.hashes, pendingHash{frame: frame, hash: hash})
}

// Outbox returns and clears the messages for the room's reliable channel:
// the live report after catching up, playout reports, state dumps. Send
// them after each Packet, Advance or Dump.
func (c *Client) Outbox() [][]byte {
	o := c.outbox
	c.outbox = nil
	return o
}

// DumpRequests returns and clears the frames for which the room asked a
// dump of the game's state (after a desync). The game answers each with
// Dump.
func (c *Client) DumpRequests() []int {
	d := c.dumpReqs
	c.dumpReqs = nil
	for i, n := range d { // the state after the relay frame's last logic frame
		d[i] = c.cfg.LogicFrame(n+1) - 1
	}
	return d
}

// Dump answers the room's request after a desync (DumpRequests) with what
// will help find its cause: the game's state after frame, its recent log
// lines, or both, as any bytes (at most MaxDumpBytes), split into messages
// in the Outbox. The room hands it on (EventDump) and to its recording: a
// replay keeps its first 64 KiB (lockstep/replay.MaxDump), where `tongbu
// replay info` lists it; text shows there as its first line.
func (c *Client) Dump(frame int, data []byte) error {
	if len(data) > MaxDumpBytes {
		return fmt.Errorf("%w: dump of %d bytes, at most %d", ErrInputTooLarge, len(data), MaxDumpBytes)
	}
	frame = c.cfg.RelayFrame(frame)
	parts := dumpSpec.count(len(data))
	for i := range parts {
		d := dumpPart{frame: frame, part: i, parts: parts, data: dumpSpec.piece(data, i)}
		var w codec.Writer
		d.encode(&w)
		c.outbox = append(c.outbox, w.Bytes())
	}
	return nil
}

// CatchingUp reports whether the client is running the frames it missed.
func (c *Client) CatchingUp() bool { return c.catching }

// maybeReport queues a playout report every few seconds.
func (c *Client) maybeReport(now time.Time) {
	if c.reported && now.Sub(c.lastReport) < reportEvery {
		return
	}
	c.reported, c.lastReport = true, now
	st := c.jb.Stats()
	catchUp := c.catchTime
	if c.catching {
		catchUp += now.Sub(c.catchStart)
	}
	rep := playReport{
		mapdv2Tenths: int(st.DelayVariationMs * 10),
		stalls:       uint64(st.Stalls),
		stalledMs:    uint64(st.Stalled / time.Millisecond),
		fastMs:       uint64(st.Fast / time.Millisecond),
		catchUpMs:    uint64(catchUp / time.Millisecond),
	}
	var w codec.Writer
	rep.encode(&w)
	c.outbox = append(c.outbox, w.Bytes())
}

// lifeMessage handles a lifecycle message from the room.
func (c *Client) lifeMessage(now time.Time, msg []byte) error {
	sub, r, err := lifeKind(msg)
	if err != nil {
		return err
	}
	switch sub {
	case lifeDumpRequest:
		f, err := decodeFrameNumber(r)
		if err != nil {
			return err
		}
		if len(c.dumpReqs) < 16 {
			c.dumpReqs = append(c.dumpReqs, f)
		}
		return nil
	case lifeCatchUp:
		var last bool
		c.chunk, c.raw, last, err = decodeCatchUp(msg, r, c.players(), c.raw, c.chunk[:0])
		if err != nil {
			return err
		}
		if c.streamDone || c.caughtUp {
			return fmt.Errorf("%w: catch-up after the stream ended", ErrMalformed)
		}
		if len(c.chunk) > 0 && c.chunk[0].Number > c.have { // frames below have are repeats
			return fmt.Errorf("%w: catch-up from frame %d, %d held", ErrMalformed, c.chunk[0].Number, c.have)
		}
		if !c.catching {
			// Frames that came on the unreliable channel before the stream
			// started played no part yet: playout starts over when live.
			c.catching, c.catchStart = true, now
			c.jb = c.newJitterBuffer()
		}
		for _, f := range c.chunk {
			c.frame(now, f)
		}
		c.streamDone = last
		return nil
	case lifeSnapshot:
		d, err := decodeSnapshotPart(r)
		if err != nil {
			return err
		}
		return c.snapshotPart(now, d)
	case lifeMore:
		switch k := r.ReadUvarint(); {
		case r.Err() != nil:
			return fmt.Errorf("%w: lifecycle message: %w", ErrMalformed, r.Err())
		case k == lifeViewPart:
			return c.viewPart(now, r)
		case k == lifeWait:
			f, wait, err := decodeWait(r, c.cfg.Players)
			if err != nil {
				return err
			}
			c.strict.waitOn, c.strict.waitAt = wait, f
			return nil
		default:
			return nil // a newer room's: ignored
		}
	}
	return fmt.Errorf("%w: lifecycle message %d from the room", ErrMalformed, sub)
}

// snapshotPart takes one part of a snapshot; the last part restarts the
// client's frame sequence at the snapshot's frame.
func (c *Client) snapshotPart(now time.Time, d snapshotPart) error {
	handed := c.have // frames the game has been given
	if len(c.queue) > 0 {
		handed = c.queued
	}
	switch {
	case c.streamDone || c.caughtUp:
		return fmt.Errorf("%w: snapshot after the catch-up stream ended", ErrMalformed)
	case d.frame < handed:
		return fmt.Errorf("%w: snapshot of frame %d, %d already run", ErrMalformed, d.frame, handed)
	case d.part != c.snapParts || (d.part > 0 && d.frame != c.snapFrame):
		c.snapBuf, c.snapParts = c.snapBuf[:0], 0
		return fmt.Errorf("%w: snapshot part %d of frame %d, want part %d of %d", ErrMalformed, d.part, d.frame, c.snapParts, c.snapFrame)
	}
	if !c.catching {
		c.catching, c.catchStart = true, now
		c.jb = c.newJitterBuffer()
	}
	c.snapFrame = d.frame
	c.snapBuf = append(c.snapBuf, d.data...)
	c.snapParts++
	if c.snapParts < d.parts {
		return nil
	}
	comp := c.snapBuf
	c.snapBuf, c.snapParts = nil, 0
	prev, game, err := decodeSnapshotPayload(comp, c.cfg.Players)
	if err != nil {
		return err
	}
	// The frames before the snapshot are no longer needed.
	c.have, c.queue, c.queued = d.frame, nil, d.frame
	for n := range c.ahead {
		if n < d.frame {
			delete(c.ahead, n)
		}
	}
	copy(c.prevReal, prev)
	c.snapGame, c.snapAt = game, d.frame
	c.drain()
	return nil
}

// catchUp is Advance while catching up: it hands out the frames held, a
// bounded number per call, and turns live once it has run every frame
// seen.
func (c *Client) catchUp(now time.Time) Step {
	s := Step{State: Fast, CatchingUp: true, Alpha: 1}
	if c.snapGame != nil {
		s.Snapshot, s.SnapshotFrame = c.snapGame, c.snapAt
		c.snapGame = nil
		c.ran, c.done, c.evSent = c.snapAt, c.snapAt, max(c.evSent, c.snapAt)
	}
	for len(c.queue) > 0 && len(s.Frames) < catchUpPerAdvance {
		s.Frames = append(s.Frames, c.queue[0])
		c.queue = c.queue[1:]
		c.queued++
	}
	if n := len(s.Frames); n > 0 {
		c.ran = s.Frames[n-1].Number + 1
		c.done = c.ran
	}
	if c.streamDone && len(c.queue) == 0 && c.have > c.newest {
		c.catching, c.caughtUp = false, true
		c.catchTime += now.Sub(c.catchStart)
		c.jb.startAt(c.have)
		c.liveFrame = c.have
		var w codec.Writer
		encodeFrameNumber(&w, lifeLive, c.have)
		c.outbox = append(c.outbox, w.Bytes())
		// Frames that arrived beyond the held ones were kept out of the
		// playout; they count as arriving now.
		for n := range c.ahead {
			c.jb.Arrive(n, now)
		}
	}
	return s
}

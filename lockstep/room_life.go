package lockstep

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Events returns and clears the events raised since the last call.
func (r *Room) Events() []Event {
	e := r.events
	r.events = nil
	return e
}

// Join gives slot to a fresh client of the player (a reconnect after a
// crash, or a late join): the room forgets what it knew of the old
// connection, streams the frame log from frame 0 on the reliable channel,
// paced by Config.CatchUpBytes, alongside the newest frames on the
// unreliable one; the client runs the frames without rendering and reports
// when it is live, which raises EventLive. A room running a Snapshotter
// (Config.Simulation) sends a snapshot of it instead, and streams only the
// frames after it (Step.Snapshot on the client). Checking the player's ticket is
// the engine's job. Joining a slot that is connected replaces the
// connection.
func (r *Room) Join(slot int, now time.Time) error {
	if slot < 0 || slot >= len(r.players) {
		return fmt.Errorf("%w: %d", ErrSlot, slot)
	}
	r.Leave(slot)
	p := &r.players[slot]
	p.away = false
	p.desynced = false             // a fresh client, caught up from the room's log: judged anew
	p.sealed, p.givenUp = 0, false // it seals anew once live
	p.q.reconnects++
	p.reset(now, r.start, r.cfg.Redundancy)
	r.startStream(p, r.sendable(slot))
	p.evFrom, p.evRerun = 0, true
	if p.stream.active {
		p.evFrom = p.stream.next
	}
	if r.ver != nil {
		r.ver.joined(slot, p.evFrom)
	}
	if r.rec != nil {
		r.rec.RecordJoin(slot, r.next)
	}
	return nil
}

// Leave marks the player in slot as gone: the room sends it nothing and
// makes up its input (by the room's Fill) until it joins again. Inputs it
// already sent for later frames stay. Leaving twice is harmless.
func (r *Room) Leave(slot int) error {
	if slot < 0 || slot >= len(r.players) {
		return fmt.Errorf("%w: %d", ErrSlot, slot)
	}
	p := &r.players[slot]
	if p.away {
		p.restoring = false // a restored room's player that is not coming back: gone
		return nil
	}
	p.away, p.live, p.stream = true, false, stream{}
	p.connected += r.now.Sub(p.joinedAt)
	if r.rec != nil {
		r.rec.RecordLeave(slot, r.next)
	}
	return nil
}

// startStream starts a catch-up stream to p of frames 0 .. end-1, from a
// snapshot of the room's simulation when it can take one. An
// authoritative room sends none (a snapshot would show the player
// everything): the player is streamed its own views from frame 0.
func (r *Room) startStream(p *player, end int) {
	sim := r.sim
	if r.auth != nil {
		sim = nil
	}
	r.life.start(p, end, sim, &r.stats)
}

// AddSpectator adds a spectator who sees the match delay behind the cut:
// the room sends it frame n no earlier than delay after cutting it, and
// takes no input from it (its uplink packets only acknowledge). It returns
// the spectator's peer id, Players or above, which the room uses with the
// Sender and the engine with Deliver. A spectator who joins after frames
// are already visible catches up like a rejoining player.
func (r *Room) AddSpectator(delay time.Duration, now time.Time) (int, error) {
	if delay < 0 {
		return 0, fmt.Errorf("%w: spectator delay %v", ErrConfig, delay)
	}
	if r.auth != nil {
		return 0, fmt.Errorf("%w: an authoritative room takes no spectators", ErrConfig)
	}
	id, s, err := r.specs.add(len(r.players), delay, r.cfg.Redundancy, now)
	if err != nil {
		return 0, err
	}
	s.reset(now, r.start, r.cfg.Redundancy)
	s.advanceVisible(r.next, &r.cfg, r.start.Add(r.strict.paused), now)
	r.startStream(s, s.visible)
	return id, nil
}

// RemoveSpectator stops sending to a spectator and forgets it (the match's
// quality report then leaves it out). Its id is not reused.
func (r *Room) RemoveSpectator(id int) error {
	return r.specs.remove(id, len(r.players))
}

// RequestDump asks a peer for a dump of its state after frame (the game
// answers through Client.Dump); the dump arrives as an EventDump.
func (r *Room) RequestDump(id, frame int) error {
	p := r.peer(id)
	if p == nil || p.away {
		return fmt.Errorf("%w: %d", ErrSlot, id)
	}
	p.dumpWant, p.dump, p.dumpParts = frame, nil, 0
	r.sendReliable(id, p, r.life.dumpRequest(frame))
	return nil
}

// tickLife runs after a tick that cut frames: spectators' packets,
// catch-up streams and pending hash comparisons.
func (r *Room) tickLife(now time.Time) {
	for id, s := range r.specs.all() {
		s.advanceVisible(r.next, &r.cfg, r.start.Add(r.strict.paused), now)
		if s.visible > 0 {
			r.send(id, s, s.visible-1, now.Sub(r.start))
		}
	}
	r.life.tick(r.cfg.CatchUpBytes, r.players, &r.specs, r, &r.stats)
	cr := r.checkRoom()
	r.checks.resolvePending(&cr, false)
	if r.ver != nil {
		r.ver.resolve(false, r.next, livePlayers(r.players), &r.events)
	}
}

// lifeMessage handles a lifecycle message from a peer.
func (r *Room) lifeMessage(id int, p *player, msg []byte, now time.Time) error {
	sub, rd, err := lifeKind(msg)
	if err != nil {
		r.stats.Dropped[DropLifecycle]++
		return err
	}
	switch sub {
	case lifeLive:
		f, err := decodeFrameNumber(rd)
		if err != nil || p.live || f > r.next {
			r.stats.Dropped[DropLifecycle]++
			return fmt.Errorf("%w: live at frame %d (already live %v): %v", ErrMalformed, f, p.live, err)
		}
		p.live = true
		after := now.Sub(p.joinedAt)
		p.q.toLive = after
		r.events = append(r.events, Event{Kind: EventLive, Slot: id, Frame: f, After: after})
		return nil
	case lifeReport:
		rep, err := decodePlayReport(rd)
		if err != nil {
			r.stats.Dropped[DropLifecycle]++
			return err
		}
		p.q.report(rep)
		return nil
	case lifeEvents:
		return r.eventMessage(id, p, rd)
	case lifeDump:
		d, err := decodeDumpPart(rd)
		if err != nil || d.frame != p.dumpWant || d.part != p.dumpParts {
			r.stats.Dropped[DropLifecycle]++
			return fmt.Errorf("%w: dump part %d of %d for frame %d, want part %d for %d: %v",
				ErrMalformed, d.part, d.parts, d.frame, p.dumpParts, p.dumpWant, err)
		}
		p.dump = append(p.dump, d.data...)
		p.dumpParts++
		if p.dumpParts == d.parts {
			r.events = append(r.events, Event{Kind: EventDump, Slot: id, Frame: d.frame, Dump: p.dump, Agrees: !p.desynced})
			if r.rec != nil && id < r.cfg.Players {
				r.rec.RecordDump(id, d.frame, !p.desynced, p.dump)
			}
			p.dumpWant, p.dump, p.dumpParts = -1, nil, 0
		}
		return nil
	}
	r.stats.Dropped[DropLifecycle]++
	return fmt.Errorf("%w: lifecycle message %d from a client", ErrMalformed, sub)
}

// eventMessage handles a player's events report.
func (r *Room) eventMessage(id int, p *player, rd *codec.Reader) error {
	rep, err := decodeEventReport(rd)
	switch {
	case err != nil:
		r.stats.Dropped[DropEvent]++
		return err
	case p.spectator:
		r.stats.Dropped[DropSpectator]++
		return fmt.Errorf("%w: a spectator reported events", ErrMalformed)
	case r.ver == nil:
		r.stats.Dropped[DropEvent]++
		return fmt.Errorf("%w: events reported to a room that does not verify them", ErrMalformed)
	case rep.through > r.next:
		r.stats.Dropped[DropEvent]++
		return fmt.Errorf("%w: events through frame %d, only %d cut", ErrMalformed, rep.through, r.next)
	}
	drops, dropped := r.ver.report(id, p, rep, &r.mem, &r.events)
	r.stats.Dropped[DropEvent] += drops
	r.ver.resolve(false, r.next, livePlayers(r.players), &r.events)
	return dropped
}

// Record makes the room record its match with rec (a replay file's
// writer, package lockstep/replay): the frames cut so far at once, then
// each frame as it is cut, the hash comparisons, players leaving and
// joining, and the dumps they send after a desync. It refuses, with
// ErrConfig, a recorder whose configuration is not the room's.
func (r *Room) Record(rec Recorder) error {
	if c := rec.Config(); c.key() != r.cfg.key() {
		return fmt.Errorf("%w: the recording's configuration %+v is not the room's %+v", ErrConfig, c, r.cfg)
	}
	var tmp cutFrame
	for i := range r.next { // frames cut before the recording was attached
		rec.RecordFrame(r.log.encoded(i, &tmp).encoded())
	}
	r.checks.recordTo(rec) // comparisons made so far, without the dissenting hashes
	r.rec = rec
	return nil
}

// MajorityHash returns the hash most players reported for frame, when the
// room compared that frame's hashes and a majority agreed.
func (r *Room) MajorityHash(frame int) (uint64, bool) { return r.checks.majority(frame) }

// checkRoom returns the room's state its hash comparisons work with.
func (r *Room) checkRoom() checkRoom {
	return checkRoom{players: r.players, next: r.next, events: &r.events, rec: r.rec, dumps: r}
}

// Result compares every frame any player reported its events for and
// returns the match's agreed events and the verdicts (Config.VerifyEvents;
// the zero MatchResult otherwise). Call it when the match ends, after the
// last reports arrived; frames reported later are judged against the
// agreed events as they come.
func (r *Room) Result() MatchResult {
	if r.ver == nil {
		return MatchResult{}
	}
	r.ver.resolve(true, r.next, livePlayers(r.players), &r.events)
	return r.ver.result()
}

// SimFrame returns how many frames the server-side simulation has run
// (0 without one).
func (r *Room) SimFrame() int {
	if r.sim == nil {
		return 0
	}
	return r.sim.frame
}

// SimHash returns the server-side simulation's hash after frame, for a
// frame it has run whose number is a multiple of HashEvery.
func (r *Room) SimHash(frame int) (uint64, bool) {
	if r.sim == nil {
		return 0, false
	}
	return r.sim.hash(frame, r.cfg.HashEvery)
}

// Quality returns the quality report so far, as of the last tick. Call it
// live or at the match's end.
func (r *Room) Quality() Quality {
	rep := newQualityReport(r.next, r.now.Sub(r.start), r.checks.desyncs, r.now)
	rep.out.Peers = make([]PeerQuality, 0, len(r.players)+len(r.specs.peers))
	for i := range r.players {
		rep.add(i, &r.players[i])
	}
	for id, s := range r.specs.all() {
		rep.add(id, s)
	}
	return rep.done()
}

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventDesync: the players in Players reported a state hash for Frame
	// that differs from the reference: the room's simulation's when it
	// runs one (Config.Simulation), else the hash a strict majority of at
	// least two reporters agreed on (Agreed says how many). It is the
	// first diverging frame seen for each of them since they joined.
	//
	// Without a simulation in the room this is a vote, and a vote is
	// defeated by collusion: two cheating players of three outvote the
	// honest one. Ranked matches should run the simulation in the room.
	EventDesync EventKind = iota + 1
	// EventDump: the peer in Slot sent the state dump asked for Frame
	// after a desync; Agrees is set for the agreeing client asked for
	// comparison.
	EventDump
	// EventLive: the peer in Slot caught up after joining and plays live
	// from Frame; After is the time from Join (or AddSpectator) to then.
	EventLive
	// EventSimBehind: the room's server-side simulation is Behind frames
	// behind the cut, having run frames 0 .. Frame-1 (raised again only
	// after it caught up).
	EventSimBehind
	// EventVerdict: the players in Players reported game events for Frame
	// that differ from the agreed ones (the majority's, or the room's
	// simulation's; with no majority every reporter). Each player is named
	// once, at its first disagreeing frame; Room.Result has the rest.
	EventVerdict
	// EventDispute: the players in Players reported different hashes for
	// Frame (Hashes, in the same order) and no strict majority of two or
	// more agreed, so no one is named: with two players, one of them is
	// wrong and the room cannot tell which. Raised at the first disputed
	// frame, and again only after a frame on which the reporters agreed.
	EventDispute
	// EventViewCut: in an authoritative room, the views of Frame for the
	// players in Players were over the bounds (MaxChangeBytes, and
	// MaxViewBytes with MaxViewParts parts of ViewPartBytes): changes
	// were left out (RoomStats.ViewOverflow), and the frame says so to
	// those players (Frame.ViewCut).
	EventViewCut
	// EventWaiting: a strict room (Config.Strict) has waited long enough
	// for the players in Players to seal Frame that they were told; their
	// clients show it (Step.WaitingFor).
	EventWaiting
	// EventWaited: a strict room's wait ended and it cut Frame, After the
	// time it was due; Players are those it gave up on after
	// Config.StrictWait (their input is made up until they are in time
	// again). Raised after an EventWaiting, or when someone was given up on.
	EventWaited
)

func (k EventKind) String() string {
	switch k {
	case EventDesync:
		return "desync"
	case EventDump:
		return "dump"
	case EventLive:
		return "live"
	case EventSimBehind:
		return "sim_behind"
	case EventVerdict:
		return "verdict"
	case EventDispute:
		return "dispute"
	case EventViewCut:
		return "view_cut"
	case EventWaiting:
		return "waiting"
	case EventWaited:
		return "waited"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event is something the room reports to the engine (see Room.Events).
type Event struct {
	Kind    EventKind
	Frame   int
	Players []int         // EventDesync, EventVerdict, EventDispute, EventViewCut, EventWaiting, EventWaited: the players named, ascending
	Agreed  int           // EventDesync: how many players agreed on the reference hash
	Hashes  []uint64      // EventDispute: each named player's hash
	Slot    int           // EventDump, EventLive: the peer
	Dump    []byte        // EventDump: the game's state dump
	Agrees  bool          // EventDump: the peer agreed with the majority
	After   time.Duration // EventLive: time from joining to live; EventWaited: how long the room waited
	Behind  int           // EventSimBehind: frames behind the cut
}

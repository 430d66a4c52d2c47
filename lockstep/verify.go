package lockstep

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/tongbu/tongbu/codec"
)

// Game event bounds (SPEC.md section 7.4, sub-kind 6).
const (
	// MaxEventBytes bounds one game event.
	MaxEventBytes = 255
	// MaxEventsPerFrame bounds the events one player reports for one
	// frame; more are dropped.
	MaxEventsPerFrame = 32
	maxEventsPerMsg   = 63
	// maxPendingEvents bounds the events held for one player awaiting
	// comparison; more are dropped.
	maxPendingEvents = 4096
	// eventWindow is how long, in seconds of frames, the room waits for
	// every live player's events of a frame before comparing the ones it
	// has.
	eventWindow = 5
)

// EventSource is a Simulation that reports the game events of the frame
// it last stepped. A room running one (Config.Simulation) with
// Config.VerifyEvents takes its events as the reference, as its hash is
// for desync detection.
type EventSource interface {
	Simulation
	// StepEvents returns the events the last Step produced, in order (the
	// room copies them).
	StepEvents() [][]byte
}

// GameEvent is one event of a match as the room agreed it.
type GameEvent struct {
	Frame int
	Data  []byte
}

// PlayerVerdict is the room's word on one player's event reports.
type PlayerVerdict struct {
	// Disagreed counts the frames whose events the player reported
	// differently from the agreed ones; First is the first, or -1.
	Disagreed int
	First     int
	// Through is how many frames, from frame 0, the player reported its
	// events for: frames beyond it were compared without the player.
	Through int
}

// MatchResult is what event verification concluded (Room.Result).
type MatchResult struct {
	// Frames 0 .. Frames-1 were compared.
	Frames int
	// Events is the agreed sequence: for each frame, the events a majority
	// of the players who reported it agreed on (or the room's simulation's),
	// in frame order.
	Events []GameEvent
	// NoMajority lists the frames on whose events no majority agreed;
	// their events are not in Events.
	NoMajority []int
	// Players holds a verdict per slot.
	Players []PlayerVerdict
}

// verifier is a room's event verification state.
type verifier struct {
	done       int // frames 0 .. done-1 compared
	agreed     []GameEvent
	noMajority []int
	verdicts   []PlayerVerdict
	named      []bool
	pend       [][]GameEvent // per player: events of frames >= done, in order
	through    []int         // per player: frames reported complete, this session and before
	gaps       [][][2]int    // per player: frames it never ran (skipped by a snapshot), [from, to)
	sim        EventSource   // the reference, when the room runs one
	ref        *serverSim    // the room's simulation, nil without one
	simEvents  []GameEvent   // its events of frames >= done
	keys       [MaxPlayers][]byte
	hz         int // the room's frame rate
}

// newVerifier returns the event verification of a room of players slots
// cutting hz frames a second; ref is the room's simulation, nil without
// one, and the reference when it reports events.
func newVerifier(players, hz int, ref *serverSim) *verifier {
	v := &verifier{pend: make([][]GameEvent, players), through: make([]int, players), gaps: make([][][2]int, players),
		verdicts: make([]PlayerVerdict, players), named: make([]bool, players), hz: hz, ref: ref}
	for i := range v.verdicts {
		v.verdicts[i].First = -1
	}
	var sim Simulation
	if ref != nil {
		sim = ref.sim
	}
	v.sim, _ = sim.(EventSource)
	return v
}

// eventReport is a client's events message (lifeEvents): its events of
// frames before through, and that every frame before through is complete.
type eventReport struct {
	through int
	events  []GameEvent
}

func (e *eventReport) encode(w *codec.Writer) {
	writeLife(w, lifeEvents)
	w.WriteUvarint(uint64(e.through))
	w.WriteUint(uint64(len(e.events)), maxEventsPerMsg)
	prev := 0
	for _, ev := range e.events {
		w.WriteUvarint(uint64(ev.Frame - prev))
		w.WriteBytes(ev.Data, MaxEventBytes)
		prev = ev.Frame
	}
}

func decodeEventReport(r *codec.Reader) (eventReport, error) {
	var e eventReport
	through := r.ReadUvarint()
	n := int(r.ReadUint(maxEventsPerMsg))
	if err := r.Err(); err != nil || through > maxFrame {
		return e, fmt.Errorf("%w: events through frame %d: %v", ErrMalformed, through, err)
	}
	e.through = int(through)
	frame := uint64(0)
	for i := range n {
		d := r.ReadUvarint()
		data := r.ReadBytes(nil, MaxEventBytes)
		if err := r.Err(); err != nil {
			return e, fmt.Errorf("%w: event %d: %w", ErrMalformed, i, err)
		}
		// frame < through holds, so this also refuses a delta that would
		// wrap frame around to an earlier one.
		if d >= through-frame {
			return e, fmt.Errorf("%w: event for frame %d+%d in a report through %d", ErrMalformed, frame, d, through)
		}
		frame += d
		e.events = append(e.events, GameEvent{Frame: int(frame), Data: data})
	}
	if err := r.Done(); err != nil {
		return e, fmt.Errorf("%w: events: %w", ErrMalformed, err)
	}
	return e, nil
}

// report takes player id's events report, rep, which the room checked
// (rep.through is a frame cut), keeping the events in mem; disagreements
// with frames already compared raise events. It returns how many events it
// dropped, and why it dropped the last.
func (v *verifier) report(id int, p *player, rep eventReport, mem *arena, events *[]Event) (drops uint64, dropped error) {
	from := max(v.through[id], p.evFrom) // frames already reported, or not run by this client
	perFrame, last := 0, -1
	for _, ev := range rep.events {
		if ev.Frame < from {
			if ev.Frame < p.evFrom || p.evRerun {
				continue // a rejoined client running frames it reported before it left
			}
			drops++
			dropped = fmt.Errorf("%w: event for frame %d, reported complete through %d", ErrMalformed, ev.Frame, from)
			continue
		}
		if ev.Frame == last {
			perFrame++
		} else {
			last, perFrame = ev.Frame, 1
		}
		if perFrame > MaxEventsPerFrame || len(v.pend[id]) >= maxPendingEvents {
			drops++
			dropped = fmt.Errorf("%w: over %d events for frame %d, or %d held", ErrMalformed, MaxEventsPerFrame, ev.Frame, maxPendingEvents)
			continue
		}
		if ev.Frame < v.done {
			v.lateEvents(id, ev.Frame, rep.events, events)
			continue
		}
		v.pend[id] = append(v.pend[id], GameEvent{Frame: ev.Frame, Data: mem.keep(ev.Data)})
	}
	if rep.through > v.through[id] {
		// Frames compared without this player, and now reported complete
		// with no events: check those against the agreed ones too.
		for f := max(v.through[id], p.evFrom); f < min(rep.through, v.done); f++ {
			if !slices.ContainsFunc(rep.events, func(e GameEvent) bool { return e.Frame == f }) {
				v.lateEvents(id, f, nil, events)
			}
		}
		v.through[id] = rep.through
		p.evRerun = false // past what it reported before it left
	}
	return drops, dropped
}

// lateEvents checks a player's events of a frame already compared
// against the agreed ones (a rejoined client's, or a slow one's).
func (v *verifier) lateEvents(id, frame int, evs []GameEvent, events *[]Event) {
	if _, bad := slices.BinarySearch(v.noMajority, frame); bad {
		return
	}
	var mine [][]byte
	for _, e := range evs {
		if e.Frame == frame {
			mine = append(mine, e.Data)
		}
	}
	lo, _ := slices.BinarySearchFunc(v.agreed, frame, func(e GameEvent, f int) int { return e.Frame - f })
	hi := lo
	for hi < len(v.agreed) && v.agreed[hi].Frame == frame {
		hi++
	}
	same := len(mine) == hi-lo
	for i := 0; same && i < len(mine); i++ {
		same = bytes.Equal(mine[i], v.agreed[lo+i].Data)
	}
	if !same && v.through[id] <= frame {
		v.through[id] = frame + 1 // judged once
		v.disagree(frame, []int{id}, events)
	}
}

// disagree records the players whose events of frame differ from the
// agreed ones and names the ones not named before.
func (v *verifier) disagree(frame int, ids []int, events *[]Event) {
	var fresh []int
	for _, i := range ids {
		pv := &v.verdicts[i]
		pv.Disagreed++
		if pv.First < 0 {
			pv.First = frame
		}
		if !v.named[i] {
			v.named[i] = true
			fresh = append(fresh, i)
		}
	}
	if len(fresh) > 0 {
		*events = append(*events, Event{Kind: EventVerdict, Frame: frame, Players: fresh})
	}
}

// takeSimEvents takes the room's simulation's events of the frame it
// just ran, keeping them in mem, when the simulation is the reference.
func (v *verifier) takeSimEvents(frame int, mem *arena) {
	if v.sim == nil {
		return
	}
	for _, e := range v.sim.StepEvents() {
		if len(e) <= MaxEventBytes {
			v.simEvents = append(v.simEvents, GameEvent{Frame: frame, Data: mem.keep(e)})
		}
	}
}

// resolve compares the players' events frame by frame: each frame once
// every live player (by slot, in live) reported it complete, or once it
// is eventWindow seconds old; with final, every frame anybody reported.
// next is the room's next frame to cut.
func (v *verifier) resolve(final bool, next int, live uint32, events *[]Event) {
	// The frames every live player has reported, and those old enough to
	// compare without the others.
	upTo, anyone := next, 0
	for i := range v.through {
		anyone = max(anyone, v.through[i])
		if live&(1<<i) != 0 {
			upTo = min(upTo, v.through[i])
		}
	}
	if final {
		// Every frame a majority of the players reported: beyond, a
		// minority could outvote the others.
		th := slices.Clone(v.through)
		slices.Sort(th)
		upTo = th[len(th)-(len(th)/2+1)]
	} else {
		upTo = max(min(upTo, anyone), min(anyone, next-eventWindow*v.hz))
	}
	if v.sim != nil {
		upTo = min(upTo, v.ref.frame) // the reference is not computed yet
	}
	for v.done < upTo {
		// The next frame with any event: every frame before it is empty
		// for everyone, and agreed.
		f := upTo
		for i := range v.pend {
			if len(v.pend[i]) > 0 {
				f = min(f, v.pend[i][0].Frame)
			}
		}
		if len(v.simEvents) > 0 {
			f = min(f, v.simEvents[0].Frame)
		}
		if f >= upTo {
			v.done = upTo
			break
		}
		v.done = f
		v.compareFrame(f, events)
		v.done = f + 1
	}
}

// compareFrame compares the players' events of frame f, the first not yet
// compared, and takes them off the pending lists.
func (v *verifier) compareFrame(f int, events *[]Event) {
	var reporters []int
	for i := range v.pend {
		n := 0
		for n < len(v.pend[i]) && v.pend[i][n].Frame == f {
			n++
		}
		key := v.keys[i][:0]
		for _, e := range v.pend[i][:n] {
			key = append(key, byte(len(e.Data)))
			key = append(key, e.Data...)
		}
		v.keys[i] = key
		if v.through[i] > f && !v.skipped(i, f) {
			reporters = append(reporters, i)
		}
		v.pend[i] = v.pend[i][n:]
	}
	var agreed []GameEvent
	var ref []byte
	found := false
	if v.sim != nil {
		n := 0
		for n < len(v.simEvents) && v.simEvents[n].Frame == f {
			ref = append(ref, byte(len(v.simEvents[n].Data)))
			ref = append(ref, v.simEvents[n].Data...)
			n++
		}
		agreed, found = v.simEvents[:n:n], true
		v.simEvents = v.simEvents[n:]
	} else {
		for _, i := range reporters {
			count := 0
			for _, j := range reporters {
				if bytes.Equal(v.keys[i], v.keys[j]) {
					count++
				}
			}
			if count*2 > len(reporters) {
				ref, found = v.keys[i], true
				agreed = eventsOfKey(f, ref)
				break
			}
		}
	}
	var div []int
	for _, i := range reporters {
		if !found || !bytes.Equal(v.keys[i], ref) {
			div = append(div, i)
		}
	}
	if found {
		v.agreed = append(v.agreed, agreed...)
	} else if len(reporters) > 0 {
		v.noMajority = append(v.noMajority, f)
	}
	if len(div) > 0 {
		v.disagree(f, div, events)
	}
}

// skipped reports whether player i never ran frame f: a snapshot took it
// past it.
func (v *verifier) skipped(i, f int) bool {
	for _, g := range v.gaps[i] {
		if f >= g[0] && f < g[1] {
			return true
		}
	}
	return false
}

// joined notes that a rejoining player's client starts at frame from: the
// frames between what it reported and from it will never run.
func (v *verifier) joined(i, from int) {
	if from > v.through[i] && len(v.gaps[i]) < 64 {
		v.gaps[i] = append(v.gaps[i], [2]int{v.through[i], from})
		v.through[i] = from
	}
}

// eventsOfKey splits a frame's comparison key back into events.
func eventsOfKey(f int, key []byte) []GameEvent {
	var out []GameEvent
	for len(key) > 0 {
		n := int(key[0])
		out = append(out, GameEvent{Frame: f, Data: slices.Clone(key[1 : 1+n])})
		key = key[1+n:]
	}
	return out
}

// result returns the match's agreed events and the verdicts so far.
func (v *verifier) result() MatchResult {
	res := MatchResult{Frames: v.done, Events: slices.Clone(v.agreed), NoMajority: slices.Clone(v.noMajority),
		Players: slices.Clone(v.verdicts)}
	for i := range res.Players {
		res.Players[i].Through = v.through[i]
	}
	return res
}

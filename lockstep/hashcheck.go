package lockstep

import (
	"fmt"
	"slices"
)

// hashChecks is a room's desync detection: it collects the state hashes
// the players report every HashEvery frames, compares each frame's
// against a reference (the room's simulation's hash, or the hash a
// majority agreed on), and names the players who diverge.
type hashChecks struct {
	every        int        // Config.HashEvery
	hz           int        // Config.Hz
	dumpOnDesync bool       // Config.DumpOnDesync
	ref          *serverSim // the room's simulation, nil without one

	pending []hashCheck   // pending comparisons, by frame
	results []checkResult // resolved comparisons, by frame / HashEvery
	// disputing is set by a comparison with no majority (EventDispute)
	// and cleared by one on which every reporter agreed.
	disputing bool
	// desyncs counts the compared frames on which players disagreed
	// (EventDesync and EventDispute), for the quality report.
	desyncs int
}

// newHashChecks returns the desync detection of a room with cfg; ref is
// the room's simulation, nil without one.
func newHashChecks(cfg *Config, ref *serverSim) hashChecks {
	return hashChecks{every: cfg.HashEvery, hz: cfg.Hz, dumpOnDesync: cfg.DumpOnDesync, ref: ref}
}

// checkRoom is the room's state a comparison reads and acts on: the
// players (it flags the ones who diverge), the frames cut, the room's
// event list, its recording, and who asks peers for dumps. The room makes
// one for each call.
type checkRoom struct {
	players []player
	next    int      // the room's next frame to cut
	events  *[]Event // the room's events, where desyncs are raised
	rec     Recorder // the match's recording, or nil
	dumps   dumpAsker
}

// dumpAsker asks a peer for a dump of its state after a frame
// (Room.RequestDump).
type dumpAsker interface {
	RequestDump(id, frame int) error
}

// hashCheck collects the hashes players reported for one frame.
type hashCheck struct {
	frame    int
	reported uint32
	hashes   [MaxPlayers]uint64
}

// checkResult is a resolved comparison.
type checkResult struct {
	known     bool
	ref       bool   // hash is the server-side simulation's
	hash      uint64 // the majority's hash (when majority)
	agree     uint32 // the players who reported it
	support   int    // how many agreed, when that was a majority (or ref)
	reporters int    // how many had reported when it was resolved
}

// decided reports whether the comparison has a reference hash: the
// simulation's, or a majority's.
func (c *checkResult) decided() bool { return c.ref || c.support > 0 }

// hashWindow is how long, in seconds of frames, the room waits for every
// live player's hash of a frame before comparing the ones it has.
const hashWindow = 3

// report takes player slot's hash of its state after frame, and
// compares what can be compared. It returns why the report was dropped,
// if it was.
func (h *hashChecks) report(rm *checkRoom, slot int, p *player, frame int, hash uint64) error {
	k := h.every
	if k < 0 || frame%k != 0 || frame >= rm.next {
		return fmt.Errorf("%w: hash of frame %d (every %d, %d cut)", ErrMalformed, frame, k, rm.next)
	}
	idx := frame / k
	if idx < len(h.results) && h.results[idx].known {
		res := &h.results[idx]
		if res.agree&(1<<slot) != 0 || !res.decided() {
			return nil // a late report decides nothing alone
		}
		if hash == res.hash {
			res.agree |= 1 << slot
			return nil
		}
		// A late report (a rejoined client catching up) that differs: it
		// is named while the majority still holds with it counted.
		res.reporters++
		if !p.desynced && (res.ref || res.support*2 > res.reporters) {
			h.diverge(rm, frame, []int{slot}, res.agree, res.support)
		}
		return nil
	}
	if idx < len(h.results) {
		return nil // compared without it: nobody had reported it in time
	}
	i, found := slices.BinarySearchFunc(h.pending, frame, func(c hashCheck, f int) int { return c.frame - f })
	if !found {
		if len(h.pending) >= 8*hashWindow*h.hz/k+8 {
			return fmt.Errorf("%w: too many frames awaiting comparison", ErrMalformed)
		}
		h.pending = slices.Insert(h.pending, i, hashCheck{frame: frame})
	}
	c := &h.pending[i]
	if c.reported&(1<<slot) != 0 {
		if c.hashes[slot] != hash {
			return fmt.Errorf("%w: player %d reported two hashes for frame %d", ErrMalformed, slot, frame)
		}
		return nil
	}
	c.reported |= 1 << slot
	c.hashes[slot] = hash
	h.resolvePending(rm, true)
	return nil
}

// bitsCount returns how many bits of x are set.
func bitsCount(x uint32) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// resolvePending compares the pending checks in frame order: each once
// every live player has reported (two at least, unless the room's
// simulation is the reference), or once it is hashWindow seconds old.
func (h *hashChecks) resolvePending(rm *checkRoom, onlyComplete bool) {
	want := livePlayers(rm.players)
	for len(h.pending) > 0 {
		c := &h.pending[0]
		// A lone live player's report is not complete: it would decide
		// the frame alone.
		complete := c.reported&want == want && (h.ref != nil || bitsCount(c.reported) >= 2)
		old := rm.next-c.frame > hashWindow*h.hz
		if !complete && (onlyComplete || !old) {
			return
		}
		if h.ref != nil && c.frame >= h.ref.frame {
			return // the reference is not computed yet
		}
		h.resolve(rm, c)
		h.pending = slices.Delete(h.pending, 0, 1)
	}
}

// resolve compares the hashes of one frame.
func (h *hashChecks) resolve(rm *checkRoom, c *hashCheck) {
	idx := c.frame / h.every
	for len(h.results) <= idx {
		h.results = append(h.results, checkResult{})
	}
	reporters := bitsCount(c.reported)
	best, support := uint64(0), 0
	for i := range rm.players {
		if c.reported&(1<<i) == 0 {
			continue
		}
		n := 0
		for j := range rm.players {
			if c.reported&(1<<j) != 0 && c.hashes[j] == c.hashes[i] {
				n++
			}
		}
		if n > support {
			best, support = c.hashes[i], n
		}
	}
	res := checkResult{known: true, reporters: reporters}
	var div []int
	if support*2 > reporters && support >= 2 { // a quorum: two or more, and a strict majority
		res.hash, res.support = best, support
	}
	if h.ref != nil && idx < len(h.ref.hashes) {
		// The room's own simulation is the reference: attribution works
		// with any number of players.
		best = h.ref.hashes[idx]
		res = checkResult{known: true, ref: true, hash: best, reporters: reporters}
		for i := range rm.players {
			if c.reported&(1<<i) != 0 && c.hashes[i] == best {
				res.support++
			}
		}
	}
	if !res.decided() {
		h.results[idx] = res
		if rm.rec != nil {
			rm.rec.RecordCheck(recorded(c, res))
		}
		h.dispute(rm, c)
		return
	}
	for i := range rm.players {
		if c.reported&(1<<i) == 0 {
			continue
		}
		if c.hashes[i] == best {
			res.agree |= 1 << i
		} else if !rm.players[i].desynced {
			div = append(div, i)
		}
	}
	h.results[idx] = res
	if rm.rec != nil {
		rm.rec.RecordCheck(recorded(c, res))
	}
	if res.agree == c.reported {
		h.disputing = false
	}
	if len(div) > 0 {
		h.diverge(rm, c.frame, div, res.agree, res.support)
	}
}

// dispute handles a comparison with no reference hash: when the reporters
// disagree, it raises EventDispute naming them all (once, until a frame on
// which they agree) and flags no one.
func (h *hashChecks) dispute(rm *checkRoom, c *hashCheck) {
	var players []int
	var hashes []uint64
	agreed := true
	for i := range rm.players {
		if c.reported&(1<<i) != 0 {
			players = append(players, i)
			hashes = append(hashes, c.hashes[i])
			agreed = agreed && c.hashes[i] == hashes[0]
		}
	}
	if agreed { // a lone reporter, or all alike without a quorum
		if len(players) >= 2 {
			h.disputing = false
		}
		return
	}
	if h.disputing {
		return
	}
	h.disputing = true
	*rm.events = append(*rm.events, Event{Kind: EventDispute, Frame: c.frame, Players: players, Hashes: hashes})
	h.desyncs++
}

// diverge raises a desync event naming the players in div, against the
// reference that the players in agree (agreed of them) reported, and asks
// for dumps when so configured.
func (h *hashChecks) diverge(rm *checkRoom, frame int, div []int, agree uint32, agreed int) {
	slices.Sort(div)
	for _, i := range div {
		p := &rm.players[i]
		p.desynced = true
		if !p.q.desynced { // the match's quality report keeps the first
			p.q.desyncAt, p.q.desynced = frame, true
		}
	}
	*rm.events = append(*rm.events, Event{Kind: EventDesync, Frame: frame, Players: div, Agreed: agreed})
	h.desyncs++
	if !h.dumpOnDesync {
		return
	}
	for _, i := range div {
		rm.dumps.RequestDump(i, frame)
	}
	for i := range rm.players {
		if agree&(1<<i) != 0 && !rm.players[i].desynced && !rm.players[i].away {
			rm.dumps.RequestDump(i, frame)
			break
		}
	}
}

// majority returns the hash most players reported for frame, when the
// frame's hashes were compared and a majority agreed.
func (h *hashChecks) majority(frame int) (uint64, bool) {
	k := h.every
	if k < 0 || frame < 0 || frame%k != 0 || frame/k >= len(h.results) {
		return 0, false
	}
	res := h.results[frame/k]
	return res.hash, res.known && res.decided()
}

// recordTo hands the comparisons made so far to a recording attached
// late, without the dissenting hashes.
func (h *hashChecks) recordTo(rec Recorder) {
	for i, res := range h.results {
		if res.known {
			rec.RecordCheck(recorded(&hashCheck{frame: i * h.every, reported: res.agree}, res))
		}
	}
}

package sctp

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
)

// The receiving side: which TSNs arrived (tsnSet), and the DATA chunks
// held until their message is whole or its turn comes (holding).
//
// What a peer can make one association hold, and what each packet can
// cost, is bounded whatever the peer sends:
//
//   - tsnSet is a bitmap of the maxTSNWindow TSNs above the cumulative
//     one (1 KiB, made on the first gap). Marking a TSN is O(1), moving
//     the cumulative TSN over what arrived is O(1) a TSN passed, a
//     FORWARD-TSN clears at most maxTSNWindow bits a word at a time, and
//     a SACK's gap blocks are found a word at a time (at most
//     maxTSNWindow/64 words, and maxGaps blocks).
//   - holding keeps at most maxHeld chunks, each charged its payload and
//     chunkOverhead against the receive window (the window a SACK
//     advertises shrinks by both), plus heldReserve more for the chunks
//     everything else waits on, so that a full buffer never deadlocks an
//     honest peer. A chunk over the bounds is dropped unacknowledged: a
//     sane peer retransmits it or steps over it. Chunks are found by TSN
//     in a map, and each run of consecutive fragments keeps its two ends
//     and its size at those ends, so a chunk's arrival costs a few map
//     operations whatever is held; a whole message is delivered, and a
//     message that can no longer complete (a TSN next to it arrived that
//     does not continue it) is dropped, in one pass over its own chunks.
//     A FORWARD-TSN drops what it steps over in one pass over what is
//     held.
const (
	chunkOverhead = 256 // bytes charged for each chunk held, beside its payload
	maxHeld       = 256 // chunks held before new ones are dropped
	heldReserve   = 128 // more, only for the chunks every other one waits on
)

// tsnSet records the TSNs received: every TSN up to cum, and a bitmap of
// those above it.
type tsnSet struct {
	cum  uint32
	bits *[maxTSNWindow / 64]uint64 // TSN x in (cum, cum+maxTSNWindow] is bit x % maxTSNWindow
	n    int                        // TSNs marked above cum
	top  uint32                     // the highest marked above cum, when n > 0
	work int                        // words visited, for Assoc.Work
}

// has reports whether x arrived.
func (s *tsnSet) has(x uint32) bool {
	if tsnLE(x, s.cum) {
		return true
	}
	if s.n == 0 || x-s.cum > maxTSNWindow {
		return false
	}
	i := x % maxTSNWindow
	return s.bits[i/64]&(1<<(i%64)) != 0
}

// add marks x, which is above cum, within maxTSNWindow of it, and not
// marked, and moves cum over what is now contiguous.
func (s *tsnSet) add(x uint32) {
	if x == s.cum+1 && s.n == 0 {
		s.cum = x
		return
	}
	if s.bits == nil {
		s.bits = new([maxTSNWindow / 64]uint64)
	}
	i := x % maxTSNWindow
	s.bits[i/64] |= 1 << (i % 64)
	if s.n == 0 || tsnLess(s.top, x) {
		s.top = x
	}
	s.n++
	s.advance()
}

// advance moves cum over the marked TSNs just above it.
func (s *tsnSet) advance() {
	if s.n == 0 || !s.has(s.cum+1) {
		return
	}
	end := s.cum + maxTSNWindow
	if s.n > 0 && tsnLess(s.top, end) {
		end = s.top
	}
	s.forward(s.next(s.cum+1, end, false) - 1)
}

// forward moves cum to to (above cum, within maxTSNWindow): a FORWARD-TSN
// stepped over what lies between, or it all arrived. The bits between are
// cleared a word at a time.
func (s *tsnSet) forward(to uint32) {
	for x := s.cum + 1; s.n > 0 && tsnLE(x, to); {
		i := x % maxTSNWindow
		off := i % 64
		n := min(64-off, to-x+1)
		mask := ^uint64(0) >> (64 - n) << off
		w := &s.bits[i/64]
		s.n -= bits.OnesCount64(*w & mask)
		*w &^= mask
		x += n
		s.work++
	}
	s.cum = to
	s.advance()
}

// next returns the first TSN in [x, end] whose bit is set (or clear, for
// set false), or end+1.
func (s *tsnSet) next(x, end uint32, set bool) uint32 {
	for tsnLE(x, end) {
		i := x % maxTSNWindow
		w := s.bits[i/64]
		if !set {
			w = ^w
		}
		if w >>= i % 64; w != 0 {
			if y := x + uint32(bits.TrailingZeros64(w)); tsnLE(y, end) {
				return y
			}
			return end + 1
		}
		x += 64 - i%64
		s.work++
	}
	return end + 1
}

// gaps fills g with the runs of marked TSNs above cum, lowest first, as
// offsets from cum (a SACK's gap blocks), and returns how many.
func (s *tsnSet) gaps(g *[maxGaps][2]uint16) int {
	if s.n == 0 {
		return 0
	}
	n := 0
	for x := s.cum + 1; n < maxGaps; n++ {
		a := s.next(x, s.top, true)
		if tsnLess(s.top, a) {
			break
		}
		b := s.next(a, s.top, false) - 1
		g[n] = [2]uint16{uint16(a - s.cum), uint16(b - s.cum)}
		x = b + 1
	}
	return n
}

// heldChunk is a DATA chunk held for reassembly or order.
type heldChunk struct {
	tsn    uint32
	stream uint16
	ssn    uint16
	ppid   uint32
	flags  uint8
	data   []byte
	// The run of consecutive fragments of one message this chunk is in:
	// its first and last TSN and its payload, right at the run's two ends
	// (a chunk inside a run keeps what was true when it was an end).
	first, last uint32
	size        int
	used        bool // the slab slot holds a chunk
}

func (c *heldChunk) begins() bool    { return c.flags&flagBegin != 0 }
func (c *heldChunk) ends() bool      { return c.flags&flagEnd != 0 }
func (c *heldChunk) unordered() bool { return c.flags&flagUnordered != 0 }

// continues reports whether n, the chunk at the TSN after p's, is the
// next fragment of p's message.
func continues(p, n *heldChunk) bool {
	return !p.ends() && !n.begins() && p.stream == n.stream && p.unordered() == n.unordered() &&
		(p.unordered() || p.ssn == n.ssn)
}

// holding is the chunks held, by TSN.
type holding struct {
	slab    []heldChunk
	free    []int32
	at      tsnTable          // TSN: index in slab
	ready   map[uint32]uint32 // stream<<16 | SSN: first TSN of a whole ordered message waiting its turn
	n       int               // chunks held
	charged int               // their payload, and chunkOverhead each
	work    int               // map operations, for Assoc.Work
}

func (h *holding) get(tsn uint32) *heldChunk {
	if h.n == 0 {
		return nil
	}
	i, ok, probes := h.at.get(tsn)
	h.work += probes
	if ok {
		return &h.slab[i]
	}
	return nil
}

// fits reports whether a chunk of size bytes may be held within the
// window and the count, stretched by the reserve when reserve is set.
func (h *holding) fits(size int, window uint32, reserve bool) bool {
	n, w := maxHeld, int(window)
	if reserve {
		n, w = maxHeld+heldReserve, w+w/2
	}
	return h.n < n && h.charged+size+chunkOverhead <= w
}

// put holds a copy of c and returns it.
func (h *holding) put(c heldChunk) *heldChunk {
	switch {
	case len(h.at.slots) == 0:
		h.at.init(32)
	case h.n == 16 && len(h.at.slots) < tsnTableMax:
		// Past a few chunks, the table and the slab are made once at
		// their full size, so that no packet pays for growing them again
		// and again.
		h.at.grow(tsnTableMax)
		h.slab = slices.Grow(h.slab, maxHeld+heldReserve-len(h.slab))
	}
	var i int32
	if k := len(h.free); k > 0 {
		i = h.free[k-1]
		h.free = h.free[:k-1]
	} else {
		h.slab = append(h.slab, heldChunk{})
		i = int32(len(h.slab) - 1)
	}
	s := &h.slab[i]
	data := append(s.data[:0], c.data...) // the slot's old buffer, when it is large enough
	*s = c
	s.data, s.used = data, true
	h.work += h.at.put(c.tsn, i)
	h.n++
	h.charged += len(data) + chunkOverhead
	return s
}

// remove lets go of the chunk at tsn.
func (h *holding) remove(tsn uint32) {
	i, ok, _ := h.at.get(tsn)
	if !ok {
		h.work++
		return
	}
	h.work += h.at.del(tsn)
	h.slab[i].used = false
	h.charged -= len(h.slab[i].data) + chunkOverhead
	h.n--
	h.free = append(h.free, i)
	if h.n == 0 {
		h.reset()
	}
}

// reset lets go of everything; a large slab goes back to the heap, so a
// peer that once filled it does not keep it.
func (h *holding) reset() {
	if len(h.slab) > 16 {
		*h = holding{}
		return
	}
	clear(h.at.slots)
	clear(h.ready)
	h.free = h.free[:0]
	for i := range h.slab {
		h.free = append(h.free, int32(i))
	}
	h.n, h.charged = 0, 0
}

// handleData takes one DATA chunk.
func (a *Assoc) handleData(c Chunk) error {
	a.work++
	d, err := parseData(c)
	if err != nil {
		return err
	}
	if len(d.data) == 0 {
		return fmt.Errorf("%w: empty DATA", ErrProtocol)
	}
	if a.recv.has(d.tsn) {
		if len(a.dups) < maxDups {
			a.dups = append(a.dups, d.tsn)
		}
		a.sackNow = true
		return nil
	}
	if d.tsn-a.recv.cum > maxTSNWindow {
		a.stats.Dropped++
		return nil // not acknowledged: a sane peer retransmits or steps over it
	}
	if d.stream >= maxStreams {
		a.recv.add(d.tsn)
		a.stats.DataRecv++
		a.stats.Dropped++
		return nil
	}
	nc := heldChunk{tsn: d.tsn, stream: d.stream, ssn: d.ssn, ppid: d.ppid, flags: d.flags, data: d.data, size: len(d.data)}
	// The run the chunk would make with the fragments held beside it.
	first, last, size := d.tsn, d.tsn, len(d.data)
	prev, next := a.held.get(d.tsn-1), a.held.get(d.tsn+1)
	if prev != nil && continues(prev, &nc) {
		first, size = prev.first, size+prev.size
	} else {
		prev = nil
	}
	if next != nil && continues(&nc, next) {
		last, size = next.last, size+next.size
	} else {
		next = nil
	}
	begins, ends := nc.begins(), nc.ends()
	if prev != nil {
		begins = a.held.get(first).begins()
	}
	if next != nil {
		ends = a.held.get(last).ends()
	}
	ordered := !nc.unordered()
	inTurn := !ordered || d.ssn == a.nextSSN[d.stream]
	switch {
	case begins && ends && inTurn: // delivered now: it frees more than it takes
	case a.held.fits(len(d.data), a.cfg.RecvWindow, false):
	case (d.tsn == a.recv.cum+1 || ordered && inTurn) && a.held.fits(len(d.data), a.cfg.RecvWindow, true):
	default:
		a.stats.Dropped++
		a.stats.HeldFull++
		return nil // not acknowledged
	}
	a.recv.add(d.tsn)
	a.stats.DataRecv++
	if first == last && begins && ends && inTurn {
		// A whole message in one chunk, in its turn: nothing is held.
		if ordered {
			a.nextSSN[d.stream]++
		}
		a.deliver(d.stream, d.ppid, d.data)
		a.dropDeadBeside(d.tsn)
		if ordered {
			a.deliverReady(d.stream)
		}
		return nil
	}
	if size > a.cfg.MaxMessage {
		a.close(fmt.Errorf("%w: a message over %d bytes", ErrProtocol, a.cfg.MaxMessage))
		return a.err
	}
	a.held.put(nc)
	lo, hi := a.held.get(first), a.held.get(last)
	lo.first, lo.last, lo.size = first, last, size
	hi.first, hi.last, hi.size = first, last, size
	a.dropDeadBeside(d.tsn)
	switch {
	case begins && ends:
		a.whole(first, last)
	case !begins && a.recv.has(first-1) || !ends && a.recv.has(last+1):
		a.dropRun(first, last) // it can never complete
	}
	if a.held.n > a.stats.HeldMax {
		a.stats.HeldMax = a.held.n
	}
	return nil
}

// dropDeadBeside drops the runs held just below and just above tsn,
// which has arrived, when they can never complete now: the run below
// does not end and tsn does not continue it; the run above does not
// handleForward takes a FORWARD-TSN: the peer gave up on everything up
// to its new cumulative TSN.
func (a *Assoc) handleForward(c Chunk) error {
	if len(c.Value) < 4 || (len(c.Value)-4)%4 != 0 {
		return fmt.Errorf("%w: FORWARD-TSN of %d bytes", ErrMalformed, len(c.Value))
	}
	cum := binary.BigEndian.Uint32(c.Value)
	// Answered at once, even when old: the peer has not seen the SACK
	// that took it.
	if !a.sackOwed {
		a.sackOwed, a.owedAt = true, 0
	}
	a.sackNow = true
	if tsnLE(cum, a.recv.cum) {
		return nil
	}
	if cum-a.recv.cum > maxTSNWindow {
		return fmt.Errorf("%w: FORWARD-TSN %d too far past %d", ErrProtocol, cum, a.recv.cum)
	}
	a.recv.forward(cum)
	for p := c.Value[4:]; len(p) >= 4; p = p[4:] {
		s, ssn := binary.BigEndian.Uint16(p), binary.BigEndian.Uint16(p[2:])
		if s < maxStreams && !ssnLess(ssn, a.nextSSN[s]) {
			a.nextSSN[s] = ssn + 1
		}
	}
	a.forwardHeld()
	return nil
}

// begin and does not continue tsn.
func (a *Assoc) dropDeadBeside(tsn uint32) {
	self := a.held.get(tsn)
	if p := a.held.get(tsn - 1); p != nil && !p.ends() && (self == nil || !continues(p, self)) {
		a.dropRun(p.first, p.tsn)
	}
	if n := a.held.get(tsn + 1); n != nil && !n.begins() && (self == nil || !continues(self, n)) {
		a.dropRun(n.tsn, n.last)
	}
}

// whole takes the complete message held in first..last: delivered now,
// kept for its turn (ordered, a later SSN), or dropped (an SSN already
// delivered, or one already waiting).
func (a *Assoc) whole(first, last uint32) {
	c := a.held.get(first)
	if c.unordered() {
		a.deliverRun(first, last)
		return
	}
	stream, ssn := c.stream, c.ssn
	switch next := a.nextSSN[stream]; {
	case ssn == next:
		a.nextSSN[stream]++
		a.deliverRun(first, last)
		a.deliverReady(stream)
	case ssnLess(ssn, next):
		a.dropRun(first, last)
	default:
		key := uint32(stream)<<16 | uint32(ssn)
		if _, dup := a.held.ready[key]; dup {
			a.dropRun(first, last)
			return
		}
		if a.held.ready == nil {
			a.held.ready = make(map[uint32]uint32)
		}
		a.held.ready[key] = first
	}
}

// deliverReady delivers the whole ordered messages of stream that wait
// for no earlier one.
func (a *Assoc) deliverReady(stream uint16) {
	for len(a.held.ready) > 0 {
		key := uint32(stream)<<16 | uint32(a.nextSSN[stream])
		first, ok := a.held.ready[key]
		if !ok {
			return
		}
		delete(a.held.ready, key)
		a.nextSSN[stream]++
		a.deliverRun(first, a.held.get(first).last)
	}
}

// deliver hands a complete message to Messages.
func (a *Assoc) deliver(stream uint16, ppid uint32, data []byte) {
	a.done = append(a.done, Message{Stream: stream, PPID: ppid, Data: data})
}

// deliverRun delivers the message held in first..last and lets it go.
func (a *Assoc) deliverRun(first, last uint32) {
	c := a.held.get(first)
	stream, ppid := c.stream, c.ppid
	data := c.data
	if first != last {
		// Appended to what Messages has not taken yet: their Data stays
		// as it was (a buffer that grows leaves the old one to them).
		start := len(a.asm)
		for x := first; ; x++ {
			a.asm = append(a.asm, a.held.get(x).data...)
			if x == last {
				break
			}
		}
		data = a.asm[start:len(a.asm):len(a.asm)]
	} else {
		// The held chunk's buffer goes back to the slab for reuse: the
		// message keeps a copy.
		start := len(a.asm)
		a.asm = append(a.asm, data...)
		data = a.asm[start:len(a.asm):len(a.asm)]
	}
	a.deliver(stream, ppid, data)
	a.dropRun(first, last)
}

// dropRun lets go of the chunks first..last.
func (a *Assoc) dropRun(first, last uint32) {
	for x := first; ; x++ {
		a.held.remove(x)
		if x == last {
			return
		}
	}
}

// forwardHeld drops, after a FORWARD-TSN moved the cumulative TSN and the
// streams' next SSNs, what can never be delivered now: the ordered
// messages of SSNs passed, and every partial message that misses a TSN at
// or below the cumulative one (RFC 3758 §3.6). Then the streams deliver
// what waited for the SSNs passed.
//
// Letting go of the last chunk held may let the slab go (holding.reset):
// the passes read its length anew at every step.
func (a *Assoc) forwardHeld() {
	for i := 0; i < len(a.held.slab); i++ {
		a.work++
		if c := &a.held.slab[i]; c.used && !c.unordered() && ssnLess(c.ssn, a.nextSSN[c.stream]) {
			a.held.remove(c.tsn) // the whole message goes: its fragments share the SSN
		}
	}
	for key, first := range a.held.ready {
		if a.held.get(first) == nil {
			delete(a.held.ready, key)
		}
	}
	for i := 0; i < len(a.held.slab); i++ {
		a.work++
		c := &a.held.slab[i]
		if !c.used {
			continue
		}
		tsn := c.tsn
		if p := a.held.get(tsn - 1); p != nil && continues(p, c) {
			continue // not the first of its run
		}
		last := c.last
		if !c.begins() && a.recv.has(tsn-1) || !a.held.get(last).ends() && a.recv.has(last+1) {
			a.dropRun(tsn, last)
		}
	}
	for s := range uint16(maxStreams) {
		a.deliverReady(s)
	}
}

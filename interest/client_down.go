package interest

// The client's downlink: world packets and display messages, decoded
// whole and then applied, and what the client acknowledges.

import (
	"fmt"
	"slices"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Deliver applies a packet from the world: an unreliable world packet or
// a reliable display reply. A packet that does not decode is dropped
// whole, counted, and the error says why; what it carried before the bad
// field is not applied.
func (c *Client) Deliver(now time.Time, msg []byte) error {
	c.stats.PacketsIn++
	c.stats.BytesIn += int64(len(msg))
	r := codec.NewReader(msg)
	var err error
	switch k := r.ReadBits(kindBits); k {
	case kindDown:
		err = c.down(now, r, msg)
	case kindDisplay:
		err = c.display(r)
	default:
		err = fmt.Errorf("%w: packet kind %d", ErrMalformed, k)
	}
	if err != nil {
		c.stats.Malformed++
	}
	return err
}

// downMsg is one decoded downlink message.
type downMsg struct {
	tag   int
	id    ID
	frame int
	kind  Kind
	lg    Logic
	dver  uint8
	hf    int   // the packet's frame
	void  uint8 // a correction's first voided command, low bits
	ev    Event
	// A move's number (a logic message's too), whether it goes on from
	// the previous path (its source and, for Speed 0, speed are that
	// path's: Client.resolve), and its destination's offset.
	ep   uint8
	cont bool
	off  Vec
}

// decodeDown validates a whole downlink packet, calling f for each message
// only once all of it has decoded: a bad packet changes nothing. m is the
// storage each message is decoded into in turn (f must not keep it), so
// that a packet costs no allocation.
func decodeDown(l *layout, msg []byte, ref int, hdr *downHeader, m *downMsg, f func(m *downMsg)) error {
	for pass := 0; pass < 2; pass++ {
		r := codec.NewReader(msg)
		hdr.decode(r, ref)
		*m = downMsg{}
		for r.Err() == nil && r.Remaining() > 0 {
			m.tag = readTag(r)
			if m.tag == tagEnd {
				break
			}
			if !readDown(l, r, hdr.frame, m, pass == 1, f) {
				break
			}
		}
		if err := r.Done(); err != nil {
			return fmt.Errorf("%w: %w", ErrMalformed, err)
		}
	}
	return nil
}

func readDown(l *layout, r *codec.Reader, hf int, m *downMsg, apply bool, f func(m *downMsg)) bool {
	m.hf = hf
	switch m.tag {
	case tagMove, tagJump, tagSkill, tagCustom:
		m.id = l.readID(r)
		m.frame = l.readStamp(r, hf)
		m.ev = Event{ID: m.id, Frame: m.frame}
		switch m.tag {
		case tagMove:
			l.readMove(r, m)
		case tagJump:
			m.ev.Tag = EventJump
		case tagSkill:
			m.ev.Tag = EventSkill
			m.ev.Skill = uint16(r.ReadBits(16))
			if r.ReadBool() {
				m.ev.Target = l.readID(r)
			}
		case tagCustom:
			m.ev.Tag = EventCustom
			m.ev.Custom = uint8(r.ReadBits(8))
			m.ev.Data = r.ReadBytes(nil, l.cfg.MaxCustom)
		}
	case tagLogic:
		m.id = l.readID(r)
		m.frame = hf
		m.kind, m.dver = l.readLogic(r, &m.lg, nil)
		m.ep = uint8(r.ReadBits(epochBits))
	case tagVitals:
		m.id = l.readID(r)
		m.frame = hf
		m.dver = l.readVitals(r, &m.lg)
	case tagRegion:
		rg := Region{int(r.ReadUint(l.rxMax)), int(r.ReadUint(l.ryMax))}
		n := int(r.ReadBits(8))
		m.tag, m.frame = tagLogic, hf
		for i := 0; i < n && r.Err() == nil; i++ {
			m.id = l.readID(r)
			m.kind, m.dver = l.readLogic(r, &m.lg, &rg)
			m.ep = uint8(r.ReadBits(epochBits))
			if r.Err() == nil && apply {
				f(m)
			}
		}
		return r.Err() == nil
	case tagRemove:
		m.id = l.readID(r)
	case tagCorrection:
		m.frame = hf
		m.lg.Pos = l.readPos(r)
		m.lg.Dest, m.lg.Speed = l.readPath(r, m.lg.Pos)
		m.void = uint8(r.ReadBits(8))
	default:
		r.Fail(fmt.Errorf("%w: message tag %d", ErrMalformed, m.tag))
		return false
	}
	if r.Err() != nil {
		return false
	}
	if apply {
		f(m)
	}
	return true
}

func (c *Client) down(now time.Time, r *codec.Reader, msg []byte) error {
	if r.Skip(seqBits); !c.synced && !r.ReadBool() && r.Err() == nil {
		// The world sends the frame in full until the client acknowledges
		// a packet: a short one before any is not from it.
		return fmt.Errorf("%w: a short frame before the first full one", ErrMalformed)
	}
	var h downHeader
	c.rdHeard = false
	// The client's clock goes to the packet's frame before its messages
	// apply (once the whole packet has decoded): what they say is as of
	// that frame or before it, and is stepped to the client's frame, never
	// past it.
	clock := func() {
		if !c.synced || h.frame > c.frame {
			if !c.synced {
				c.frame = h.frame
			}
			c.synced = true
			c.base, c.baseAt = h.frame, now
			c.stepTo(h.frame)
		}
	}
	err := decodeDown(&c.lay, msg, c.frame, &h, &c.msg, func(m *downMsg) {
		if !c.rdHeard {
			c.rdHeard = true
			c.rd.heard(now, h.frame)
			clock()
		}
		c.apply(now, m)
	})
	if err != nil {
		return err
	}
	if !c.rdHeard {
		c.rd.heard(now, h.frame)
		clock()
	}
	c.rd.commit()
	c.received(h.seq)
	if c.corr.have {
		c.correct() // before the acknowledgement: it reads the moves it voids
	}
	if h.hasAck {
		c.acked(h.cmdAck)
	}
	return nil
}

// toNow steps a position given at frame f to the client's frame.
func (c *Client) toNow(lg *Logic, f int) {
	if f < c.frame {
		lg.Pos = StepN(lg.Pos, lg.Dest, lg.Speed, c.frame-f)
	}
}

func (c *Client) apply(now time.Time, m *downMsg) {
	switch m.tag {
	case tagCorrection:
		// Adopted once the client's frame has reached the packet's
		// (Client.correct).
		c.corr = correction{have: true, seg: pathSeg{m.frame, m.lg.Pos, m.lg.Dest, m.lg.Speed, 0}, void: m.void}
		return
	case tagRemove:
		if _, ok := c.ents[m.id]; ok {
			c.forget(m.id)
		}
		delete(c.discover, m.id)
		return
	case tagVitals:
		lg := &c.me
		if m.id != c.self {
			k := c.ents[m.id]
			if k == nil {
				request(c.discover, m.id) // in range but unknown: ask for the whole logic
				return
			}
			lg, k.dver = &k.lg, m.dver
		} else if !c.haveMe {
			return
		}
		lg.State, lg.Combat, lg.Life, lg.Mana, lg.Rage, lg.Magic = m.lg.State, m.lg.Combat, m.lg.Life, m.lg.Mana, m.lg.Rage, m.lg.Magic
		c.wantDisplay(now, m.id, m.dver)
		return
	case tagLogic:
		seg := pathSeg{m.frame, m.lg.Pos, m.lg.Dest, m.lg.Speed, int32(m.hf)}
		c.toNow(&m.lg, m.frame)
		if m.id == c.self {
			c.meKind = m.kind
			if !c.haveMe {
				c.me = m.lg
				c.haveMe = true
				c.rd.selfT.reset(seg)
			} else { // keep the predicted movement, take the rest
				pos, dest, speed := c.me.Pos, c.me.Dest, c.me.Speed
				c.me = m.lg
				c.me.Pos, c.me.Dest, c.me.Speed = pos, dest, speed
			}
			c.wantDisplay(now, m.id, m.dver)
			return
		}
		if _, ok := c.discover[m.id]; ok {
			delete(c.discover, m.id)
			c.stats.Discovered++
		}
		k := c.ents[m.id]
		if k == nil {
			k = &known{}
			c.ents[m.id] = k
			if c.rd.on {
				k.tr = c.rd.track(seg)
			}
			c.rd.heardLogic(now, m.id, seg.frame)
		} else {
			c.heardPath(now, m.id, k, seg, false)
		}
		k.kind, k.lg, k.dver, k.doom = m.kind, m.lg, m.dver, 0
		k.last, k.ep, k.lastOK = seg, m.ep, true
		c.activate(m.id, k)
		c.wantDisplay(now, m.id, m.dver)
		return
	}
	// A command.
	if m.id == c.self {
		return // the client moved itself first; the world corrects if it disagrees
	}
	k := c.ents[m.id]
	if m.tag == tagMove && m.cont && !c.resolve(k, m) {
		return
	}
	if k == nil {
		if m.tag == tagMove {
			c.toNow(&m.lg, m.frame)
			if !c.inRange(m.lg.Pos) {
				return // leaving: nothing to ask for
			}
		}
		request(c.discover, m.id)
		if m.tag == tagMove {
			return
		}
	}
	if m.tag == tagMove {
		k.last, k.ep, k.lastOK = pathSeg{m.frame, m.lg.Pos, m.lg.Dest, m.lg.Speed, 0}, m.ep, true
		c.heardPath(now, m.id, k, pathSeg{m.frame, m.lg.Pos, m.lg.Dest, m.lg.Speed, int32(m.hf)}, true)
		k.lg.Pos, k.lg.Dest, k.lg.Speed = m.lg.Pos, m.lg.Dest, m.lg.Speed
		k.doom = 0
		c.toNow(&k.lg, m.frame)
		c.activate(m.id, k)
		return
	}
	if len(c.events) >= maxEvents {
		c.events = c.events[1:]
		c.stats.EventsMissed++
	}
	c.events = append(c.events, m.ev)
}

// resolve finds the source of a move that goes on from the entity's
// previous path (m.cont) on that path, and its speed when the move keeps
// it: the client must hold the path of the move numbered just before
// (SPEC.md §8, moves). It reports false, asking for the entity's logic,
// when the client does not: it missed that move (a lost packet the world
// repairs meanwhile, or a path it never heard), or the move is older
// than what it holds.
func (c *Client) resolve(k *known, m *downMsg) bool {
	if k == nil || !k.lastOK || k.ep != (m.ep-1)&epochMask || m.frame < k.last.frame {
		if k == nil || !k.lastOK || m.ep != k.ep {
			// Not the move it holds: a newer one after a move it missed,
			// or one stamped before the logic it holds but news to it.
			request(c.discover, m.id)
		}
		c.stats.MovesUnresolved++
		return false
	}
	src := StepN(k.last.pos, k.last.dest, k.last.speed, m.frame-k.last.frame)
	speed := m.lg.Speed
	if speed == 0 && m.off != (Vec{}) {
		speed = k.last.speed
		if speed <= 0 { // it stands, as far as it knows: ask
			request(c.discover, m.id)
			c.stats.MovesUnresolved++
			return false
		}
	}
	m.lg.Pos, m.lg.Dest, m.lg.Speed = src, src.Add(m.off), speed
	if m.off == (Vec{}) {
		m.lg.Speed = 0
	}
	if !c.lay.onMap(m.lg.Dest) {
		c.stats.MovesUnresolved++
		return false
	}
	return true
}

func (c *Client) wantDisplay(now time.Time, id ID, ver uint8) {
	if d, ok := c.displays[id]; ok && d.ver == ver && (len(c.lay.cfg.Groups) == 0 || c.groups[id] != nil) {
		d.used = c.frame
		c.displays[id] = d
		return
	}
	request(c.wantDisp, id)
}

// request adds a request for id to asks (discovery or display data),
// keeping the retry state of one already there.
func request(asks map[ID]ask, id ID) {
	if _, ok := asks[id]; !ok {
		asks[id] = ask{}
	}
}

func (c *Client) display(r *codec.Reader) error {
	n := int(r.ReadUint(maxDisplayBatch))
	var list [maxDisplayBatch]displayEntry
	hadNames, hadLooks := len(c.names.list), len(c.looks)
	for i := 0; i < n && r.Err() == nil; i++ {
		c.lay.readDisplay(r, &list[i], &c.names, &c.looks)
	}
	c.grecs = c.grecs[:0]
	if len(c.lay.cfg.Groups) > 0 {
		c.grecs = c.readGroupRecords(r, c.grecs)
	}
	if err := r.Done(); err != nil {
		// What a message dropped would have added is not kept.
		c.names.list, c.looks = c.names.list[:hadNames], c.looks[:hadLooks]
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	for _, e := range list[:n] {
		c.displays[e.id] = cachedDisplay{displayEntry: e, used: c.frame}
		delete(c.wantDisp, e.id)
	}
	if len(c.lay.cfg.Groups) > 0 {
		c.applyGroups(list[:n], c.grecs)
	}
	if limit := max(maxDisplays, 4*len(c.ents)); len(c.displays) > limit {
		c.evictDisplays(limit * 3 / 4)
	}
	return nil
}

// evictDisplays forgets the display data of the entities out of range that
// were heard of longest ago, down to n entries: a player who comes back to
// a place does not fetch its people's names again.
func (c *Client) evictDisplays(n int) {
	type aged struct {
		id   ID
		used int
	}
	var old []aged
	for id, d := range c.displays {
		if _, ok := c.ents[id]; !ok && id != c.self {
			old = append(old, aged{id, d.used})
		}
	}
	slices.SortFunc(old, func(a, b aged) int { return a.used - b.used })
	for _, a := range old[:max(0, min(len(old), len(c.displays)-n))] {
		delete(c.displays, a.id)
	}
}

// Display returns an entity's cached display data, whatever its version.
func (c *Client) Display(id ID) (Display, bool) {
	d, ok := c.displays[id]
	return d.d, ok
}

func (c *Client) received(seq int) {
	if !c.haveRecv {
		c.recvSeq, c.haveRecv, c.ackDue = seq, true, true
		return
	}
	s := unwrapSeq(uint64(seq), c.recvSeq)
	switch d := s - c.recvSeq; {
	case d > 0:
		if d > 1 {
			c.stats.LostPackets += int64(d - 1)
			// A gap: acknowledge the next few packets at once, so the
			// world sees the missing one behind three newer ones and
			// repairs it in a round trip rather than an ack period.
			c.fastAcks = fastAckPackets
			c.lossy = c.frame + lossMemory*c.lay.cfg.Hz
		}
		if d > ackMaskBits {
			c.recvMask = 0
		} else {
			c.recvMask = c.recvMask<<d | 1<<(d-1)
		}
		c.recvSeq = s
	case d < 0 && -d <= ackMaskBits:
		c.recvMask |= 1 << (-d - 1)
	}
	c.ackDue = true
}

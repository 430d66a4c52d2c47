package interest

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// harness runs a world and its clients over the in-memory network inside a
// synctest bubble, checks every packet the world sends for information
// about entities outside the receiver's range, and measures how long each
// client's known set differs from the world's 3x3 truth.
type harness struct {
	t       testing.TB
	w       *World
	cfg     Config
	net     *memnet.Network
	srv     map[ID]*memnet.Conn
	players []*tplayer
	npcs    []ID
	rng     *rand.Rand

	packets    int
	leaks      int
	maxDiff    time.Duration
	maxDiffWho string
	maxDiffKey [2]ID // client and entity of maxDiffWho: ties go to the lowest, so a seed names the same one every run
	upErrs     map[string]int
	trace      func(to ID, m *downMsg)
	episodes   []time.Duration
	npcsStill  bool
}

type behaviour int

const (
	idle behaviour = iota
	walker
	runner
)

type tplayer struct {
	id   ID
	c    *Client
	conn *memnet.Conn
	b    behaviour
	next time.Time
	diff map[ID]difference
}

// difference is a client's open disagreement with the truth about one
// entity: since when, and whether the entity is missing (in range, not
// known) or stale (known, out of range).
type difference struct {
	since time.Time
	what  string
}

type harnessOptions struct {
	cfg     Config
	players int
	npcs    int
	link    memnet.LinkConfig
	seed    uint64
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	h := &harness{t: t, cfg: o.cfg.WithDefaults(), net: memnet.New(o.seed),
		srv: map[ID]*memnet.Conn{}, rng: rand.New(rand.NewPCG(o.seed, 7)), upErrs: map[string]int{}}
	w, err := NewWorld(o.cfg, time.Now(), h)
	if err != nil {
		t.Fatal(err)
	}
	h.w = w
	for range o.npcs {
		id, err := w.Spawn(NPC, Logic{Pos: h.randPos(), Life: 100}, Display{Name: "npc", Appearance: 7})
		if err != nil {
			t.Fatal(err)
		}
		h.npcs = append(h.npcs, id)
	}
	for i := range o.players {
		p := h.randPos()
		id, err := w.Spawn(Player, Logic{Pos: p, Dest: p, Life: 100, Mana: 50}, Display{Name: fmt.Sprint("p", i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Join(id); err != nil {
			t.Fatal(err)
		}
		c, err := NewClient(o.cfg, id)
		if err != nil {
			t.Fatal(err)
		}
		cc, sc := h.net.Pipe(o.link, o.link)
		h.srv[id] = sc
		h.players = append(h.players, &tplayer{id: id, c: c, conn: cc, b: behaviour(i % 3), diff: map[ID]difference{}})
	}
	return h
}

func (h *harness) randPos() Vec {
	return Vec{int32(h.rng.IntN(h.cfg.Width * h.cfg.RegionSize)), int32(h.rng.IntN(h.cfg.Height * h.cfg.RegionSize))}
}

// near returns a random position within d units of p, on the map.
func (h *harness) nearPos(p Vec, d int) Vec {
	q := Vec{p.X + int32(h.rng.IntN(2*d+1)-d), p.Y + int32(h.rng.IntN(2*d+1)-d)}
	q.X = min(max(q.X, 0), h.w.lay.maxX)
	q.Y = min(max(q.Y, 0), h.w.lay.maxY)
	return q
}

func (h *harness) SendUnreliable(id ID, msg []byte) error {
	h.inspect(id, msg)
	return h.srv[id].SendUnreliable(msg)
}

func (h *harness) SendReliable(id ID, msg []byte) error {
	return h.srv[id].SendReliable(msg)
}

// inspect decodes a packet as a client would and counts every message
// about an entity outside the receiver's 3x3 range at the moment of
// sending. Removals carry no information about the entity.
func (h *harness) inspect(to ID, msg []byte) {
	h.packets++
	if len(msg) > MaxPacket {
		h.t.Errorf("packet of %d bytes over %d", len(msg), MaxPacket)
	}
	var hdr downHeader
	err := decodeDown(&h.w.lay, msg, h.w.Frame(), &hdr, new(downMsg), func(m *downMsg) {
		if h.trace != nil {
			h.trace(to, m)
		}
		if m.tag == tagRemove || m.tag == tagCorrection || m.id == to {
			return
		}
		if !h.w.InRange(to, m.id) {
			h.leaks++
			if h.leaks < 5 {
				h.t.Errorf("frame %d: message %d about entity %d sent to %d, outside its range", h.w.Frame(), m.tag, m.id, to)
			}
		}
	})
	if err != nil {
		h.t.Errorf("world sent a packet that does not decode: %v", err)
	}
}

// run plays the world for d, frame by frame.
// receive hands the player's client every packet that has reached it, and
// advances it to now.
func (p *tplayer) receive(t testing.TB, now time.Time) {
	for {
		m, ok := p.conn.TryReceive()
		if !ok {
			break
		}
		if err := p.c.Deliver(now, m.Data); err != nil {
			t.Errorf("client %d: %v", p.id, err)
		}
	}
	p.c.Advance(now)
}

func (h *harness) run(d time.Duration, check bool) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		time.Sleep(time.Until(h.w.NextFrame()))
		now := time.Now()
		for _, p := range h.players {
			id, sc := p.id, h.srv[p.id]
			for {
				m, ok := sc.TryReceive()
				if !ok {
					break
				}
				if err := h.w.Deliver(id, m.Data); err != nil {
					h.upErrs[err.Error()]++
				}
			}
		}
		h.npcAI()
		h.w.Tick(now)
		for _, p := range h.players {
			p.receive(h.t, now)
			h.drive(p, now)
			if pkt := p.c.Packet(now); pkt != nil {
				_ = p.conn.SendUnreliable(pkt)
			}
		}
		if check {
			h.compare(now)
			h.checkWaiting()
		}
	}
}

// checkWaiting checks each region's count of observers waiting for a
// forced sync, which crossings reads instead of every observer's flag.
func (h *harness) checkWaiting() {
	h.t.Helper()
	for ri := range h.w.regions {
		reg := &h.w.regions[ri]
		n := int32(0)
		for _, o := range reg.obs {
			if h.w.waiting[o.id] {
				n++
			}
			if o.listed != int32(ri) {
				h.t.Fatalf("observer %d listed in region %d says %d", o.id, ri, o.listed)
			}
		}
		if n != reg.waiting {
			h.t.Fatalf("frame %d: region %d counts %d observers waiting, %d are", h.w.frame, ri, reg.waiting, n)
		}
	}
}

func (h *harness) npcAI() {
	if h.npcsStill {
		return
	}
	for range len(h.npcs) / 40 {
		id := h.npcs[h.rng.IntN(len(h.npcs))]
		lg, _ := h.w.Logic(id)
		if lg.Moving() {
			continue
		}
		if err := h.w.Move(id, h.nearPos(lg.Pos, h.cfg.RegionSize), int32(4+h.rng.IntN(12))); err != nil {
			h.t.Fatal(err)
		}
	}
}

// drive plays a player: idle ones stand, walkers stroll, runners cross the
// map at top speed.
func (h *harness) drive(p *tplayer, now time.Time) {
	me, ok := p.c.Self()
	if !ok || p.b == idle || now.Before(p.next) {
		return
	}
	var dest Vec
	var speed int32
	switch p.b {
	case walker:
		dest, speed = h.nearPos(me.Pos, h.cfg.RegionSize), int32(8+h.rng.IntN(16))
		p.next = now.Add(time.Duration(500+h.rng.IntN(3000)) * time.Millisecond)
	case runner:
		dest, speed = h.nearPos(me.Pos, 3*h.cfg.RegionSize), int32(h.cfg.MaxSpeed)
		p.next = now.Add(time.Duration(1000+h.rng.IntN(3000)) * time.Millisecond)
	}
	if err := p.c.Move(dest, speed); err != nil && err != ErrBacklog {
		h.t.Errorf("move: %v", err)
	}
}

// compare measures, for every client and entity, how long the client's
// known set has differed from the world's 3x3 set.
func (h *harness) compare(now time.Time) {
	for _, p := range h.players {
		lg, _ := h.w.Logic(p.id)
		truth := map[ID]bool{}
		h.w.Each(h.w.RegionOf(lg.Pos), func(id ID, _ Kind, _ *Logic) {
			if id != p.id {
				truth[id] = true
			}
		})
		seen := map[ID]bool{}
		for id := range truth {
			seen[id] = true
			if _, ok := p.c.Entity(id); ok {
				h.resolve(p, id, now)
			} else {
				h.mark(p, id, now, "missing")
			}
		}
		p.c.Each(func(id ID, _ View) {
			if seen[id] {
				return
			}
			seen[id] = true
			h.mark(p, id, now, "stale")
		})
		for id := range p.diff {
			if !seen[id] {
				h.resolve(p, id, now)
			}
		}
	}
}

// resolve ends a difference between a client and the truth, recording how
// long it lasted.
func (h *harness) resolve(p *tplayer, id ID, now time.Time) {
	if d, ok := p.diff[id]; ok {
		h.episodes = append(h.episodes, now.Sub(d.since))
		delete(p.diff, id)
	}
}

// episodeQuantile returns the q-quantile of the differences' durations,
// those still open counted up to now.
func (h *harness) episodeQuantile(q float64, now time.Time) time.Duration {
	all := slices.Clone(h.episodes)
	for _, p := range h.players {
		for _, d := range p.diff {
			all = append(all, now.Sub(d.since))
		}
	}
	if len(all) == 0 {
		return 0
	}
	slices.Sort(all)
	return all[min(len(all)-1, int(q*float64(len(all))))]
}

// mark records that a client differs from the truth about an entity. A
// difference that changes kind (a missing entity that the client learns
// just as its player's move takes the entity out of range, which makes it
// stale) is a new difference, caused by a new change of the truth: the old
// one is resolved.
func (h *harness) mark(p *tplayer, id ID, now time.Time, what string) {
	d, ok := p.diff[id]
	if ok && d.what != what {
		h.resolve(p, id, now)
		ok = false
	}
	if !ok {
		p.diff[id] = difference{since: now, what: what}
		return
	}
	dur, key := now.Sub(d.since), [2]ID{p.id, id}
	if dur > h.maxDiff || dur == h.maxDiff && slices.Compare(key[:], h.maxDiffKey[:]) < 0 {
		h.maxDiff, h.maxDiffKey = dur, key
		h.maxDiffWho = fmt.Sprintf("client %d (%v), entity %d %s since %v", p.id, p.b, id, what, d.since.Sub(h.w.start))
	}
}

package world

import (
	"encoding/binary"

	"github.com/tongbu/tongbu/interest"
)

// The JX1 baseline of the world scenario (seed 000, section 4): a small
// model of JX1's server, separate from package interest, fed the same
// entities and commands as the world. It moves entities by the same Step
// rule, broadcasts every command to the 3x3 regions around its actor, and
// learns clients about entities only by JX1's state sync: every 2 frames
// each region with a player in range picks its next entity, round-robin,
// and sends its NPC_NORMAL_SYNC to every player in the 9 regions around
// it. Nothing is announced on a region crossing and there is no discovery.
//
// Messages are byte-aligned little-endian structs as JX1 wrote them, each
// led by its 1-byte protocol type (tagProtocolHeader):
//
//	NPC_NORMAL_SYNC (17 bytes, the seed's): type, ID u32, MapX u32, Camp u8,
//	    State u8, MapY u32, LifePerCent u8 (low 8 bits of life in 2048ths),
//	    Doing u8 (life's high 3 bits, then the 5-bit state)
//	move  (26 bytes): type, ID u32, frame u32, source X, Y u32, destination X, Y u32, speed u8
//	jump  (9 bytes):  type, ID u32, frame u32
//	skill (15 bytes): type, ID u32, frame u32, skill u16, target ID u32
//	custom (11 + n):  type, ID u32, frame u32, tag u8, length u8, n bytes
//
// No packet or transport header is counted for the baseline.
const (
	jxSyncSize = 17
	jxLayouts  = "move 26 B, jump 9, skill 15, custom 11+n"
)

// Command tags of the baseline, which are also its protocol types.
const (
	cmdMove = iota + 1
	cmdJump
	cmdSkill
	cmdCustom
	cmdSync
)

// jxCmd is a command given to both servers.
type jxCmd struct {
	tag       int
	id        interest.ID
	frame     int
	src, dest interest.Vec
	speed     int32
	skill     uint16
	target    interest.ID
	ctag      uint8
	data      []byte
	due       int // the frame the server applies it
}

type jxEnt struct {
	player      bool
	pos, dest   interest.Vec
	speed       int32
	reg         int32
	slot, pslot int32
	mover       int32
	camp, state uint8
	life        uint8 // percent
}

type jxRegion struct {
	ents     []interest.ID
	players  []interest.ID
	cursor   int
	watchers int // players whose 3x3 range holds this region
	buf      []byte
	touched  bool
}

type jx1 struct {
	cfg     interest.Config
	frame   int
	ents    []jxEnt // by ID
	regions []jxRegion
	movers  []interest.ID
	players []interest.ID
	pend    []jxCmd
	touched []int32
	out     []byte
	sent    []int // bytes sent to each player (in players order) in the last tick

	sampled []bool                       // by ID: players whose knowledge is followed
	heard   func(player, id interest.ID) // a sampled player was sent id's sync
}

func newJX1(cfg interest.Config) *jx1 {
	return &jx1{cfg: cfg, ents: make([]jxEnt, 1, 1<<16), regions: make([]jxRegion, cfg.Width*cfg.Height)}
}

func (b *jx1) index(r interest.Region) int32 { return int32(r.Y*b.cfg.Width + r.X) }

func (b *jx1) regionOf(p interest.Vec) int32 {
	rs := int32(b.cfg.RegionSize)
	return (p.Y/rs)*int32(b.cfg.Width) + p.X/rs
}

func (b *jx1) regionAt(i int32) interest.Region {
	return interest.Region{X: int(i) % b.cfg.Width, Y: int(i) / b.cfg.Width}
}

// region returns the region entity id is in.
func (b *jx1) region(id interest.ID) interest.Region { return b.regionAt(b.ents[id].reg) }

// around calls f for each region of the 3x3 range centred on r.
func (b *jx1) around(r int32, f func(int32)) {
	c := b.regionAt(r)
	for y := max(c.Y-1, 0); y <= min(c.Y+1, b.cfg.Height-1); y++ {
		for x := max(c.X-1, 0); x <= min(c.X+1, b.cfg.Width-1); x++ {
			f(int32(y*b.cfg.Width + x))
		}
	}
}

// spawn adds an entity under the world's ID for it.
func (b *jx1) spawn(id interest.ID, player bool, lg interest.Logic, camp uint8) {
	for len(b.ents) <= int(id) {
		b.ents = append(b.ents, jxEnt{})
	}
	e := &b.ents[id]
	*e = jxEnt{player: player, pos: lg.Pos, dest: lg.Pos, mover: -1, camp: camp, life: lg.Life, state: lg.State}
	e.reg = -1
	b.enter(id, b.regionOf(lg.Pos))
	if player {
		b.players = append(b.players, id)
		b.sent = append(b.sent, 0)
	}
}

// enter moves entity id into region r, keeping the player lists and the
// regions' watcher counts.
func (b *jx1) enter(id interest.ID, r int32) {
	e := &b.ents[id]
	if e.reg == r {
		return
	}
	if e.reg >= 0 {
		old := &b.regions[e.reg]
		last := old.ents[len(old.ents)-1]
		old.ents[e.slot] = last
		b.ents[last].slot = e.slot
		old.ents = old.ents[:len(old.ents)-1]
		if e.player {
			last := old.players[len(old.players)-1]
			old.players[e.pslot] = last
			b.ents[last].pslot = e.pslot
			old.players = old.players[:len(old.players)-1]
			b.around(e.reg, func(ri int32) { b.regions[ri].watchers-- })
		}
	}
	reg := &b.regions[r]
	e.reg, e.slot = r, int32(len(reg.ents))
	reg.ents = append(reg.ents, id)
	if e.player {
		e.pslot = int32(len(reg.players))
		reg.players = append(reg.players, id)
		b.around(r, func(ri int32) { b.regions[ri].watchers++ })
	}
}

// command applies a command now, as the world does, and queues its
// broadcast for the next tick.
func (b *jx1) command(c jxCmd) {
	if c.tag == cmdMove {
		e := &b.ents[c.id]
		e.dest, e.speed = c.dest, c.speed
		e.pos = interest.StepN(c.src, c.dest, c.speed, b.frame-c.frame)
		moving := e.pos != e.dest && e.speed > 0
		if moving && e.mover < 0 {
			e.mover = int32(len(b.movers))
			b.movers = append(b.movers, c.id)
		} else if !moving {
			b.stop(c.id)
		}
		b.enter(c.id, b.regionOf(e.pos))
	}
	b.pend = append(b.pend, c)
}

// commandsDue applies the commands of pending due by frame f and returns
// the others, in pending's storage.
func (b *jx1) commandsDue(pending []jxCmd, f int) []jxCmd {
	keep := pending[:0]
	for _, c := range pending {
		if c.due <= f {
			b.command(c)
		} else {
			keep = append(keep, c)
		}
	}
	return keep
}

func (b *jx1) stop(id interest.ID) {
	e := &b.ents[id]
	if e.mover < 0 {
		return
	}
	last := b.movers[len(b.movers)-1]
	b.movers[e.mover] = last
	b.ents[last].mover = e.mover
	b.movers = b.movers[:len(b.movers)-1]
	e.mover = -1
}

func (b *jx1) touch(r int32) *jxRegion {
	reg := &b.regions[r]
	if !reg.touched {
		reg.touched = true
		b.touched = append(b.touched, r)
	}
	return reg
}

// tick runs frame f: movement, command broadcasts, state sync, and one
// packet per player gathered from the 9 regions around it.
func (b *jx1) tick(f int) {
	b.frame = f
	for i := 0; i < len(b.movers); {
		id := b.movers[i]
		e := &b.ents[id]
		e.pos = interest.Step(e.pos, e.dest, e.speed)
		b.enter(id, b.regionOf(e.pos))
		if e.pos == e.dest {
			e.speed = 0
			b.stop(id) // swaps the last mover into i
			continue
		}
		i++
	}
	le := binary.LittleEndian
	for _, c := range b.pend {
		r := b.ents[c.id].reg
		if b.regions[r].watchers == 0 {
			continue
		}
		reg := b.touch(r)
		m := append(reg.buf, byte(c.tag))
		m = le.AppendUint32(m, uint32(c.id))
		m = le.AppendUint32(m, uint32(c.frame))
		switch c.tag {
		case cmdMove:
			m = le.AppendUint32(m, uint32(c.src.X))
			m = le.AppendUint32(m, uint32(c.src.Y))
			m = le.AppendUint32(m, uint32(c.dest.X))
			m = le.AppendUint32(m, uint32(c.dest.Y))
			m = append(m, byte(c.speed))
		case cmdSkill:
			m = le.AppendUint16(m, c.skill)
			m = le.AppendUint32(m, uint32(c.target))
		case cmdCustom:
			m = append(m, c.ctag, byte(len(c.data)))
			m = append(m, c.data...)
		}
		reg.buf = m
	}
	b.pend = b.pend[:0]
	if f%2 == 0 {
		for ri := range b.regions {
			reg := &b.regions[ri]
			if len(reg.ents) == 0 || reg.watchers == 0 {
				continue
			}
			reg.cursor = (reg.cursor + 1) % len(reg.ents)
			id := reg.ents[reg.cursor]
			e := &b.ents[id]
			life := uint32(e.life) * 2048 / 100
			m := append(b.touch(int32(ri)).buf, cmdSync)
			m = le.AppendUint32(m, uint32(id))
			m = le.AppendUint32(m, uint32(e.pos.X))
			m = append(m, e.camp, e.state)
			m = le.AppendUint32(m, uint32(e.pos.Y))
			m = append(m, byte(life), byte(life>>8&7)<<5|e.state&31)
			reg.buf = m
			if b.heard != nil {
				b.around(int32(ri), func(r int32) {
					for _, p := range b.regions[r].players {
						if b.sampled[p] {
							b.heard(p, id)
						}
					}
				})
			}
		}
	}
	for i, p := range b.players {
		b.out = b.out[:0]
		b.around(b.ents[p].reg, func(r int32) { b.out = append(b.out, b.regions[r].buf...) })
		b.sent[i] = len(b.out)
	}
	for _, r := range b.touched {
		b.regions[r].buf = b.regions[r].buf[:0]
		b.regions[r].touched = false
	}
	b.touched = b.touched[:0]
}

// diverged counts the entities whose position differs from the world's:
// zero when both servers applied the same commands the same way.
func (b *jx1) diverged(w *interest.World) int {
	n := 0
	for id := 1; id < len(b.ents); id++ {
		if lg, ok := w.Logic(interest.ID(id)); ok && lg.Pos != b.ents[id].pos {
			n++
		}
	}
	return n
}

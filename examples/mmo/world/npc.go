package world

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// wheelSize is the timer wheel's span in frames (64 s at 16 Hz). A longer
// wait goes round the wheel more than once: each timer holds its due frame.
const (
	wheelSize = 1 << 10
	wheelMask = wheelSize - 1
)

// calm is how long after its last hit an NPC leaves combat and heals.
const calm = 5 * time.Second

// npc is the demo's state for one NPC: where it lives and what it does.
type npc struct {
	id      interest.ID
	kind    uint8
	walking bool
	hitAt   int // frame of its last hit by a bot; 0: never
	home    interest.Vec
	lo, hi  interest.Vec // where it may wander
}

// timer wakes an NPC at a frame.
type timer struct {
	npc int32
	due int32
}

// populate spawns n NPCs: a share in the cities, the rest spread over the
// field. Each starts standing and wakes within its first few seconds.
func (d *Demo) populate(n int) error {
	mlo, mhi := d.mapBounds()
	nCity := 0
	if len(d.cities) > 0 {
		nCity = int(float64(n) * cityShare)
	}
	rs := int32(d.wc.RegionSize)
	for i := range n {
		inCity := i < nCity
		k := pickKind(d.rng, inCity)
		kind := &npcKinds[k]
		var home, lo, hi interest.Vec
		if inCity {
			clo, chi := d.cities[d.rng.IntN(len(d.cities))].Bounds(d.wc.RegionSize)
			home = d.randIn(clo, chi)
			lo, hi = box(home, int32(kind.roam*float64(rs)), clo, chi)
		} else {
			home = d.randIn(mlo, mhi)
			for range 8 { // the field: try to avoid cities
				if !d.isCity(home) {
					break
				}
				home = d.randIn(mlo, mhi)
			}
			lo, hi = box(home, int32(kind.roam*float64(rs)), mlo, mhi)
		}
		id, err := d.w.Spawn(interest.NPC, interest.Logic{Pos: home, Life: 100},
			interest.Display{Appearance: kind.look, Name: npcName(d.rng, kind), Camp: kind.camp})
		if err != nil {
			return fmt.Errorf("mmo: spawn NPC %d: %w", i, err)
		}
		d.byID[id] = int32(len(d.npcs))
		d.npcs = append(d.npcs, npc{id: id, kind: uint8(k), home: home, lo: lo, hi: hi})
		d.schedule(int32(len(d.npcs)-1), d.done+1+d.rng.IntN(d.frames(3*time.Second)))
	}
	return nil
}

func (d *Demo) isCity(p interest.Vec) bool {
	_, ok := CityAt(d.cities, d.w.RegionOf(p))
	return ok
}

// schedule wakes NPC i at frame due.
func (d *Demo) schedule(i int32, due int) {
	slot := due & wheelMask
	d.wheel[slot] = append(d.wheel[slot], timer{npc: i, due: int32(due)})
}

// fire wakes the NPCs due at frame g; the world is at frame f >= g.
func (d *Demo) fire(g, f int) {
	slot := g & wheelMask
	list := d.wheel[slot]
	if len(list) == 0 {
		return
	}
	d.wheel[slot] = d.spare[:0]
	for _, t := range list {
		if int(t.due) > g { // a later turn of the wheel
			d.wheel[slot] = append(d.wheel[slot], t)
			continue
		}
		d.wake(t.npc, f)
	}
	d.spare = list[:0]
}

// wake ends an NPC's walk (it pauses) or its pause (it walks again).
func (d *Demo) wake(i int32, f int) {
	n := &d.npcs[i]
	lg, ok := d.w.Logic(n.id)
	if !ok {
		return
	}
	kind := &npcKinds[n.kind]
	if lg.Moving() { // not there yet: look again shortly
		d.schedule(i, f+d.frames(time.Second/2))
		return
	}
	if n.walking || lg.Combat {
		n.walking = false
		if lg.Combat && f-n.hitAt >= d.frames(calm) {
			_ = d.w.Update(n.id, func(lg *interest.Logic) { lg.Combat, lg.Life = false, 100 })
		}
		d.schedule(i, f+d.frames(d.randDur(kind.pause)))
		return
	}
	dest := limit(lg.Pos, d.randIn(n.lo, n.hi), d.wc.MaxMove)
	speed := d.speed(kind.speed[0] + d.rng.Float64()*(kind.speed[1]-kind.speed[0]))
	if err := d.w.Move(n.id, dest, speed); err != nil {
		d.schedule(i, f+d.frames(d.randDur(kind.pause)))
		return
	}
	n.walking = true
	d.stats.Walks++
	d.schedule(i, f+walkFrames(lg.Pos, dest, speed))
}

// SkillStrike is the demo's one skill: a player strikes an NPC in its
// range (the mmo view's F key, the bots' attacks).
const SkillStrike = 1

// onAction resolves the players' strikes the world accepts: a strike at
// an NPC takes 10 to 29 life from it, and puts both in combat. Other
// actions are the world's to broadcast and nothing more.
func (d *Demo) onAction(a interest.Action) {
	if a.Kind != interest.ActionSkill || a.Skill != SkillStrike || a.Target == 0 {
		return
	}
	if _, npc := d.byID[a.Target]; !npc {
		return
	}
	d.stats.Strikes++
	if d.humans[a.Player] {
		d.stats.HumanStrikes++
	}
	if d.hit(a.Target, 10+d.rng.IntN(20), d.w.Frame()) {
		if b := d.botIDs[a.Player]; b != nil {
			b.hits = botHits // killed: the bot's fight is over
		}
	}
	_ = d.w.Update(a.Player, func(lg *interest.Logic) { lg.Combat, lg.Rage = true, min(lg.Rage+10, 100) })
}

// hit resolves a strike on an NPC: it loses life and is in combat; at no
// life it dies and respawns at home, standing, and hit reports it.
func (d *Demo) hit(target interest.ID, damage int, f int) (dead bool) {
	i, ok := d.byID[target]
	if !ok {
		return false
	}
	n := &d.npcs[i]
	n.hitAt = f
	_ = d.w.Update(target, func(lg *interest.Logic) {
		lg.Combat = true
		if int(lg.Life) <= damage {
			lg.Life, dead = 0, true
			return
		}
		lg.Life -= uint8(damage)
	})
	if dead {
		d.stats.Kills++
		_ = d.w.Place(target, n.home)
		_ = d.w.Update(target, func(lg *interest.Logic) { lg.Life, lg.Combat = 100, false })
		n.walking = false
	}
	return dead
}

package world

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/interest"
)

// Bot behaviour.
const (
	botRoam   = 3                // regions from home a bot wanders
	botReach  = 3.0              // metres: how close a bot strikes from
	botSight  = 1.5              // regions: how far a bot looks for prey
	botHits   = 6                // strikes before a bot gives up on a target
	botFight  = 0.35             // chance a rested bot picks a fight
	botJump   = 0.05             // chance a bot jumps when it decides
	botGiveUp = 15 * time.Second // chase time before a bot gives up
)

// bot is a player played by the demo through its own interest.Client.
type bot struct {
	id     interest.ID
	c      *interest.Client
	lo, hi interest.Vec // where it wanders
	next   int          // frame of its next decision
	target interest.ID
	hits   int
	chase  int // frame the chase began
	fought int // frame of its last strike
}

// spawnBot spawns bot i near a city (its home), joins it and makes its
// client.
func (d *Demo) spawnBot(i int) error {
	lo, hi := d.spawnArea()
	home := d.randIn(lo, hi)
	mlo, mhi := d.mapBounds()
	camp := CampHaoqi + uint8(i%2)
	id, err := d.w.Spawn(interest.Player, interest.Logic{Pos: home, Dest: home, Life: 100, Mana: 100},
		interest.Display{Appearance: LookBot, Name: fmt.Sprintf("bot %s%s", surnames[d.rng.IntN(len(surnames))], given[d.rng.IntN(len(given))]), Camp: camp})
	if err != nil {
		return fmt.Errorf("mmo: spawn bot %d: %w", i, err)
	}
	if err := d.w.Join(id); err != nil {
		return fmt.Errorf("mmo: join bot %d: %w", i, err)
	}
	c, err := interest.NewClient(d.wc, id)
	if err != nil {
		return fmt.Errorf("mmo: bot %d client: %w", i, err)
	}
	b := &bot{id: id, c: c, next: d.done + 1 + d.rng.IntN(d.frames(2*time.Second))}
	b.lo, b.hi = box(home, botRoam*int32(d.wc.RegionSize), mlo, mhi)
	d.bots = append(d.bots, b)
	d.botIDs[id] = b
	return nil
}

// drive plays one bot for this tick: its client catches up with what the
// world sent, the bot decides when it is time, and its uplink goes to the
// world.
//
// The bot decides before its client advances to now: its commands are
// stamped with the world's current frame f, the frame its client last
// heard, never the frame World.Tick is about to run (the world puts a
// move stamped ahead of it one step too far along its path; see the
// README).
func (d *Demo) drive(b *bot, now time.Time, f int) {
	b.c.Events() // the bot does not react to what it hears; drop it
	if f >= b.next {
		d.decide(b, f)
	}
	b.c.Advance(now)
	if pkt := b.c.Packet(now); pkt != nil {
		if err := d.w.Deliver(b.id, pkt); err != nil {
			d.stats.BotRefused++
		}
	}
}

// decide picks the bot's next action: strike its target when in reach,
// run to it otherwise, or wander, pick a fight, jump.
func (d *Demo) decide(b *bot, f int) {
	me, ok := b.c.Self()
	if !ok {
		b.next = f + 1 // not in sync yet
		return
	}
	if b.target != 0 {
		if d.fight(b, &me, f) {
			return
		}
		b.target = 0
	}
	if f-b.fought >= d.frames(calm) && me.Combat {
		_ = d.w.Update(b.id, func(lg *interest.Logic) { lg.Combat, lg.Rage = false, 0 })
	}
	if d.rng.Float64() < botJump {
		_ = b.c.Jump()
	}
	if d.rng.Float64() < botFight {
		if t := d.prey(b, &me); t != 0 {
			b.target, b.hits, b.chase = t, 0, f
			_ = d.w.SetTarget(b.id, t)
			d.fight(b, &me, f)
			return
		}
	}
	dest := limit(me.Pos, d.randIn(b.lo, b.hi), d.wc.MaxMove)
	speed := d.speed(3 + d.rng.Float64()*11)
	if d.move(b, dest, speed) {
		b.next = f + walkFrames(me.Pos, dest, speed) + d.frames(d.randDur([2]time.Duration{0, 3 * time.Second}))
	} else {
		b.next = f + d.frames(time.Second)
	}
}

// fight strikes the bot's target when in reach and runs to it otherwise;
// false means the fight is over.
func (d *Demo) fight(b *bot, me *interest.Logic, f int) bool {
	v, ok := b.c.Entity(b.target)
	if !ok || b.hits >= botHits || f-b.chase > d.frames(botGiveUp) {
		_ = d.w.SetTarget(b.id, 0)
		return false
	}
	reach := int64(botReach * d.upm)
	if me.Pos.DistSq(v.Logic.Pos) > reach*reach {
		if d.move(b, limit(me.Pos, v.Logic.Pos, d.wc.MaxMove), d.speed(12)) {
			b.next = f + d.frames(time.Second/2)
		} else {
			b.next = f + d.frames(time.Second)
		}
		return true
	}
	if me.Moving() {
		d.move(b, me.Pos, 0)
	}
	if err := b.c.Skill(SkillStrike, b.target); err != nil {
		b.next = f + 1
		return true
	}
	d.stats.BotSkills++
	b.hits++
	b.fought = f
	// The strike goes up with the bot's uplink this tick; the world
	// checks its target and the Demo resolves it (onAction), as it does a
	// human player's.
	b.next = f + d.frames(time.Second)
	return true
}

// prey returns the nearest wild NPC the bot knows within sight, or 0.
func (d *Demo) prey(b *bot, me *interest.Logic) interest.ID {
	sight := int64(botSight * float64(d.wc.RegionSize))
	best, bestD := interest.ID(0), sight*sight
	b.c.Each(func(id interest.ID, v interest.View) {
		if v.Kind != interest.NPC || !v.HasDisplay || v.Display.Camp != CampWild {
			return
		}
		// Ties go to the lower ID so the choice does not depend on the
		// client's map order.
		if dsq := me.Pos.DistSq(v.Logic.Pos); dsq < bestD || (dsq == bestD && id < best) {
			best, bestD = id, dsq
		}
	})
	return best
}

// move sends the bot toward dest through its client.
func (d *Demo) move(b *bot, dest interest.Vec, speed int32) bool {
	if err := b.c.Move(dest, speed); err != nil {
		return false
	}
	d.stats.BotMoves++
	return true
}

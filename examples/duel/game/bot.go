package game

import (
	"math/rand/v2"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/fixed"
)

// Bot plays a slot: it closes in, jabs in reach, blocks some of the jabs
// it sees coming, and backs off now and then. It decides from the game as
// its own client draws it (the predicted present), as a person would.
type Bot struct {
	slot int
	rng  *rand.Rand
	back int // frames left backing off
	last Input
}

// NewBot returns a bot for slot, seeded.
func NewBot(slot int, seed uint64) *Bot {
	return &Bot{slot: slot, rng: rand.New(rand.NewPCG(seed, uint64(slot)+1))}
}

// Input returns the bot's controller state for the next frame.
func (b *Bot) Input(g *Game) Input {
	me, op := g.Fighter(b.slot), g.Fighter(1-b.slot)
	dist := op.X.Sub(me.X).Abs()
	toward, away := Right, Left
	if op.X < me.X {
		toward, away = Left, Right
	}
	var in Input
	switch {
	case g.Pause() > 0 || me.Action == KnockedOut:
	case op.Action == Startup && dist <= fixed.FromInt(Reach+12) && b.rng.IntN(3) > 0:
		in = Guard
	case b.back > 0:
		b.back--
		in = away
	case dist > fixed.FromInt(Reach-6):
		in = toward
	case b.last&Jab == 0 && b.rng.IntN(6) == 0:
		in = Jab
	case b.rng.IntN(40) == 0:
		b.back = 10 + b.rng.IntN(20)
	}
	b.last = in
	return in
}

// BotInputs returns an input source for simulated matches in which a Bot
// plays every slot, deciding from that player's game: a
// locksteptest.RollbackOptions.Input, and what `tongbu bench rollback`
// plays.
func BotInputs(seed uint64) func(slot int, g lockstep.RollbackGame, rng *rand.Rand) []byte {
	var bots [Players]*Bot
	return func(slot int, g lockstep.RollbackGame, _ *rand.Rand) []byte {
		if bots[slot] == nil {
			bots[slot] = NewBot(slot, seed)
		}
		return bots[slot].Input(g.(*Game)).Bytes()
	}
}

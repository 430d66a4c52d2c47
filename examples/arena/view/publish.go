//go:build js

package view

import (
	"fmt"
	"strconv"
	"syscall/js"
)

// publisher keeps the page's tongbuArena object up to date, for pages and
// browser tests that compare clients:
//
//	tongbuArena.slot, .players   the local slot and the number of players
//	tongbuArena.frame            the last frame run (-1 before the first)
//	tongbuArena.hash             the state hash after it, 16 hex digits
//	tongbuArena.hashes[n]        the hash after frame n, for the last 1024 frames
//	tongbuArena.state, .depth    the playout state and buffer depth in frames
//	tongbuArena.x, .y, .alive    the local player's place (arena units) and life
//	tongbuArena.fired            the frames in which the local player fired
//	tongbuArena.seats[i]         slot i as the scoreboard shows it: "" playing,
//	                             "open", "late" or "bot" (left; the game's bot plays it)
//	tongbuArena.error            the latest error, or ""
//
// Hashes are strings because a JavaScript number cannot hold 64 bits.
type publisher struct {
	obj    js.Value
	hashes js.Value
	seats  js.Value
	done   int // frames published
}

func (p *publisher) init(s *session) {
	p.obj = js.Global().Get("Object").New()
	p.hashes = js.Global().Get("Object").New()
	p.obj.Set("hashes", p.hashes)
	p.obj.Set("slot", s.slot)
	p.obj.Set("players", s.g.Players())
	p.obj.Set("frame", -1)
	p.obj.Set("hash", "")
	p.obj.Set("state", "")
	p.obj.Set("depth", 0)
	p.obj.Set("fired", 0)
	p.seats = js.Global().Get("Array").New(s.g.Players())
	p.obj.Set("seats", p.seats)
	p.obj.Set("error", "")
	js.Global().Set("tongbuArena", p.obj)
}

func (p *publisher) update(s *session) {
	for n := p.done; n < s.g.Frame(); n++ {
		h, ok := s.hashAt(n)
		if !ok {
			continue // fell out of the history between two ticks
		}
		hex := fmt.Sprintf("%016x", h)
		p.hashes.Set(strconv.Itoa(n), hex)
		p.hashes.Delete(strconv.Itoa(n - hashHistory))
		p.obj.Set("frame", n)
		p.obj.Set("hash", hex)
	}
	p.done = s.g.Frame()
	p.obj.Set("state", s.step.State.String())
	p.obj.Set("depth", s.step.Depth)
	me := s.g.Player(s.slot)
	p.obj.Set("x", me.Pos.X.Int())
	p.obj.Set("y", me.Pos.Y.Int())
	p.obj.Set("alive", me.Alive)
	p.obj.Set("fired", s.fired)
	for i := range s.g.Players() {
		p.seats.SetIndex(i, s.seat(i))
	}
	if s.err != nil {
		p.obj.Set("error", s.err.Error())
	}
}

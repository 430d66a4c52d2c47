//go:build js

package view

import (
	"syscall/js"

	"github.com/tongbu/tongbu/interest"
)

// page is the JavaScript object the view publishes its state to.
type page struct {
	obj js.Value
	ok  bool
}

// publish sets window.tongbuMMO to the view's state, every tick, so that
// a page or a browser test can watch the game advance:
//
//	frame    the client's frame (grows 16 times a second once in sync)
//	ready    whether the client knows its own character
//	known    entities the client knows, inRange those in its 3x3 range,
//	         moving those on their way somewhere, players the players
//	x, y     the player's position in world units
//	ticks    view updates run, draws frames drawn
//	bytesIn, bytesOut  the client's payload bytes each way
//	status   the session's status word
//	where    the world and server the session is on, when the Net says
//	netMs    how long the last Net.Update took, drawMs the last Draw
//	strikes  strikes sent (F); struckLife the last target's life as the
//	         client knows it (-1 if it does not)
func (v *View) publish(c *interest.Client, me *interest.Logic, ready bool) {
	if !v.page.ok {
		v.page.obj = js.Global().Get("Object").New()
		js.Global().Set("tongbuMMO", v.page.obj)
		v.page.ok = true
	}
	o := v.page.obj
	cs := c.Stats()
	o.Set("frame", c.Frame())
	o.Set("ready", ready)
	o.Set("known", v.census.known)
	o.Set("inRange", v.census.inRange)
	o.Set("moving", v.census.moving)
	o.Set("players", v.census.players)
	o.Set("x", int(me.Pos.X))
	o.Set("y", int(me.Pos.Y))
	o.Set("ticks", float64(v.ticks))
	o.Set("draws", float64(v.draws))
	o.Set("bytesIn", float64(cs.BytesIn))
	o.Set("bytesOut", float64(cs.BytesOut))
	ns := v.net.Stats()
	o.Set("status", ns.Status)
	o.Set("where", ns.Where)
	o.Set("netMs", v.netTime.Seconds()*1000)
	o.Set("drawMs", v.drawTime.Seconds()*1000)
	o.Set("strikes", v.strikes)
	life := -1
	if e, ok := c.Entity(v.struck); ok && v.struck != 0 {
		life = int(e.Logic.Life)
	}
	o.Set("struckLife", life)
}

package view

import (
	"time"

	"github.com/tongbu/tongbu/interest"
)

// census counts what the client knows, for the overlay and the page.
type census struct {
	known   int // entities the client knows, the player's own excluded
	inRange int // of those, in the 3x3 range of the player's region
	moving  int // of those, on their way somewhere
	players int // of those, players (humans and bots)
}

func count(c *interest.Client, cfg *interest.Config) census {
	var n census
	me, ok := c.Self()
	mine := regionOf(cfg, me.Pos)
	c.Each(func(_ interest.ID, v interest.View) {
		n.known++
		if !ok || near(mine, regionOf(cfg, v.Logic.Pos)) {
			n.inRange++
		}
		if v.Logic.Moving() {
			n.moving++
		}
		if v.Kind == interest.Player {
			n.players++
		}
	})
	return n
}

// meter turns a counter into a rate over the last window.
type meter struct {
	window  time.Duration
	samples []sample
}

type sample struct {
	at time.Time
	v  int64
}

// add records the counter's value at now.
func (m *meter) add(now time.Time, v int64) {
	m.samples = append(m.samples, sample{now, v})
	// Keep one sample at or before the window's start, as the base.
	drop := 0
	for drop+1 < len(m.samples) && now.Sub(m.samples[drop+1].at) >= m.window {
		drop++
	}
	if drop > 0 {
		m.samples = append(m.samples[:0], m.samples[drop:]...)
	}
}

// rate returns the counter's growth per second over the window, 0 before
// two samples.
func (m *meter) rate() float64 {
	if len(m.samples) < 2 {
		return 0
	}
	a, b := m.samples[0], m.samples[len(m.samples)-1]
	dt := b.at.Sub(a.at).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(b.v-a.v) / dt
}

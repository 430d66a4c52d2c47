// Package nettrace generates seeded one-way network traces for the
// benchmarks: each packet's delay, or its loss, drawn in send order so
// that a trace is the same for the same seed whatever the engine does.
package nettrace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Link generates one direction's seeded packet fates for a named
// network: a delay, or lost. Fates are drawn in send order, so a trace is
// the same for the same seed whatever the engine does.
type Link struct {
	name   string
	period time.Duration // the sender's frame period (OnePacket)
	rng    *rand.Rand
	start  time.Time
	bad    bool // Gilbert-Elliott state (wifi)
	// OnePacket reads a 4g spike as one packet 300 ms late, which later
	// packets overtake, instead of the link holding everything for 300 ms.
	OnePacket bool
}

// SpikeEvery is how often a 4g trace's delay spikes: twice a minute,
// SpikeOnset into each SpikeEvery.
const (
	SpikeEvery = 30 * time.Second
	SpikeOnset = SpikeEvery / 2
)

// SpikeHeight is the extra delay at a spike's onset.
const SpikeHeight = 300 * time.Millisecond

// New returns the link of the named trace (clean, 4g, wifi, rtt100, rtt150)
// starting at start, its fates drawn from seed; period is the sender's
// frame period, for OnePacket.
func New(name string, start time.Time, seed uint64, period time.Duration) (*Link, error) {
	switch name {
	case "clean", "4g", "wifi", "rtt100", "rtt150":
	default:
		return nil, fmt.Errorf("unknown trace %q (clean, 4g, wifi, rtt100, rtt150)", name)
	}
	return &Link{name: name, period: period, rng: rand.New(rand.NewPCG(seed, 11)), start: start}, nil
}

// Fate returns the one-way delay of a packet sent at t, and whether it is
// lost.
func (l *Link) Fate(t time.Time) (delay time.Duration, lost bool) {
	rng := l.rng
	switch l.name {
	case "clean": // a wired link: under 2 ms of jitter, no loss
		return 20*time.Millisecond + time.Duration(rng.Float64()*2e6), false
	case "rtt100": // 50 ms one way, 5 ms of jitter, 2% loss
		return 50*time.Millisecond + time.Duration(rng.Float64()*5e6), rng.Float64() < 0.02
	case "rtt150": // 75 ms one way, 5 ms of jitter, 2% loss
		return 75*time.Millisecond + time.Duration(rng.Float64()*5e6), rng.Float64() < 0.02
	case "4g": // 30 ms one way, about 15 ms MAPDV2, 1% loss, two +300 ms spikes a minute
		delay = 30*time.Millisecond + time.Duration(math.Abs(rng.NormFloat64())*25e6)
		lost = rng.Float64() < 0.01
		// A delay spike (a handover, or a radio retransmission the link
		// delivers in order): the link stalls for SpikeHeight, and every
		// packet sent meanwhile comes out when it resumes, the first
		// SpikeHeight late, the later ones less.
		since := t.Sub(l.start) % SpikeEvery
		switch {
		case l.OnePacket:
			// The other reading: the packets sent in the first frame
			// period after the onset come SpikeHeight late; later ones
			// overtake them.
			if since >= SpikeOnset && since < SpikeOnset+l.period {
				delay += SpikeHeight
			}
		case since >= SpikeOnset && since < SpikeOnset+SpikeHeight:
			delay += SpikeOnset + SpikeHeight - since
		}
		return delay, lost
	default: // wifi: heavy-tailed jitter (about 40 ms MAPDV2), 5% loss in bursts
		const shape = 2.2
		u := 1 - rng.Float64()
		delay = 20*time.Millisecond + time.Duration(40e6*(math.Pow(u, -1/shape)-1)*(shape-1))
		if l.bad {
			l.bad = rng.Float64() > 0.4 // bursts of 2.5 packets
		} else {
			l.bad = rng.Float64() < 0.021 // 5% of packets in bad state
		}
		return delay, l.bad
	}
}

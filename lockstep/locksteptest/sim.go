package locksteptest

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/tongbu/tongbu/internal/timeq"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/memnet"
)

// Options describe a simulated match.
type Options struct {
	Config    lockstep.Config
	Duration  time.Duration
	Up, Down  memnet.LinkConfig // each player's uplink and downlink
	RenderHz  int               // the clients' render rate (default 30)
	InputRate float64           // inputs per player per second (default 5)
	Seed      uint64
}

// Result measures a simulated match.
type Result struct {
	Frames      int     // frames the room cut
	Delivered   float64 // frames received by the clients / frames they should have received
	Identical   bool    // every client played the room's exact frame sequence
	Unstalled   float64 // share of play time not paused, over all clients
	Stalls      int     // pauses, all clients
	Inputs      uint64  // inputs the clients sent
	LateDrops   uint64  // inputs the room dropped as late
	DownBytes   uint64  // lockstep payload bytes sent to the clients
	UpBytes     uint64  // lockstep payload bytes sent by the clients
	Retransmits uint64
	Redundancy  float64 // mean redundancy at the end
	MeanLeadMs  float64 // mean input lead at the end
}

type event struct {
	at   time.Time
	kind int // evToRoom, evToClient
	slot int
	msg  []byte
}

const (
	evToRoom = iota
	evToClient
)

type sim struct {
	q    timeq.Queue[event]
	up   []*memnet.LinkModel
	down []*memnet.LinkModel
	res  Result
}

// newSim returns a simulation with links up and down links, seeded.
func newSim(links int, up, down memnet.LinkConfig, seed uint64) (*sim, error) {
	s := &sim{}
	for i := range links {
		u, err := memnet.NewLinkModel(up, seed*1000+uint64(2*i))
		if err != nil {
			return nil, err
		}
		d, err := memnet.NewLinkModel(down, seed*1000+uint64(2*i+1))
		if err != nil {
			return nil, err
		}
		s.up, s.down = append(s.up, u), append(s.down, d)
	}
	return s, nil
}

// nextThing returns when the next cut or render tick is due, and whose
// tick it is (-1: the room's cut).
func nextThing(room *lockstep.Room, nextRender []time.Time) (time.Time, int) {
	next, what := room.NextCut(), -1
	for i, t := range nextRender {
		if t.Before(next) {
			next, what = t, i
		}
	}
	return next, what
}

// play runs a match's loop in virtual time until end: each message due
// is delivered (to the room, or to a client by deliver), each cut is the
// room's, and each render tick of a client (nextRender holds when each
// is due; every render apart) is tick's, which may stop the match with an
// error. *now is the virtual time, for the room's Sender to read.
func (s *sim) play(room *lockstep.Room, now *time.Time, nextRender []time.Time, render time.Duration, end time.Time,
	deliver func(slot int, msg []byte), tick func(slot int) error) error {
	for {
		next, what := nextThing(room, nextRender)
		if e, ok := s.q.PopDue(next); ok {
			*now = e.at
			if e.kind == evToRoom {
				room.Deliver(e.slot, e.msg, *now)
			} else {
				deliver(e.slot, e.msg)
			}
			continue
		}
		if next.After(end) {
			return nil
		}
		*now = next
		if what < 0 {
			room.Tick(next)
			continue
		}
		nextRender[what] = next.Add(render)
		if err := tick(what); err != nil {
			return err
		}
	}
}

func (s *sim) send(now time.Time, link *memnet.LinkModel, kind, slot int, msg []byte, ch transport.Channel) {
	fate := link.Fate(ch)
	if fate.Lost {
		return
	}
	copies := 1
	if fate.Dup {
		copies = 2
	}
	for k := range copies {
		at := now.Add(fate.Delay + time.Duration(k)*time.Millisecond)
		s.q.Push(at, event{at: at, kind: kind, slot: slot, msg: append([]byte(nil), msg...)})
	}
}

// roomOut is the room's Sender: packets go onto the downlinks.
type roomOut struct {
	s   *sim
	now *time.Time
}

func (o roomOut) SendUnreliable(slot int, msg []byte) error {
	o.s.res.DownBytes += uint64(len(msg))
	o.s.send(*o.now, o.s.down[slot], evToClient, slot, msg, transport.Unreliable)
	return nil
}

func (o roomOut) SendReliable(slot int, msg []byte) error {
	o.s.res.DownBytes += uint64(len(msg))
	o.s.send(*o.now, o.s.down[slot], evToClient, slot, msg, transport.Reliable)
	return nil
}

// Run plays the match.
func Run(o Options) (Result, error) {
	cfg := o.Config.WithDefaults()
	if o.RenderHz == 0 {
		o.RenderHz = 30
	}
	if o.InputRate == 0 {
		o.InputRate = 5
	}
	s, err := newSim(cfg.Players, o.Up, o.Down, o.Seed)
	if err != nil {
		return Result{}, err
	}
	start := time.Unix(1_000_000, 0)
	now := start
	room, err := lockstep.NewRoom(cfg, start, roomOut{s, &now})
	if err != nil {
		return Result{}, err
	}
	clients := make([]*lockstep.Client, cfg.Players)
	played := make([]int, cfg.Players) // frames each client played, checked against the room
	identical := true
	for i := range clients {
		if clients[i], err = lockstep.NewClient(cfg, i); err != nil {
			return Result{}, err
		}
	}
	rng := rand.New(rand.NewPCG(o.Seed, 42))
	render := time.Second / time.Duration(o.RenderHz)
	// Each client renders on its own phase.
	nextRender := make([]time.Time, cfg.Players)
	for i := range nextRender {
		nextRender[i] = start.Add(time.Duration(rng.Int64N(int64(render))))
	}
	end := start.Add(o.Duration)
	pInput := o.InputRate / float64(o.RenderHz)
	input := make([]byte, 6)
	var stalledTicks, ticks int
	deliver := func(slot int, msg []byte) { clients[slot].Deliver(now, msg) }
	s.play(room, &now, nextRender, render, end, deliver, func(what int) error {
		c := clients[what]
		if rng.Float64() < pInput {
			binary.LittleEndian.PutUint16(input, uint16(what))
			binary.LittleEndian.PutUint32(input[2:], rng.Uint32())
			if _, err := c.Input(now, input); err == nil {
				s.res.Inputs++
			}
		}
		pkt := c.Packet(now)
		s.res.UpBytes += uint64(len(pkt))
		s.send(now, s.up[what], evToRoom, what, pkt, transport.Unreliable)
		st := c.Advance(now)
		ticks++
		if st.State == lockstep.Paused {
			stalledTicks++
		}
		for _, f := range st.Frames {
			want, ok := room.Frame(f.Number)
			if !ok || f.Number != played[what] || !sameFrame(f, want, cfg.Fill) {
				identical = false
			}
			played[what]++
		}
		return nil
	})
	cut := room.NextFrame()
	inflight := cfg.Hz // the last second may still be on its way
	got := 0
	for _, c := range clients {
		got += min(c.Have(), cut-inflight)
		s.res.Stalls += c.Playout().Stalls
		s.res.MeanLeadMs += c.Lead() * 1000 / float64(cfg.Hz)
	}
	for i := range clients {
		s.res.Redundancy += float64(room.PlayerStats(i).Redundancy)
		s.res.LateDrops += room.PlayerStats(i).LateDrops
	}
	r := s.res
	r.Frames = cut
	r.Delivered = float64(got) / float64(max(1, cfg.Players*(cut-inflight)))
	r.Identical = identical
	r.Unstalled = 1 - float64(stalledTicks)/float64(max(ticks, 1))
	r.Retransmits = room.Stats().Retransmits
	r.Redundancy /= float64(cfg.Players)
	r.MeanLeadMs /= float64(cfg.Players)
	return r, nil
}

func sameFrame(a, b lockstep.Frame, fill lockstep.Fill) bool {
	if len(a.Slots) != len(b.Slots) {
		return false
	}
	for i := range a.Slots {
		x, y := a.Slots[i], b.Slots[i]
		if x.MadeUp != y.MadeUp {
			return false
		}
		if x.MadeUp && fill == lockstep.FillRepeat {
			continue
		}
		if !slices.EqualFunc(x.Inputs, y.Inputs, bytes.Equal) {
			return false
		}
	}
	return true
}

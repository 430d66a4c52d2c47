package lockstep

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// connSender is the room's Sender over the server ends of in-memory
// connections, players then spectators.
type connSender struct{ m *match }

func (s connSender) SendUnreliable(peer int, msg []byte) error {
	return s.m.sside[peer].SendUnreliable(msg)
}
func (s connSender) SendReliable(peer int, msg []byte) error {
	return s.m.sside[peer].SendReliable(msg)
}

// match runs one room and its clients over an emulated network.
type match struct {
	t       *testing.T
	cfg     Config
	room    *Room
	clients []*Client
	cside   []*memnet.Conn
	sside   []*memnet.Conn
	rng     *rand.Rand

	// What each client sent: input id -> target frame, and what it played.
	sent   []map[uint32]int
	played [][]Frame
	stalls []int

	// Lifecycle: each client's simulation and the hashes it reached at the
	// checked frames; players who are away; a frame to corrupt a sim at.
	net      *memnet.Network
	up, down memnet.LinkConfig
	sims     []*chainSim
	hashes   []map[int]uint64
	away     []bool
	corrupt  map[int]int                                       // slot -> frame after which its simulation diverges
	recvAt   []map[int]time.Duration                           // spectators: frame -> arrival after its cut
	caught   []int                                             // frames run while catching up
	snapAt   []int                                             // the frame a client restored a snapshot at (its first frame played)
	onFrame  func(slot int, c *Client, f Frame, sim *chainSim) // after each frame a client runs
	ids      []uint32                                          // the last input id of each client
	waitSeen []map[int]bool                                    // the slots each client was told the room waits for (strict rooms)
	targets  []float64                                         // each client's playout depth aimed for, at its last tick
}

func newMatch(t *testing.T, cfg Config, seed uint64, up, down memnet.LinkConfig) *match {
	cfg = cfg.WithDefaults()
	net := memnet.New(seed)
	m := &match{t: t, cfg: cfg, rng: rand.New(rand.NewPCG(seed, 99)), net: net, up: up, down: down, corrupt: map[int]int{}}
	for range cfg.Players {
		c, s := net.Pipe(up, down)
		m.cside = append(m.cside, c)
		m.sside = append(m.sside, s)
	}
	room, err := NewRoom(cfg, time.Now(), connSender{m})
	if err != nil {
		t.Fatal(err)
	}
	m.room = room
	for i := range cfg.Players {
		c, err := NewClient(cfg, i)
		if err != nil {
			t.Fatal(err)
		}
		m.addClient(c)
	}
	return m
}

func (m *match) addClient(c *Client) {
	m.clients = append(m.clients, c)
	m.sent = append(m.sent, map[uint32]int{})
	m.played = append(m.played, nil)
	m.stalls = append(m.stalls, 0)
	m.sims = append(m.sims, &chainSim{})
	m.hashes = append(m.hashes, map[int]uint64{})
	m.away = append(m.away, false)
	m.recvAt = append(m.recvAt, map[int]time.Duration{})
	m.caught = append(m.caught, 0)
	m.snapAt = append(m.snapAt, 0)
	m.ids = append(m.ids, 0)
	m.waitSeen = append(m.waitSeen, map[int]bool{})
	m.targets = append(m.targets, 0)
}

// input data: the slot and a per-slot counter, so every input is unique.
func inputData(slot int, id uint32) []byte {
	b := make([]byte, 6)
	b[0] = byte(slot)
	binary.LittleEndian.PutUint32(b[1:], id)
	return b
}

// run plays the match for d of network time. inputRate is the chance per
// render tick that a player acts. dead lists slots whose uplink dies at
// deadAt.
func (m *match) run(d time.Duration, inputRate float64) {
	end := time.Now().Add(d)
	done := make(chan struct{})
	go m.serve(end, done)
	n := 1
	for i := range m.clients {
		if !m.away[i] {
			go m.play(i, end, inputRate, done)
			n++
		}
	}
	for range n {
		<-done
	}
}

// serve is the room's goroutine: it drains the connections and ticks on
// the frame schedule.
func (m *match) serve(end time.Time, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	for {
		next := m.room.NextCut()
		if next.After(end) {
			return
		}
		time.Sleep(time.Until(next))
		now := time.Now()
		for slot, c := range m.sside {
			for {
				msg, ok := c.TryReceive()
				if !ok {
					break
				}
				if m.away[slot] {
					continue
				}
				if err := m.room.Deliver(slot, msg.Data, now); err != nil {
					m.t.Errorf("room: peer %d: %v", slot, err)
				}
			}
		}
		m.room.Tick(now)
	}
}

const renderHz = 30

// play is one client's goroutine: render ticks at renderHz, inputs at
// random, an uplink packet every tick.
func (m *match) play(slot int, end time.Time, inputRate float64, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	c := m.clients[slot]
	conn := m.cside[slot]
	rng := rand.New(rand.NewPCG(uint64(slot), uint64(7+m.ids[slot])))
	id := m.ids[slot]
	defer func() { m.ids[slot] = id }()
	tick := time.NewTicker(time.Second / renderHz)
	defer tick.Stop()
	for now := time.Now(); now.Before(end); now = <-tick.C {
		for {
			msg, ok := conn.TryReceive()
			if !ok {
				break
			}
			if err := c.Deliver(now, msg.Data); err != nil {
				m.t.Errorf("client %d: %v", slot, err)
			}
		}
		if slot < m.cfg.Players && rng.Float64() < inputRate {
			id++
			if target, err := c.Input(now, inputData(slot, id)); err == nil {
				m.sent[slot][id] = target
			}
		}
		conn.SendUnreliable(c.Packet(now))
		st := c.Advance(now)
		if st.State == Paused {
			m.stalls[slot]++
		}
		for _, w := range st.WaitingFor {
			m.waitSeen[slot][w] = true
		}
		m.targets[slot] = st.Target
		if st.CatchingUp {
			m.caught[slot] += len(st.Frames)
		}
		sim := m.sims[slot]
		if st.Snapshot != nil {
			if err := sim.Restore(st.Snapshot); err != nil {
				m.t.Errorf("client %d: restore: %v", slot, err)
			}
			m.snapAt[slot], m.played[slot] = st.SnapshotFrame, nil
		}
		m.played[slot] = append(m.played[slot], st.Frames...)
		for _, f := range st.Frames {
			sim.Step(f)
			if m.onFrame != nil {
				m.onFrame(slot, c, f, sim)
			}
			if at, ok := m.corrupt[slot]; ok && f.Number == at {
				sim.state ^= 1 << 17 // a one-bit divergence
			}
			if f.Number%m.cfg.HashEvery == 0 {
				h := sim.Hash()
				m.hashes[slot][f.Number] = h
				c.ReportHash(f.Number, h)
			}
			if cut := m.room.Config().cutTime(m.room.start, f.Number); slot >= m.cfg.Players {
				m.recvAt[slot][f.Number] = now.Sub(cut)
			}
		}
		for _, f := range c.DumpRequests() {
			c.Dump(f, fmt.Appendf(nil, "client %d frame %d state %x", slot, f, sim.state))
		}
		for _, msg := range c.Outbox() {
			conn.SendReliable(msg)
		}
	}
}

// check asserts the lockstep guarantees: every client received every frame
// the room cut (but the last few in flight), every client's sequence is the
// room's, and every input either reached its frame or was reported late.
func (m *match) check() {
	t := m.t
	t.Helper()
	cut := m.room.NextFrame()
	if cut < 10 {
		t.Fatalf("only %d frames cut", cut)
	}
	for i, c := range m.clients[:m.cfg.Players] {
		if c.Have() < cut-m.cfg.Hz { // a second of frames may be in flight at the end
			t.Errorf("client %d holds %d of %d frames", i, c.Have(), cut)
		}
		for k, f := range m.played[i] {
			k += m.snapAt[i]
			want, _ := m.room.Frame(k)
			if f.Number != k || !sameFrame(f, want, m.cfg.Fill) {
				t.Fatalf("client %d played frame %d as %+v, room cut %+v", i, k, f, want)
			}
		}
	}
	// Every input: in its target frame, or noticed, or still in flight.
	where := map[[2]uint32]int{} // (slot, id) -> frame
	for n := range cut {
		f, _ := m.room.Frame(n)
		for slot, s := range f.Slots {
			if s.MadeUp {
				continue
			}
			for _, in := range s.Inputs {
				where[[2]uint32{uint32(slot), binary.LittleEndian.Uint32(in[1:])}] = n
			}
		}
	}
	lost := 0
	for slot, sent := range m.sent[:m.cfg.Players] {
		late := m.room.PlayerStats(slot).LateDrops
		missing := 0
		for id, target := range sent {
			n, ok := where[[2]uint32{uint32(slot), id}]
			switch {
			case ok && n == target:
			case ok && m.cfg.Late == LateNextFrame && n > target:
			case !ok && target >= cut-m.cfg.Hz: // in flight at the end
			default:
				missing++
			}
		}
		if uint64(missing) > late {
			lost += missing - int(late)
			t.Errorf("client %d: %d inputs missing from their frames, only %d dropped as late", slot, missing, late)
		}
	}
	if lost > 0 {
		t.Fatalf("%d inputs lost", lost)
	}
}

func sameFrame(a, b Frame, fill Fill) bool {
	if a.Number != b.Number || len(a.Slots) != len(b.Slots) {
		return false
	}
	for i := range a.Slots {
		x, y := a.Slots[i], b.Slots[i]
		if x.MadeUp != y.MadeUp {
			return false
		}
		if x.MadeUp && fill == FillRepeat {
			continue // the client resolved the repeat; the room's log keeps it made up
		}
		if len(x.Inputs) != len(y.Inputs) {
			return false
		}
		for k := range x.Inputs {
			if string(x.Inputs[k]) != string(y.Inputs[k]) {
				return false
			}
		}
	}
	return true
}

func (m *match) String() string {
	return fmt.Sprintf("room %+v", m.room.Stats())
}

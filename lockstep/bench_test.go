package lockstep

import (
	"testing"
	"time"
)

type nopSender struct{}

func (nopSender) SendUnreliable(int, []byte) error { return nil }
func (nopSender) SendReliable(int, []byte) error   { return nil }

// BenchmarkRoomFrame measures the room's work for one frame of a full room:
// one uplink packet from each of 10 players (half carry a new input), then
// the cut and the 10 downlink packets. It reports the time per
// player-frame.
func BenchmarkRoomFrame(b *testing.B) {
	start := time.Unix(0, 0)
	cfg := Config{Players: 10}
	room, err := NewRoom(cfg, start, nopSender{})
	if err != nil {
		b.Fatal(err)
	}
	clients := make([]*Client, cfg.Players)
	for i := range clients {
		clients[i], _ = NewClient(cfg, i)
	}
	at := func(n int) time.Time { return room.Config().cutTime(start, n) }
	// Packets are made in batches outside the timer.
	const batch = 2048
	pkts := make([][][]byte, batch)
	n := 0
	fill := func() {
		for k := range batch {
			now := at(n + k)
			pkts[k] = pkts[k][:0]
			for i, c := range clients {
				if (i+n+k)%2 == 0 {
					c.unacked = append(c.unacked[:0], sentInput{seq: c.nextSeq, frame: n + k + 1, data: []byte{byte(i), byte(k), 1, 2}})
					c.nextSeq++
				} else {
					c.unacked = c.unacked[:0]
				}
				c.have = n + k
				pkts[k] = append(pkts[k], append([]byte(nil), c.Packet(now)...))
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	k := batch
	for b.Loop() {
		if k == batch {
			b.StopTimer()
			fill()
			k = 0
			b.StartTimer()
		}
		now := at(n)
		for i, p := range pkts[k] {
			room.Deliver(i, p, now)
		}
		room.Tick(now)
		n++
		k++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*cfg.Players), "ns/player-frame")
}

// capSender keeps a room's sends in one buffer, like the relay scenario's.
type capSender struct {
	buf  []byte
	msgs [][2]int // slot, end offset
}

func (s *capSender) SendUnreliable(slot int, msg []byte) error {
	s.buf = append(s.buf, msg...)
	s.msgs = append(s.msgs, [2]int{slot, len(s.buf)})
	return nil
}
func (s *capSender) SendReliable(slot int, msg []byte) error { return s.SendUnreliable(slot, msg) }

// BenchmarkRoomsCold is the relay scenario without its network and clock:
// 100 rooms of 10 players with real clients, one frame of every room per
// iteration, each room's Deliver and Tick timed alone while the 99 other
// rooms run between two runs of it (cold caches). Half the players send an
// input each frame. It reports the room time per player-frame.
func BenchmarkRoomsCold(b *testing.B) {
	const rooms = 100
	start := time.Unix(1000, 0)
	cfg := Config{Players: 10}
	type roomRig struct {
		room    *Room
		out     *capSender
		clients []*Client
		up      [][]byte
	}
	rigs := make([]*roomRig, rooms)
	for i := range rigs {
		g := &roomRig{out: &capSender{}}
		var err error
		if g.room, err = NewRoom(cfg, start, g.out); err != nil {
			b.Fatal(err)
		}
		for s := range cfg.Players {
			c, err := NewClient(cfg, s)
			if err != nil {
				b.Fatal(err)
			}
			g.clients = append(g.clients, c)
			g.up = append(g.up, nil)
		}
		rigs[i] = g
	}
	cut := rigs[0].room.Config().cutTime
	var spent time.Duration
	n := 0
	input := []byte{0, 0, 0, 0}
	b.ReportAllocs()
	for b.Loop() {
		now := cut(start, n)
		for r, g := range rigs {
			for s, c := range g.clients {
				if (r+s+n)%2 == 0 {
					input[0], input[1] = byte(s), byte(n%8)
					c.Input(now, input)
				}
				g.up[s] = append(g.up[s][:0], c.Packet(now)...)
			}
		}
		for _, g := range rigs {
			t0 := time.Now()
			for s, p := range g.up {
				g.room.Deliver(s, p, now)
			}
			g.room.Tick(now)
			spent += time.Since(t0)
		}
		for _, g := range rigs {
			from := 0
			for _, m := range g.out.msgs {
				g.clients[m[0]].Deliver(now, g.out.buf[from:m[1]])
				from = m[1]
			}
			g.out.buf, g.out.msgs = g.out.buf[:0], g.out.msgs[:0]
			for _, c := range g.clients {
				c.Advance(now)
			}
		}
		n++
	}
	b.ReportMetric(float64(spent.Nanoseconds())/float64(b.N*rooms*cfg.Players), "ns/player-frame")
}

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

package lockstep

import (
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/transport/memnet"
)

// TestQualityMatchesTheLink: the room's quality report gives each player
// the round trip, loss each way and jitter of the link it is on, as the
// emulated links were set: a clean 20 ms link, a 50 ms link losing 10%
// up and 5% down, and a 30 ms link with 15 ms of jitter. Both halves
// take each message when it arrives (the report is the link's, not the
// loop's).
func TestQualityMatchesTheLink(t *testing.T) {
	links := []struct{ up, down memnet.LinkConfig }{
		{memnet.LinkConfig{Latency: 20 * time.Millisecond}, memnet.LinkConfig{Latency: 20 * time.Millisecond}},
		{memnet.LinkConfig{Latency: 50 * time.Millisecond, Loss: 0.10}, memnet.LinkConfig{Latency: 50 * time.Millisecond, Loss: 0.05}},
		{memnet.LinkConfig{Latency: 30 * time.Millisecond}, memnet.LinkConfig{Latency: 30 * time.Millisecond, Jitter: 15 * time.Millisecond}},
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Players: len(links)}.WithDefaults()
		net := memnet.New(17)
		var cside, sside []*memnet.Conn
		for _, l := range links {
			c, s := net.Pipe(l.up, l.down)
			cside, sside = append(cside, c), append(sside, s)
		}
		var mu sync.Mutex // the room
		room, err := NewRoom(cfg, time.Now(), senderFunc(func(slot int, msg []byte, reliable bool) {
			if reliable {
				sside[slot].SendReliable(msg)
			} else {
				sside[slot].SendUnreliable(msg)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		end := time.Now().Add(60 * time.Second)
		var wg sync.WaitGroup
		wg.Add(1 + len(links))
		go func() { // the room: each packet as it arrives, each cut on time
			defer wg.Done()
			for time.Now().Before(end) {
				mu.Lock()
				for slot, s := range sside {
					for {
						msg, ok := s.TryReceive()
						if !ok {
							break
						}
						room.Deliver(slot, msg.Data, time.Now())
					}
				}
				if !room.NextCut().After(time.Now()) {
					room.Tick(time.Now())
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
		for slot := range links {
			go func() { // a client: each packet as it arrives, a render tick at 30 Hz
				defer wg.Done()
				c, _ := NewClient(cfg, slot)
				next := time.Now()
				for time.Now().Before(end) {
					for {
						msg, ok := cside[slot].TryReceive()
						if !ok {
							break
						}
						c.Deliver(time.Now(), msg.Data)
					}
					if now := time.Now(); !now.Before(next) {
						next = next.Add(time.Second / 30)
						cside[slot].SendUnreliable(c.Packet(now))
						for _, m := range c.Outbox() {
							cside[slot].SendReliable(m)
						}
						c.Advance(now)
					}
					time.Sleep(time.Millisecond)
				}
			}()
		}
		wg.Wait()
		mu.Lock()
		q := room.Quality()
		mu.Unlock()
		ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
		near := func(got, want, tol float64) bool { return math.Abs(got-want) <= tol }
		for slot, l := range links {
			p := q.Peers[slot]
			rtt := ms(l.up.Latency + l.down.Latency)
			t.Logf("player %d: rtt min %.1f mean %.1f max %.1f ms (link %.0f), loss up %.3f down %.3f, jitter mean %.2f max %.2f ms",
				slot, ms(p.RTTMin), ms(p.RTTMean), ms(p.RTTMax), rtt, p.LossUp, p.LossDown, p.JitterMean, p.JitterMax)
			// A round trip is read to the millisecond and waits up to a
			// millisecond on each side's loop.
			if !near(ms(p.RTTMin), rtt, 3) || p.RTTMean < p.RTTMin || ms(p.RTTMean) > rtt+3+2*ms(l.down.Jitter) {
				t.Errorf("player %d: round trip min %v mean %v, the link's is %.0f ms", slot, p.RTTMin, p.RTTMean, rtt)
			}
			if !near(p.LossUp, l.up.Loss, 0.03) || !near(p.LossDown, l.down.Loss, 0.03) {
				t.Errorf("player %d: loss up %.3f down %.3f, the link's %.2f and %.2f", slot, p.LossUp, p.LossDown, l.up.Loss, l.down.Loss)
			}
		}
		clean, jittery := q.Peers[0].JitterMean, q.Peers[2].JitterMean
		if clean > 1.5 || jittery < 3 || jittery > 15 {
			t.Errorf("jitter: %.2f ms on the clean link, %.2f on the one with 15 ms of jitter", clean, jittery)
		}
	})
}

// senderFunc is a Sender from a function.
type senderFunc func(slot int, msg []byte, reliable bool)

func (f senderFunc) SendUnreliable(slot int, msg []byte) error { f(slot, msg, false); return nil }
func (f senderFunc) SendReliable(slot int, msg []byte) error   { f(slot, msg, true); return nil }

package lockstep

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// periodic is a job that runs every period, optionally taking long.
type periodic struct {
	period time.Duration
	work   time.Duration
	mu     sync.Mutex
	runs   []time.Time
	due    time.Time
	late   time.Duration
}

func (p *periodic) Run(now time.Time) time.Time {
	p.mu.Lock()
	if d := now.Sub(p.due); d > p.late {
		p.late = d
	}
	p.runs = append(p.runs, now)
	p.due = p.due.Add(p.period)
	next := p.due
	p.mu.Unlock()
	time.Sleep(p.work) // a slow room holds its worker this long
	return next
}

func TestSchedulerSlowRoomDoesNotDelayOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(2)
		defer s.Close()
		now := time.Now()
		slow := &periodic{period: 66 * time.Millisecond, work: 500 * time.Millisecond, due: now}
		s.Add(slow, now)
		var fast []*periodic
		for range 50 {
			p := &periodic{period: 66 * time.Millisecond, due: now}
			fast = append(fast, p)
			s.Add(p, now)
		}
		time.Sleep(10 * time.Second)
		for i, p := range fast {
			p.mu.Lock()
			if p.late > 0 || len(p.runs) < 150 {
				t.Errorf("fast room %d: %d runs, up to %v late", i, len(p.runs), p.late)
			}
			p.mu.Unlock()
		}
		slow.mu.Lock()
		if len(slow.runs) < 15 {
			t.Errorf("slow room ran %d times", len(slow.runs))
		}
		slow.mu.Unlock()
		if st := s.Stats(); st.Runs < 7500 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestHostRunsRooms: rooms on a scheduler cut frames on schedule, and
// packets handed to a Host from other goroutines reach the room.
func TestHostRunsRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(0)
		defer s.Close()
		start := time.Now()
		var hosts []*Host
		for range 20 {
			room, err := NewRoom(Config{Players: 2}, start, &recorder{})
			if err != nil {
				t.Fatal(err)
			}
			h := NewHost(room)
			hosts = append(hosts, h)
			s.Add(h, room.NextCut())
		}
		c, _ := NewClient(Config{Players: 2}, 1)
		target, _ := c.Input(start, []byte("hi"))
		hosts[7].Deliver(1, append([]byte(nil), c.Packet(start)...), start)
		time.Sleep(10*time.Second + time.Millisecond)
		s.Close()
		for i, h := range hosts {
			if n := h.Room().NextFrame(); n != 151 { // frames 0..150 in 10 s at 15 Hz
				t.Errorf("room %d cut %d frames", i, n)
			}
		}
		f, _ := hosts[7].Room().Frame(target)
		if f.Slots[1].MadeUp || string(f.Slots[1].Inputs[0]) != "hi" {
			t.Fatalf("frame %d: %+v", target, f.Slots[1])
		}
	})
}

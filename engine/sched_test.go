//go:build !js

package engine

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tongbu/tongbu/internal/sched"
	"github.com/tongbu/tongbu/lockstep"
)

// TestSchedulerRunsRooms: rooms on a scheduler cut frames on schedule, and
// packets handed to a Host from other goroutines reach the room.
func TestSchedulerRunsRooms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := sched.NewScheduler(0)
		defer s.Close()
		start := time.Now()
		var hosts []*sched.Host[roomPacket]
		var rooms []*lockstep.Room
		for range 20 {
			room, err := lockstep.NewRoom(lockstep.Config{Players: 2}, start, discard{})
			if err != nil {
				t.Fatal(err)
			}
			h := sched.NewHost[roomPacket](plainRoom{room})
			hosts, rooms = append(hosts, h), append(rooms, room)
			s.Add(h, room.NextCut())
		}
		c, _ := lockstep.NewClient(lockstep.Config{Players: 2}, 1)
		target, _ := c.Input(start, []byte("hi"))
		hosts[7].Deliver(roomPacket{1, append([]byte(nil), c.Packet(start)...), start})
		time.Sleep(10*time.Second + time.Millisecond)
		s.Close()
		for i, room := range rooms {
			if n := room.NextFrame(); n != 151 { // frames 0..150 in 10 s at 15 Hz
				t.Errorf("room %d cut %d frames", i, n)
			}
		}
		f, _ := rooms[7].Frame(target)
		if f.Slots[1].MadeUp || string(f.Slots[1].Inputs[0]) != "hi" {
			t.Fatalf("frame %d: %+v", target, f.Slots[1])
		}
	})
}

// discard is a room's sender that sends nowhere.
type discard struct{}

func (discard) SendUnreliable(int, []byte) error { return nil }
func (discard) SendReliable(int, []byte) error   { return nil }

// plainRoom runs a lockstep room on a Host with nothing of the engine
// around it: the packets in, the cuts that are due.
type plainRoom struct{ room *lockstep.Room }

func (l plainRoom) Take(in []roomPacket) {
	for _, p := range in {
		l.room.Deliver(p.Slot, p.Msg, p.At)
	}
}

func (l plainRoom) Tick(now time.Time) time.Time {
	l.room.Tick(now)
	return l.room.NextCut()
}

func (plainRoom) Stop() {}

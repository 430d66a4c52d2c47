//go:build !js

package engine

import (
	"fmt"
	"testing"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// FuzzRestoredRoomCarry: whatever a player's client sends a restored room
// as its carry, the room takes it or drops it, gathers, and goes on
// cutting from the end of its log: a carry cannot shorten the log, nor
// lengthen it past the room's bound.
func FuzzRestoredRoomCarry(f *testing.F) {
	f.Add(appendCarry(nil, &carry{have: 12, acked: 3, frames: []lockstep.EncodedFrame{{Number: 10, Full: []byte{0}, FullBits: 1}, {Number: 11, Full: []byte{0}, FullBits: 1}}}))
	f.Add(appendCarry(nil, &carry{have: 1 << 20}))
	f.Add([]byte{kindEngine | typeFailover<<kindBits, 0xff})
	s, err := NewServer(Config{Secret: testSecret, NoWebRTC: true})
	if err != nil {
		f.Fatal(err)
	}
	cfg := lockstep.Config{Players: 2, Hz: 30}
	log := make([]lockstep.EncodedFrame, 10)
	for i := range log {
		log[i] = lockstep.EncodedFrame{Number: i, Full: []byte{0}, FullBits: 1} // nothing but made-up input
	}
	n := 0
	f.Fuzz(func(t *testing.T, b []byte) {
		n++
		name := fmt.Sprintf("r%d", n)
		r, err := s.RestoreRoom(name, cfg, RoomState{Start: time.Now(), Frames: log, Carry: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		done := make(chan [2]int, 1)
		r.host.Do(func() {
			r.takeCarry(0, b, time.Now())
			r.takeCarry(1, b, time.Now())
			r.restore.until = time.Now() // gather now
			r.gather(time.Now())
			done <- [2]int{r.room.NextFrame(), r.restore.carried}
		})
		got := <-done
		if got[0] < len(log) || got[0] > len(log)+4 || got[1] > 4 {
			t.Fatalf("after a carry of %x the log holds %d frames, %d carried", b, got[0], got[1])
		}
	})
}

package lockstep

import (
	"testing"
	"time"
)

// byteGame is a RollbackGame of one counter, allocating nothing itself.
type byteGame struct{ n, sum int64 }

func (g *byteGame) Step(f Frame) {
	g.n++
	for _, s := range f.Slots {
		for _, in := range s.Inputs {
			g.sum += int64(in[0])
		}
	}
}
func (g *byteGame) Hash() uint64                { return uint64(g.n ^ g.sum<<20) }
func (g *byteGame) SaveState(dst []byte) []byte { return append(dst, byte(g.n), byte(g.sum)) }
func (g *byteGame) LoadState(b []byte) error    { g.n, g.sum = int64(b[0]), int64(b[1]); return nil }

// TestRollbackNoAllocs: once its rings are warm, a tick of the prediction
// session allocates nothing, rollbacks included: the frames it confirms
// come from the network (allocated by the decoder, outside the tick here).
func TestRollbackNoAllocs(t *testing.T) {
	cfg := Config{Players: 2, Hz: 60, HashEvery: 15}.WithDefaults()
	c := newClient(cfg, 0)
	rb, err := NewRollback(c, RollbackConfig{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(100, 0)
	c.clockSet, c.minOffset, c.lead = true, float64(now.UnixNano())/1e6, 4
	// The room's frames, made beforehand: the other player changes its
	// input every 8 frames, so the guesses go wrong and roll back.
	frames := make([]Frame, 4000)
	for n := range frames {
		frames[n] = Frame{Number: n, Slots: []Slot{{Inputs: [][]byte{{1}}}, {Inputs: [][]byte{{byte(n / 8)}}}}}
	}
	g := &byteGame{}
	in := []byte{1}
	tick := func() {
		now = now.Add(time.Second / 60)
		for c.have+6 < rb.Present() { // the room's frames arrive 6 frames behind the present
			c.queue = append(c.queue, frames[c.have])
			c.have++
		}
		tk := rb.Update(now, in)
		rb.Run(g, tk.Requests)
		if k := len(c.unacked) - 2; k > 0 { // the room acknowledged all but the newest two
			for _, u := range c.unacked[:k] {
				c.spare = append(c.spare, u.data)
			}
			c.unacked = append(c.unacked[:0], c.unacked[k:]...)
		}
	}
	for range 600 {
		tick()
	}
	if a := testing.AllocsPerRun(600, tick); a > 0 {
		t.Errorf("%.2f allocations a tick", a)
	}
	if st := rb.Stats(); st.Rollbacks < 100 || st.Frames < 1000 {
		t.Fatalf("the session did not run: %+v", st)
	}
}

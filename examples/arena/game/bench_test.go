package game

import (
	"testing"

	"github.com/tongbu/tongbu/lockstep"
)

// BenchmarkStep10 measures one frame of a ten-player match in full swing:
// frames recorded from bot play are replayed, restarting from a snapshot
// at the end of the recording.
func BenchmarkStep10(b *testing.B) {
	m := newBotMatch(b, MaxPlayers, 1)
	for range 300 { // warm up: players spread out, shots in flight
		m.step(b)
	}
	start := m.g.Snapshot()
	frames := make([]lockstep.Frame, 1000)
	for i := range frames {
		frames[i] = m.step(b)
	}
	g, _ := New(MinPlayers, 0)
	if err := g.Restore(start); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%len(frames) == 0 && i > 0 {
			b.StopTimer()
			if err := g.Restore(start); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		if err := g.Step(frames[i%len(frames)]); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBot10 measures the ten bots' decisions for one frame.
func BenchmarkBot10(b *testing.B) {
	m := newBotMatch(b, MaxPlayers, 1)
	for range 300 {
		m.step(b)
	}
	b.ReportAllocs()
	for b.Loop() {
		for slot := range MaxPlayers {
			Bot(m.g, slot, &m.rands[slot])
		}
	}
}

// BenchmarkHash measures the state hash of a ten-player match.
func BenchmarkHash(b *testing.B) {
	m := newBotMatch(b, MaxPlayers, 1)
	for range 300 {
		m.step(b)
	}
	b.ReportAllocs()
	for b.Loop() {
		m.g.Hash()
	}
}

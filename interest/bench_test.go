package interest

import (
	"testing"
	"time"
	"unsafe"

	"github.com/tongbu/tongbu/codec"
)

// BenchmarkMoveUpdate encodes a moving character's update as the world
// does: a move command (source, destination offset, speed) with its ID and
// frame stamp, once per frame, reused for every observer. It reports the
// update's size in bits.
func BenchmarkMoveUpdate(b *testing.B) {
	w, _ := NewWorld(Config{}, time.Unix(0, 0), discard{})
	l := &w.lay
	var wr codec.Writer
	buf := make([]byte, 0, 64)
	bitsPer := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		wr.Reset(buf)
		src := Vec{int32(10000 + i%1000), 20000}
		writeTag(&wr, tagMove)
		l.writeID(&wr, ID(1+i%60000))
		l.writeStamp(&wr, 100, 101)
		l.writeMove(&wr, 3, false, src, src.Add(Vec{700, -300}), 40, 0)
		bitsPer = wr.Len()
	}
	b.ReportMetric(float64(bitsPer), "bits/op")
}

// BenchmarkLogicUpdate encodes a moving character's full logic data, as
// forced sync, discovery answers and state sync carry it.
func BenchmarkLogicUpdate(b *testing.B) {
	w, _ := NewWorld(Config{}, time.Unix(0, 0), discard{})
	l := &w.lay
	var wr codec.Writer
	buf := make([]byte, 0, 64)
	lg := Logic{Pos: Vec{10000, 20000}, Dest: Vec{10700, 19700}, Speed: 40, State: 3, Life: 90, Mana: 40, Rage: 10, Magic: 5}
	bitsPer := 0
	b.ReportAllocs()
	for b.Loop() {
		wr.Reset(buf)
		writeTag(&wr, tagLogic)
		l.writeID(&wr, 1234)
		l.writeLogic(&wr, Player, &lg, 1, nil)
		wr.WriteBits(3, epochBits)
		bitsPer = wr.Len()
	}
	b.ReportMetric(float64(bitsPer), "bits/op")
}

// BenchmarkPathHistory is lag compensation's cost on the server: the
// history takes an entry when an entity's path changes (never per frame),
// and an action's judgement asks a position a few frames back. It reports
// the history's bytes an entity.
func BenchmarkPathHistory(b *testing.B) {
	w, _ := NewWorld(Config{}, time.Unix(0, 0), discard{})
	const entities = 30000
	for i := range entities {
		p := Vec{int32(1000 + i%50000), 20000}
		w.Spawn(NPC, Logic{Pos: p, Dest: p}, Display{})
	}
	b.Run("record", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			id := ID(1 + (i*7919)%entities) // strided: another entity's history each time, as a frame's turns are
			w.recordPath(id, Vec{int32(i % 50000), 20000}, Vec{int32(i%50000 + 500), 20000}, 32, w.frame-i%3)
			if i%entities == entities-1 {
				w.frame++
			}
		}
		b.ReportMetric(float64(unsafe.Sizeof(pathLog{})), "bytes/entity")
	})
	b.Run("position", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			_, _ = w.PositionAt(ID(1+(i*7919)%entities), float64(w.frame)-4.25)
		}
	})
}

// BenchmarkSnapshot is a checkpoint's part in the world: AppendSnapshot
// of the seed world's density (4.5 NPCs a player, 60 players, all
// walking), beside one frame of the same world (tick_ns) for the ratio.
func BenchmarkSnapshot(b *testing.B) {
	start := time.Unix(0, 0)
	w, _ := NewWorld(Config{Width: 16, Height: 16, RegionSize: 1024}, start, discard{})
	for i := range 330 {
		kind := NPC
		if i%11 < 2 {
			kind = Player
		}
		p := Vec{int32(500 + i*47%15000), int32(500 + i*91%15000)}
		id, _ := w.Spawn(kind, Logic{Pos: p, Dest: p, Life: 100}, Display{Name: "npc"})
		if kind == Player {
			w.Join(id)
		}
		w.Move(id, p.Add(Vec{300, 200}), 30)
	}
	now := start
	tick := func() {
		now = now.Add(time.Second / 16)
		w.Tick(now)
	}
	for range 16 {
		tick()
	}
	t0 := time.Now()
	for range 64 {
		tick()
	}
	tickNs := float64(time.Since(t0).Nanoseconds()) / 64
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = w.AppendSnapshot(buf[:0])
	}
	b.ReportMetric(tickNs, "tick_ns")
	b.ReportMetric(float64(len(buf)), "bytes")
}

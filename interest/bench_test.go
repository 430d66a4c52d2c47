package interest

import (
	"testing"
	"time"

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
		l.writePos(&wr, src)
		l.writePath(&wr, src, src.Add(Vec{700, -300}), 40)
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
		bitsPer = wr.Len()
	}
	b.ReportMetric(float64(bitsPer), "bits/op")
}

package interest

import (
	"errors"
	"testing"
	"time"
)

// snapWorld is a world with standing, moving and despawned entities.
func snapWorld(t testing.TB, cfg Config) *World {
	t.Helper()
	w, err := NewWorld(cfg, time.Unix(0, 0), nopSender{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		p := Vec{X: int32(100 + i*37), Y: int32(200 + i*11)}
		lg := Logic{Pos: p, Dest: p, Life: uint8(i), Mana: 50, Magic: uint32(i * 3)}
		if i%3 == 0 {
			lg.Dest, lg.Speed = Vec{X: p.X + 300, Y: p.Y + 100}, 12
		}
		kind := NPC
		if i%5 == 0 {
			kind = Player
		}
		if _, err := w.Spawn(kind, lg, Display{Name: "e", Appearance: uint32(i % 4), Camp: uint8(i % 2)}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		w.Tick(time.Unix(0, 0).Add(time.Duration(i+1) * w.cfg.Period()))
	}
	w.Despawn(4)
	w.Despawn(9)
	w.SetDisplay(7, Display{Name: "renamed"})
	return w
}

func TestSnapshotRestores(t *testing.T) {
	cfg := Config{Width: 16, Height: 16, MaxEntities: 1024}
	src := snapWorld(t, cfg)
	snap := src.AppendSnapshot(nil)
	if f, err := SnapshotFrame(snap); err != nil || f != src.Frame() {
		t.Fatalf("SnapshotFrame = %d, %v; want %d", f, err, src.Frame())
	}
	dst, _ := NewWorld(cfg, time.Unix(0, 0), nopSender{})
	if err := dst.RestoreSnapshot(snap); err != nil {
		t.Fatal(err)
	}
	if dst.Frame() != src.Frame() || dst.Stats().Entities != src.Stats().Entities {
		t.Fatalf("restored frame %d with %d entities, want %d with %d", dst.Frame(), dst.Stats().Entities, src.Frame(), src.Stats().Entities)
	}
	// Both go on alike: the same positions frame by frame, the same IDs
	// for what spawns next (the freed ones first).
	for f := range 30 {
		now := time.Unix(0, 0).Add(time.Duration(src.Frame()+1) * cfg.WithDefaults().Period())
		src.Tick(now)
		dst.Tick(now)
		for id := ID(1); id < 45; id++ {
			a, okA := src.Logic(id)
			b, okB := dst.Logic(id)
			if a != b || okA != okB {
				t.Fatalf("frame +%d entity %d: %+v %v, restored %+v %v", f, id, a, okA, b, okB)
			}
		}
	}
	for range 3 {
		p := Vec{X: 50, Y: 50}
		a, err1 := src.Spawn(NPC, Logic{Pos: p, Dest: p}, Display{})
		b, err2 := dst.Spawn(NPC, Logic{Pos: p, Dest: p}, Display{})
		if a != b || err1 != nil || err2 != nil {
			t.Fatalf("next spawn: %d %v, restored %d %v", a, err1, b, err2)
		}
	}
	if dst.dispEnc(7).d.Name != "renamed" || dst.ent(7).dver != src.ent(7).dver {
		t.Errorf("display of 7: %+v v%d, want renamed v%d", dst.dispEnc(7).d, dst.ent(7).dver, src.ent(7).dver)
	}
}

func TestSnapshotRefuses(t *testing.T) {
	cfg := Config{Width: 16, Height: 16, MaxEntities: 1024}
	snap := snapWorld(t, cfg).AppendSnapshot(nil)
	other, _ := NewWorld(Config{Width: 32, Height: 16, MaxEntities: 1024}, time.Unix(0, 0), nopSender{})
	if err := other.RestoreSnapshot(snap); !errors.Is(err, ErrConfig) {
		t.Errorf("another configuration: %v, want ErrConfig", err)
	}
	used := snapWorld(t, cfg)
	if err := used.RestoreSnapshot(snap); !errors.Is(err, ErrConfig) {
		t.Errorf("a world in use: %v, want ErrConfig", err)
	}
	for _, cut := range []int{1, 5, len(snap) / 2, len(snap) - 1} {
		w, _ := NewWorld(cfg, time.Unix(0, 0), nopSender{})
		if err := w.RestoreSnapshot(snap[:cut]); !errors.Is(err, ErrMalformed) {
			t.Errorf("cut at %d: %v, want ErrMalformed", cut, err)
		}
		if w.Frame() != 0 || w.Stats().Entities != 0 {
			t.Errorf("cut at %d: the world took part of it", cut)
		}
	}
}

// FuzzRestoreSnapshot feeds snapshots that may come from anywhere on
// the cluster's store: a bad one is refused whole, a good one gives a
// world that ticks.
func FuzzRestoreSnapshot(f *testing.F) {
	cfg := Config{Width: 16, Height: 16, MaxEntities: 1024}
	f.Add(snapWorld(f, cfg).AppendSnapshot(nil))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		w, _ := NewWorld(cfg, time.Unix(0, 0), nopSender{})
		if err := w.RestoreSnapshot(b); err != nil {
			if w.Frame() != 0 || w.Stats().Entities != 0 {
				t.Fatal("a refused snapshot changed the world")
			}
			return
		}
		w.Tick(time.Unix(0, 0).Add(time.Duration(w.Frame()+2) * w.Config().Period()))
		if _, err := w.Spawn(NPC, Logic{Pos: Vec{X: 1, Y: 1}, Dest: Vec{X: 1, Y: 1}}, Display{}); err != nil && !errors.Is(err, ErrFull) {
			t.Fatal(err)
		}
	})
}

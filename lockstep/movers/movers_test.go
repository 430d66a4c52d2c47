package movers

import (
	"testing"

	"github.com/tongbu/tongbu/lockstep"
)

func frame(n int, ins ...[]byte) lockstep.Frame {
	f := lockstep.Frame{Number: n, Slots: make([]lockstep.Slot, len(ins))}
	for i, in := range ins {
		if in == nil {
			f.Slots[i].MadeUp = true
			continue
		}
		f.Slots[i].Inputs = [][]byte{in}
	}
	return f
}

func TestDeterministicAndSensitive(t *testing.T) {
	run := func(corruptAt int) []uint64 {
		g, err := New(3, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		if err != nil {
			t.Fatal(err)
		}
		var hs []uint64
		for n := range 2000 {
			g.Step(frame(n, []byte{byte(n), 40}, nil, []byte{byte(3 * n), byte(n % 64)}))
			if n == corruptAt {
				g.Corrupt(1)
			}
			hs = append(hs, g.Hash())
		}
		return hs
	}
	a, b, c := run(-1), run(-1), run(500)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("frame %d: two runs differ", i)
		}
		if (i >= 500) == (a[i] == c[i]) {
			t.Fatalf("frame %d: corrupted at 500, hashes equal %v", i, a[i] == c[i])
		}
	}
}

func TestNewRejects(t *testing.T) {
	if _, err := New(0, nil); err == nil {
		t.Fatal("0 players accepted")
	}
	if _, err := New(2, []byte{1}); err == nil {
		t.Fatal("1-byte params accepted")
	}
}

// TestSnapshotRestore: a game restored from a snapshot mid-match steps and
// hashes as the original from there on; garbage is refused and changes
// nothing.
func TestSnapshotRestore(t *testing.T) {
	a, _ := New(4, []byte{9, 9, 9, 9, 1, 2, 3, 4})
	in := func(n int) lockstep.Frame {
		return frame(n, []byte{byte(n), 30}, nil, []byte{byte(5 * n), 50}, []byte{byte(n / 3), byte(n % 40)})
	}
	for n := range 700 {
		a.Step(in(n))
	}
	snap := a.Snapshot()
	b, _ := New(4, nil)
	if err := b.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if a.Hash() != b.Hash() {
		t.Fatal("restored hash differs")
	}
	for n := 700; n < 1500; n++ {
		a.Step(in(n))
		b.Step(in(n))
		if a.Hash() != b.Hash() {
			t.Fatalf("frame %d: restored game diverged", n)
		}
	}
	before := b.Hash()
	for _, bad := range [][]byte{nil, {1}, snap[:len(snap)-1], append([]byte{2}, snap[1:]...)} {
		if err := b.Restore(bad); err == nil {
			t.Fatalf("restored from %d bytes of garbage", len(bad))
		}
	}
	other, _ := New(3, nil)
	if err := other.Restore(snap); err == nil {
		t.Fatal("a 4-player snapshot restored into a 3-player game")
	}
	if b.Hash() != before {
		t.Fatal("a refused restore changed the state")
	}
}

func FuzzRestore(f *testing.F) {
	g, _ := New(2, nil)
	f.Add(g.Snapshot())
	f.Add([]byte{1, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		g, _ := New(2, nil)
		if err := g.Restore(b); err != nil {
			return
		}
		if again := g.Snapshot(); string(again) != string(b) {
			t.Fatalf("snapshot of a restored game differs")
		}
	})
}

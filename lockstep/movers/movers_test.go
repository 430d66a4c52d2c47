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

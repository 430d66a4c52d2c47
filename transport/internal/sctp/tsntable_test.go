package sctp

import (
	"math/rand/v2"
	"testing"
)

// TestTSNTable runs random insertions, lookups and removals against a
// map, with TSNs packed as a hostile peer would pick them (a run, every
// 1024th, random within the window), and checks that no operation takes
// long probes.
func TestTSNTable(t *testing.T) {
	for _, tc := range []struct {
		name string
		tsn  func(r *rand.Rand, i int) uint32
	}{
		{"run", func(_ *rand.Rand, i int) uint32 { return 1000 + uint32(i%600) }},
		{"stride 1024", func(_ *rand.Rand, i int) uint32 { return uint32(i%600) * 1024 }},
		{"random", func(r *rand.Rand, _ int) uint32 { return 4e9 + r.Uint32N(9000) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			var tab tsnTable
			tab.init(tsnTableMax)
			model := map[uint32]int32{}
			worst := 0
			for i := range 200000 {
				x := tc.tsn(r, i)
				_, have := model[x]
				switch {
				case !have && len(model) < maxHeld+heldReserve:
					worst = max(worst, tab.put(x, int32(i)))
					model[x] = int32(i)
				case have:
					worst = max(worst, tab.del(x))
					delete(model, x)
				}
				y := tc.tsn(r, r.IntN(1000))
				got, ok, n := tab.get(y)
				worst = max(worst, n)
				if want, wok := model[y]; ok != wok || ok && got != want {
					t.Fatalf("op %d: get %d = %d %v, want %d %v", i, y, got, ok, want, wok)
				}
			}
			for x, want := range model {
				if got, ok, _ := tab.get(x); !ok || got != want {
					t.Fatalf("at the end: get %d = %d %v, want %d", x, got, ok, want)
				}
			}
			t.Logf("longest probe %d slots", worst)
			if worst > 64 {
				t.Errorf("a probe of %d slots", worst)
			}
		})
	}
}

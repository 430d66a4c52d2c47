package replay_test

import (
	"slices"
	"testing"

	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/replay"
)

func TestGames(t *testing.T) {
	f := func(players int, params []byte) (lockstep.Simulation, error) { return nil, nil }
	var g replay.Games
	if err := g.Register("test-registry", f); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Lookup("test-registry"); !ok {
		t.Fatal("a registered game is not found")
	}
	if _, ok := g.Lookup("test-unknown"); ok {
		t.Fatal("an unknown game is found")
	}
	if !slices.Equal(g.Names(), []string{"test-registry"}) {
		t.Fatalf("Names() = %v", g.Names())
	}
	for name, reg := range map[string]func() error{
		"twice":      func() error { return g.Register("test-registry", f) },
		"no name":    func() error { return g.Register("", f) },
		"no factory": func() error { return g.Register("test-nil", nil) },
	} {
		if err := reg(); err == nil {
			t.Errorf("%s: registered", name)
		}
	}
	// Each program has its own: another knows nothing of these, nor does
	// none at all.
	var other replay.Games
	var none *replay.Games
	if _, ok := other.Lookup("test-registry"); ok || len(other.Names()) != 0 || len(none.Names()) != 0 {
		t.Fatal("a second registry knows the first's games")
	}
	if _, ok := none.Lookup("test-registry"); ok {
		t.Fatal("a nil registry knows a game")
	}
}

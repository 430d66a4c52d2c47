package lockstep

import (
	"slices"
	"testing"
)

func TestRegisterGame(t *testing.T) {
	f := func(players int, params []byte) (Simulation, error) { return nil, nil }
	RegisterGame("test-registry", f)
	if _, ok := LookupGame("test-registry"); !ok {
		t.Fatal("a registered game is not found")
	}
	if _, ok := LookupGame("test-unknown"); ok {
		t.Fatal("an unknown game is found")
	}
	if !slices.Contains(Games(), "test-registry") {
		t.Fatalf("Games() = %v", Games())
	}
	for name, reg := range map[string]func(){
		"twice":      func() { RegisterGame("test-registry", f) },
		"no name":    func() { RegisterGame("", f) },
		"no factory": func() { RegisterGame("test-nil", nil) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			reg()
		}()
	}
}

package replay

import (
	"errors"
	"fmt"
	"slices"

	"github.com/tongbu/tongbu/lockstep"
)

// A GameFactory makes a fresh simulation of a game for players players,
// from the parameters a replay's header carries (Header.Params). It
// refuses parameters it cannot use with an error.
type GameFactory func(players int, params []byte) (lockstep.Simulation, error)

// Games names the games a program can re-run, by the name their replays
// carry (Header.Game): the program registers the ones it chooses, each
// game's package offering what to register. The zero value knows no game
// and is ready to use; so does a nil *Games. Register before the
// registry is shared: it takes no lock.
type Games struct {
	byName map[string]GameFactory
}

// Register makes a game known by name. It refuses an empty name, a nil
// factory, and a name registered already.
func (g *Games) Register(name string, f GameFactory) error {
	switch {
	case name == "":
		return errors.New("replay: a game needs a name")
	case f == nil:
		return fmt.Errorf("replay: game %q has no factory", name)
	}
	if _, dup := g.byName[name]; dup {
		return fmt.Errorf("replay: game %q registered twice", name)
	}
	if g.byName == nil {
		g.byName = map[string]GameFactory{}
	}
	g.byName[name] = f
	return nil
}

// Lookup returns the factory registered for name, if any.
func (g *Games) Lookup(name string) (GameFactory, bool) {
	if g == nil {
		return nil, false
	}
	f, ok := g.byName[name]
	return f, ok
}

// Names lists the names of the registered games, sorted.
func (g *Games) Names() []string {
	if g == nil {
		return nil
	}
	names := make([]string, 0, len(g.byName))
	for n := range g.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

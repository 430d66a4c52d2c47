package lockstep

import (
	"fmt"
	"slices"
	"sync"
)

// A GameFactory makes a fresh simulation of a game for players players,
// from the parameters a replay's header carries (ReplayHeader.Params). It
// refuses parameters it cannot use with an error.
type GameFactory func(players int, params []byte) (Simulation, error)

var games struct {
	sync.RWMutex
	byName map[string]GameFactory
}

// RegisterGame makes a game known by the name its replays carry
// (ReplayHeader.Game), so that tools linked with the game's package, such
// as `tongbu replay verify`, can re-run its replays. A game package calls
// it from an init function. Registering a name twice, or an empty name or a
// nil factory, is a programming error and panics.
func RegisterGame(name string, f GameFactory) {
	if name == "" || f == nil {
		panic("lockstep: RegisterGame needs a name and a factory")
	}
	games.Lock()
	defer games.Unlock()
	if _, dup := games.byName[name]; dup {
		panic(fmt.Sprintf("lockstep: game %q registered twice", name))
	}
	if games.byName == nil {
		games.byName = map[string]GameFactory{}
	}
	games.byName[name] = f
}

// LookupGame returns the factory registered for name, if any.
func LookupGame(name string) (GameFactory, bool) {
	games.RLock()
	defer games.RUnlock()
	f, ok := games.byName[name]
	return f, ok
}

// Games lists the names of the registered games, sorted.
func Games() []string {
	games.RLock()
	defer games.RUnlock()
	names := make([]string, 0, len(games.byName))
	for n := range games.byName {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

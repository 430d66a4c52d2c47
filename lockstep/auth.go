package lockstep

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// Authoritative state bounds (SPEC.md section 7.2, view bodies).
const (
	// MaxChangeBytes bounds one state change.
	MaxChangeBytes = 255
	// MaxViewBytes bounds one player's view of one frame on the wire, so
	// that a frame fits a packet; changes beyond it are left out and
	// counted (RoomStats.ViewOverflow).
	MaxViewBytes   = 960
	maxViewChanges = 1023
	maxEntity      = 1<<32 - 1
)

// StateChange is one entity's change in one frame of an authoritative
// room: the entity and bytes the game encodes (a new state or a delta;
// the client applies a frame's changes in order).
type StateChange struct {
	Entity uint32
	Data   []byte
}

// Authority is the Simulation of an authoritative room
// (Config.Authoritative): the room runs it, and sends each
// player, instead of the inputs, the state changes of the entities the
// player may see. Only the room knows the whole state, which ends
// fog-of-war cheating.
type Authority interface {
	Simulation
	// Changes returns the state changes the last Step made, valid until
	// the next Step.
	Changes() []StateChange
	// Visible reports whether player may see entity after the last Step:
	// the room sends the player a change of the entity only then. When an
	// entity comes into a player's sight, the game puts its whole state
	// in that frame's changes.
	Visible(player int, entity uint32) bool
}

// viewFrame is one player's view of one frame, encoded once.
type viewFrame struct {
	body []byte
	bits int
}

// authState is an authoritative room's per-player view log.
type authState struct {
	sim   Authority
	views [][]viewFrame // by player, by frame
	w     codec.Writer
	buf   []byte
}

func newAuthState(cfg Config, sim Simulation) (*authState, error) {
	a, ok := sim.(Authority)
	if !ok {
		return nil, fmt.Errorf("%w: an authoritative room's simulation (%T) must implement Authority", ErrConfig, sim)
	}
	return &authState{sim: a, views: make([][]viewFrame, cfg.Players)}, nil
}

// encodeFrame encodes every player's view of the frame the simulation
// just ran, keeping the views in mem. It returns how many changes it left
// out for being over the view's bounds.
func (a *authState) encodeFrame(mem *arena) (overflow uint64) {
	changes := a.sim.Changes()
	for p := range a.views {
		w := &a.w
		w.Reset(a.buf[:0])
		w.WriteUint(0, maxViewChanges) // the count, patched below
		sent := 0
		for _, ch := range changes {
			if !a.sim.Visible(p, ch.Entity) {
				continue // what the player may not see never leaves the room
			}
			if sent == maxViewChanges || len(ch.Data) > MaxChangeBytes || w.Len()+8*(len(ch.Data)+7) > MaxViewBytes*8 {
				overflow++
				continue
			}
			w.WriteUvarint(uint64(ch.Entity))
			w.WriteBytes(ch.Data, MaxChangeBytes)
			sent++
		}
		b := w.Bytes()
		patchUint(b, 0, uint64(sent), maxViewChanges)
		a.views[p] = append(a.views[p], viewFrame{body: mem.keep(b), bits: w.Len()})
		a.buf = b[:0]
	}
	return overflow
}

// view returns player id's view of frame n as it goes on the wire.
func (a *authState) view(id, n int) ([]byte, int) {
	v := &a.views[id][n]
	return v.body, v.bits
}

// frames returns how many views, from frame 0, are encoded for player id.
func (a *authState) frames(id int) int { return len(a.views[id]) }

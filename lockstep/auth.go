package lockstep

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// Authoritative state bounds (SPEC.md section 7.2, view bodies).
const (
	// MaxChangeBytes bounds one state change.
	MaxChangeBytes = 255
	// MaxViewBytes bounds the part of one player's view of one frame that
	// rides in the frames packet, so that a frame fits a packet. A larger
	// view goes on in parts on the reliable channel (up to MaxViewParts of
	// ViewPartBytes), and the client applies the frame once it has them
	// all; changes beyond even those are left out, counted
	// (RoomStats.ViewOverflow, EventViewCut) and the frame says so
	// (Frame.ViewCut).
	MaxViewBytes = 960
	// ViewPartBytes bounds one further part of a view.
	ViewPartBytes = 8 << 10
	// MaxViewParts bounds the further parts of one view: with its head, a
	// view holds up to about 512 KiB of changes.
	MaxViewParts   = 64
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

// viewFrame is one player's view of one frame, encoded once: its head,
// in the frames packets, and its further parts, lifecycle messages.
type viewFrame struct {
	body  []byte
	bits  int
	parts [][]byte
}

// authState is an authoritative room's per-player view log.
type authState struct {
	sim   Authority
	views [][]viewFrame // by player, by frame
	w     codec.Writer
	buf   []byte
	vis   []StateChange // the changes one player may see, reused
}

func newAuthState(cfg Config, sim Simulation) (*authState, error) {
	a, ok := sim.(Authority)
	if !ok {
		return nil, fmt.Errorf("%w: an authoritative room's simulation (%T) must implement Authority", ErrConfig, sim)
	}
	return &authState{sim: a, views: make([][]viewFrame, cfg.Players)}, nil
}

// changeBits is what one change takes in a view body.
func changeBits(ch StateChange) int {
	return codec.UvarintBits(uint64(ch.Entity)) + 8 + 8*len(ch.Data)
}

// encodeFrame encodes every player's view of the frame the simulation
// just ran, keeping the views in mem, and returns the players whose view
// was cut (changes left out for being over the bounds), a bit each, and
// how many changes were left out in all.
func (a *authState) encodeFrame(mem *arena, n int) (cut uint64, overflow uint64) {
	changes := a.sim.Changes()
	for p := range a.views {
		a.vis = a.vis[:0]
		dropped := 0
		for _, ch := range changes {
			switch {
			case !a.sim.Visible(p, ch.Entity):
				// what the player may not see never leaves the room
			case len(ch.Data) > MaxChangeBytes:
				dropped++
			default:
				a.vis = append(a.vis, ch)
			}
		}
		v, left := a.encodeView(mem, n, a.vis)
		dropped += left
		if dropped > 0 {
			overflow += uint64(dropped)
			cut |= 1 << p
		}
		a.views[p] = append(a.views[p], v)
	}
	return cut, overflow
}

// encodeView encodes one player's view of frame n: as many changes as fit
// the head, then parts of ViewPartBytes. It returns how many changes were
// left out.
func (a *authState) encodeView(mem *arena, n int, vis []StateChange) (viewFrame, int) {
	// The head: what fits MaxViewBytes with its header.
	budget := MaxViewBytes*8 - 1 - 1 - 7 - 10
	k := 0
	for used := 0; k < len(vis) && k < maxViewChanges; k++ {
		if used += changeBits(vis[k]); used > budget {
			break
		}
	}
	// The parts: the rest, each up to ViewPartBytes.
	var parts [][]StateChange
	rest := vis[k:]
	for len(rest) > 0 && len(parts) < MaxViewParts {
		j, used := 0, 0
		for j < len(rest) && j < maxViewChanges {
			if used += changeBits(rest[j]); used > (ViewPartBytes-16)*8 {
				break
			}
			j++
		}
		parts = append(parts, rest[:j])
		rest = rest[j:]
	}
	left := len(rest)
	w := &a.w
	w.Reset(a.buf[:0])
	split := len(parts) > 0 || left > 0
	w.WriteBool(split)
	if split {
		w.WriteBool(left > 0)
		w.WriteUint(uint64(len(parts)), MaxViewParts)
	}
	writeChanges(w, vis[:k])
	v := viewFrame{body: mem.keep(w.Bytes()), bits: w.Len()}
	for i, part := range parts {
		w.Reset(w.Bytes()[:0])
		writeLife(w, lifeMore)
		w.WriteUvarint(lifeViewPart)
		w.WriteUvarint(uint64(n))
		w.WriteUint(uint64(i+1), MaxViewParts)
		writeChanges(w, part)
		v.parts = append(v.parts, mem.keep(w.Bytes()))
	}
	a.buf = w.Bytes()[:0]
	return v, left
}

// writeChanges writes a count and the changes.
func writeChanges(w *codec.Writer, chs []StateChange) {
	w.WriteUint(uint64(len(chs)), maxViewChanges)
	for _, ch := range chs {
		w.WriteUvarint(uint64(ch.Entity))
		w.WriteBytes(ch.Data, MaxChangeBytes)
	}
}

// view returns player id's view of frame n as it goes on the wire.
func (a *authState) view(id, n int) ([]byte, int) {
	v := &a.views[id][n]
	return v.body, v.bits
}

// viewParts returns the further parts of player id's view of frame n.
func (a *authState) viewParts(id, n int) [][]byte { return a.views[id][n].parts }

// frames returns how many views, from frame 0, are encoded for player id.
func (a *authState) frames(id int) int { return len(a.views[id]) }

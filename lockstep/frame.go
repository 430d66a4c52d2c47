package lockstep

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/tongbu/tongbu/codec"
)

// Slot is what one player contributed to one frame.
type Slot struct {
	// MadeUp is set when the player sent nothing in time and the room made
	// its input up according to the room's Fill.
	MadeUp bool
	// Gone is set, with MadeUp, when the player was not in the match for
	// the frame (it left, or its connection was dropped), rather than late:
	// a game hands a gone player's character to its own deterministic bot,
	// which every client, the server's simulation and a replay run alike
	// from this flag (a takeover), and leaves a late one as the
	// Fill says.
	Gone bool
	// Inputs are the player's inputs for the frame, in the order the room
	// received them; nil when made up.
	Inputs [][]byte
}

// Frame is one frame as cut by the room: every player's input for one turn.
type Frame struct {
	Number int
	Slots  []Slot
	// Changes, in an authoritative room (Config.Authoritative), are the
	// state changes of the frame that the player may see; Slots is nil.
	// A view too large for one packet comes in parts, and the frame is
	// handed to the game once it holds them all.
	Changes []StateChange
	// ViewCut, in an authoritative room, says that Changes lacks some of
	// the frame's changes: the view was over what the room sends
	// (MaxViewBytes and MaxViewParts parts of ViewPartBytes) or over what
	// the client holds while it waits for a view's parts
	// (MaxViewHoldBytes). The game's state is then incomplete: a game
	// resynchronises it (its own full state in a later frame), or ends.
	ViewCut bool
	// more is the further parts of the view still to come (decodeViewBody).
	more int
}

// sameInputs reports whether two slots carry the same real inputs.
func sameInputs(a, b *Slot) bool {
	if a.MadeUp || b.MadeUp || len(a.Inputs) != len(b.Inputs) {
		return false
	}
	for i := range a.Inputs {
		if !bytes.Equal(a.Inputs[i], b.Inputs[i]) {
			return false
		}
	}
	return true
}

// Slot kinds in a frame body.
const (
	slotMadeUp   = 0
	slotSame     = 1 // the same inputs as the previous frame in the packet
	slotOne      = 2
	slotSeveral  = 3
	slotKindBits = 2
	// goneCount, in the count of a "several" slot (which holds 2 to
	// MaxInputsPerFrame inputs, counts 0 to 14 in 4 bits), marks a gone
	// player's made-up slot instead.
	goneCount = MaxInputsPerFrame - 1
)

// encodeFrameBody writes the slots of f. prev, when not nil, is the frame
// before f in the same packet: a slot that repeats it costs two bits. A
// frame in which every input is made up, and no player is gone, costs one
// bit; a gone player's slot costs six.
func encodeFrameBody(w *codec.Writer, f *Frame, prev *Frame) {
	full := hasReal(f) || anyGone(f)
	w.WriteBool(full)
	if !full {
		return
	}
	for i := range f.Slots {
		s := &f.Slots[i]
		switch {
		case s.MadeUp && s.Gone:
			// A gone player's slot: "several" with the count no input
			// list can have.
			w.WriteBits(slotSeveral, slotKindBits)
			w.WriteUint(goneCount, goneCount)
		case s.MadeUp:
			w.WriteBits(slotMadeUp, slotKindBits)
		case prev != nil && sameInputs(s, &prev.Slots[i]):
			w.WriteBits(slotSame, slotKindBits)
		default:
			writeSlot(w, s)
		}
	}
}

// applyFill applies a room's Fill to the made-up slots of one frame, as
// every side that runs frames must, in frame order: prev holds each slot's
// last real input and is kept up to date; a made-up slot under FillRepeat
// gets that input. With rep the input goes in rep's array for the slot
// (valid until the next frame), else in a new slice.
func applyFill(slots []Slot, prev [][]byte, fill Fill, rep [][1][]byte) {
	for i := range slots {
		s := &slots[i]
		if !s.MadeUp {
			prev[i] = nil
			if n := len(s.Inputs); n > 0 {
				prev[i] = s.Inputs[n-1]
			}
			continue
		}
		if fill != FillRepeat || prev[i] == nil {
			continue
		}
		if rep != nil {
			rep[i][0] = prev[i]
			s.Inputs = rep[i][:]
		} else {
			s.Inputs = [][]byte{prev[i]}
		}
	}
}

// Filler resolves the made-up inputs of a match's frames as clients do,
// by the room's Fill: under FillRepeat, a player's made-up slot carries its
// previous real input. Give it every frame, in order from the first.
type Filler struct {
	fill Fill
	prev [][]byte // each slot's last real input
}

// NewFiller returns a Filler for frames of a room with cfg.
func NewFiller(cfg Config) *Filler {
	return &Filler{fill: cfg.Fill, prev: make([][]byte, cfg.Players)}
}

// Apply resolves the made-up slots of the next frame, f.
func (fl *Filler) Apply(f *Frame) { applyFill(f.Slots, fl.prev, fl.fill, nil) }

// anyGone reports whether any slot of f is a gone player's.
func anyGone(f *Frame) bool {
	for i := range f.Slots {
		if f.Slots[i].Gone {
			return true
		}
	}
	return false
}

// hasReal reports whether any slot of f holds real inputs.
func hasReal(f *Frame) bool {
	for i := range f.Slots {
		if !f.Slots[i].MadeUp {
			return true
		}
	}
	return false
}

// writeSlot writes a slot with real inputs.
func writeSlot(w *codec.Writer, s *Slot) {
	if len(s.Inputs) == 1 {
		w.WriteBits(slotOne, slotKindBits)
		w.WriteBytes(s.Inputs[0], MaxInputBytes)
		return
	}
	w.WriteBits(slotSeveral, slotKindBits)
	w.WriteUint(uint64(len(s.Inputs)-2), goneCount) // the same 4 bits as uint[0, 14]
	for _, in := range s.Inputs {
		w.WriteBytes(in, MaxInputBytes)
	}
}

// authPlayers, passed to the frame decoders as the player count, selects
// view bodies: the frames of an authoritative room.
const authPlayers = -1

// decodeBody reads a frame body: inputs for players slots, or a view
// when players is authPlayers.
func decodeBody(r *codec.Reader, n, players int, prev *Frame, a *arena) (Frame, error) {
	if players == authPlayers {
		return decodeViewBody(r, n)
	}
	return readFrame(r, n, players, prev, a)
}

// ReadFrame reads the body of frame number n of a match of players
// players, as the room encodes it (EncodedFrame; SPEC.md section 7.2): in
// full, or relative to prev, the frame before, when prev is not nil. A
// reader of replays decodes a recorded match with it; a made-up input
// comes back made up, to be resolved as clients do (Filler). It returns an
// error wrapping ErrMalformed for bits that are no frame body.
func ReadFrame(r *codec.Reader, n, players int, prev *Frame) (Frame, error) {
	return readFrame(r, n, players, prev, nil)
}

// readFrame is ReadFrame, the frame's memory cut from a when it is not
// nil: a client's frames share a few allocations every 64 frames rather
// than three a frame (2,000 bots in one process decode 30,000 frames a
// second; a browser's collector is slower than the server's). A client
// keeps no match, so its slots' and input lists' slabs stay the first
// size (64 frames), and its bytes' chunks grow to arenaChunk.
func readFrame(r *codec.Reader, n, players int, prev *Frame, a *arena) (Frame, error) {
	f := Frame{Number: n}
	if a != nil {
		f.Slots = a.slots(players, 0)
	} else {
		f.Slots = make([]Slot, players)
	}
	if !r.ReadBool() {
		for i := range f.Slots {
			f.Slots[i].MadeUp = true
		}
		return f, r.Err()
	}
	b := frameBytes{a: a}
	for i := range f.Slots {
		s := &f.Slots[i]
		switch r.ReadBits(slotKindBits) {
		case slotMadeUp:
			s.MadeUp = true
		case slotSame:
			if prev == nil || prev.Slots[i].MadeUp {
				return f, fmt.Errorf("%w: frame %d slot %d repeats a frame not in the packet", ErrMalformed, n, i)
			}
			s.Inputs = prev.Slots[i].Inputs
		case slotOne:
			s.Inputs = b.inputs(r, 1)
		case slotSeveral:
			c := r.ReadUint(goneCount)
			if c == goneCount {
				s.MadeUp, s.Gone = true, true
				break
			}
			k := int(c) + 2
			if r.Err() != nil {
				break
			}
			s.Inputs = b.inputs(r, k) // k is at most MaxInputsPerFrame
		}
		if err := r.Err(); err != nil {
			return f, fmt.Errorf("%w: frame %d slot %d: %w", ErrMalformed, n, i, err)
		}
	}
	return f, nil
}

// frameBytes holds a frame's inputs as readFrame reads them: their
// slices and bytes share an allocation or two a frame, not two an input,
// or are cut from an arena. A slice handed out is never written again:
// when a backing array grows, the inputs read before keep the old one.
type frameBytes struct {
	ins  [][]byte
	data []byte
	a    *arena // nil: the frame's own allocations
}

// inputs reads a slot's k inputs.
func (b *frameBytes) inputs(r *codec.Reader, k int) [][]byte {
	if b.a != nil {
		ins := b.a.inputSlice(k, 0)
		for i := range ins {
			ins[i] = b.a.read(r, MaxInputBytes)
		}
		return ins
	}
	if b.ins == nil {
		b.ins = make([][]byte, 0, max(k, frameInputsHint))
		b.data = make([]byte, 0, frameBytesHint)
	}
	at := len(b.ins)
	for range k {
		start := len(b.data)
		b.data = r.ReadBytes(b.data, MaxInputBytes)
		b.ins = append(b.ins, b.data[start:len(b.data):len(b.data)])
	}
	return b.ins[at:len(b.ins):len(b.ins)]
}

// A frame's first allocations for its inputs: room for this many, and
// bytes (a full room of 10 players' few-byte inputs fits; more grows).
const (
	frameInputsHint = 16
	frameBytesHint  = 64
)

// decodeViewBody reads one frame of an authoritative room: the head of
// its view, which says how many further parts follow.
func decodeViewBody(r *codec.Reader, n int) (Frame, error) {
	f := Frame{Number: n}
	if r.ReadBool() { // split or cut
		f.ViewCut = r.ReadBool()
		f.more = int(r.ReadUint(MaxViewParts))
	}
	return f, readChanges(r, &f)
}

// readChanges reads a count and the changes into f.Changes.
func readChanges(r *codec.Reader, f *Frame) error {
	n := f.Number
	k := int(r.ReadUint(maxViewChanges))
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: frame %d view: %w", ErrMalformed, n, err)
	}
	if k > 0 {
		// Room for what the packet can hold (a change takes a byte or
		// more), not for what the count claims.
		f.Changes = slices.Grow(f.Changes, min(k, 1+r.Remaining()/8))
	}
	for i := range k {
		e := r.ReadUvarint()
		data := r.ReadBytes(nil, MaxChangeBytes)
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: frame %d change %d: %w", ErrMalformed, n, i, err)
		}
		if e > maxEntity {
			return fmt.Errorf("%w: frame %d change %d: entity %d", ErrMalformed, n, i, e)
		}
		f.Changes = append(f.Changes, StateChange{Entity: uint32(e), Data: data})
	}
	return nil
}

package interest

// The uplink packet (SPEC.md §8.2): a client's commands, its
// acknowledgements and its requests.

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// command is one uplink command: a player's move, jump, skill or
// game-defined command, stamped with the frame it happened at.
type command struct {
	tag    int
	frame  int
	src    Vec // move: where the player was at frame
	dest   Vec
	speed  int32
	skill  uint16
	target ID
	ctag   uint8
	data   []byte
	// view is, for a jump, skill or custom command, how far behind frame
	// the player saw the others when it acted, in 1/viewSteps frames
	// (Client.RenderFrame; World.OnAction's Action.View).
	view int
	// replay marks a move the client replayed after a correction voided
	// it: it is not replayed twice. Not on the wire.
	replay bool
}

// viewSteps is how finely an action's view is sent: a quarter frame.
// maxViewBack bounds it: 64 frames, 4 s at 16 Hz.
const (
	viewSteps   = 4
	maxViewBack = 255
)

func (l *layout) writeCommand(w *codec.Writer, c *command) {
	w.WriteBits(uint64(c.tag), cmdBits)
	w.WriteBits(uint64(c.frame), frameBits)
	switch c.tag {
	case cmdMove:
		l.writePos(w, c.src)
		l.writePath(w, c.src, c.dest, c.speed)
	case cmdSkill:
		w.WriteBits(uint64(c.skill), 16)
		w.WriteBool(c.target != 0)
		if c.target != 0 {
			l.writeID(w, c.target)
		}
	case cmdCustom:
		w.WriteBits(uint64(c.ctag), 8)
		w.WriteBytes(c.data, l.cfg.MaxCustom)
	}
	if c.tag != cmdMove {
		w.WriteBits(uint64(c.view), 8)
	}
}

func (l *layout) readCommand(r *codec.Reader, c *command, ref int, scratch []byte) []byte {
	c.tag = int(r.ReadBits(cmdBits))
	c.frame = unwrap(r.ReadBits(frameBits), ref)
	c.target, c.data = 0, nil
	switch c.tag {
	case cmdMove: // off-map positions are the world's to judge
		c.src = l.readRawPos(r)
		c.dest, c.speed = l.readRawPath(r, c.src)
	case cmdJump:
	case cmdSkill:
		c.skill = uint16(r.ReadBits(16))
		if r.ReadBool() {
			c.target = l.readID(r)
		}
	case cmdCustom:
		c.ctag = uint8(r.ReadBits(8))
		n := len(scratch)
		scratch = r.ReadBytes(scratch, l.cfg.MaxCustom)
		c.data = scratch[n:len(scratch):len(scratch)]
	default:
		r.Fail(fmt.Errorf("%w: command tag %d", ErrMalformed, c.tag))
	}
	c.view = 0
	if c.tag != cmdMove {
		c.view = int(r.ReadBits(8))
	}
	return scratch
}

// uplink is a client's packet: which downlink packets it holds, its
// unacknowledged commands, and its discovery and display requests.
type uplink struct {
	hasAck   bool
	ackSeq   int    // newest downlink packet received
	ackMask  uint32 // bit i: packet ackSeq-1-i received
	firstSeq uint16 // sequence number of cmds[0]; the rest follow
	cmds     []command
	discover []uint32 // sorted IDs
	display  []uint32 // sorted IDs
	groups   []gkey   // field groups asked for (Client.RequestGroup); in a world with Config.Groups only
	scratch  []byte
}

// maxUpGroups bounds the group requests of one uplink packet.
const maxUpGroups = 16

func (u *uplink) encode(l *layout, w *codec.Writer) {
	w.WriteBits(kindUp, kindBits)
	w.WriteBool(u.hasAck)
	if u.hasAck {
		w.WriteBits(uint64(u.ackSeq), seqBits)
		w.WriteBits(uint64(u.ackMask), ackMaskBits)
	}
	w.WriteUint(uint64(len(u.cmds)), maxUpCommands)
	if len(u.cmds) > 0 {
		w.WriteBits(uint64(u.firstSeq), 16)
		for i := range u.cmds {
			l.writeCommand(w, &u.cmds[i])
		}
	}
	w.WriteIDs(u.discover, maxUpDiscover)
	w.WriteIDs(u.display, maxUpDisplay)
	if len(l.cfg.Groups) > 0 {
		w.WriteUint(uint64(len(u.groups)), maxUpGroups)
		for _, k := range u.groups {
			l.writeID(w, k.id)
			w.WriteUint(uint64(k.g), uint64(len(l.cfg.Groups)-1))
		}
	}
}

// decode reads an uplink packet; ref is the world's frame, for unwrapping
// command stamps. Slices are reused from u.
func (u *uplink) decode(l *layout, b []byte, ref int) error {
	r := codec.NewReader(b)
	if k := r.ReadBits(kindBits); k != kindUp {
		return fmt.Errorf("%w: packet kind %d, want uplink", ErrMalformed, k)
	}
	u.hasAck = r.ReadBool()
	if u.hasAck {
		u.ackSeq = int(r.ReadBits(seqBits))
		u.ackMask = uint32(r.ReadBits(ackMaskBits))
	}
	n := int(r.ReadUint(maxUpCommands))
	u.cmds, u.scratch = u.cmds[:0], u.scratch[:0]
	if n > 0 {
		u.firstSeq = uint16(r.ReadBits(16))
		for i := 0; i < n && r.Err() == nil; i++ {
			u.cmds = append(u.cmds, command{})
			u.scratch = l.readCommand(r, &u.cmds[i], ref, u.scratch)
		}
	}
	u.discover = r.ReadIDs(u.discover[:0], maxUpDiscover)
	u.display = r.ReadIDs(u.display[:0], maxUpDisplay)
	u.groups = u.groups[:0]
	if len(l.cfg.Groups) > 0 {
		n := int(r.ReadUint(maxUpGroups))
		for i := 0; i < n && r.Err() == nil; i++ {
			id := l.readID(r)
			u.groups = append(u.groups, gkey{id, int(r.ReadUint(uint64(len(l.cfg.Groups) - 1)))})
		}
	}
	for _, id := range u.discover {
		if id == 0 || int(id) >= l.cfg.MaxEntities {
			r.Fail(fmt.Errorf("%w: entity id %d", ErrMalformed, id))
		}
	}
	for _, id := range u.display {
		if id == 0 || int(id) >= l.cfg.MaxEntities {
			r.Fail(fmt.Errorf("%w: entity id %d", ErrMalformed, id))
		}
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

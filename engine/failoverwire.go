package engine

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep"
)

// Failover messages (type 6, SPEC.md §9.6): a room's word to its clients
// of where its match goes on if its server falls silent, and a client's
// carry of the frames it holds to the room that continues the match.
const typeFailover = 6

// Bounds of a carry.
const (
	maxCarryFrames = lockstep.CarryFrames
	maxCarryBits   = 16 << 13 // one frame body: 16 KB
	maxCarryBytes  = 64 << 10 // the whole message
)

// failover is a room's word to a client (server to client).
type failover struct {
	standby string // the standby's base URL: resume there if this server falls silent; empty: none
	carry   int    // the room continues a match from its frame carry: send what you hold from it; -1: no ask
	resync  bool   // the frames the client holds are not the match's: start over as a fresh client
	// restored (worlds): the world came back from its checkpoint after
	// its server died, at this frame (> 0); 0: it did not. Old clients
	// read no further than resync.
	restored int
}

func appendFailover(dst []byte, m *failover) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeFailover, typeBits)
	w.WriteBool(false) // server to client
	w.WriteString(m.standby, maxMoveURL)
	w.WriteBool(m.carry >= 0)
	if m.carry >= 0 {
		w.WriteUvarint(uint64(m.carry))
	}
	w.WriteBool(m.resync)
	if m.restored > 0 {
		w.WriteUvarint(uint64(m.restored))
	}
	return w.Bytes()
}

func readFailover(msg []byte) (*failover, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeFailover || r.ReadBool() {
		return nil, fmt.Errorf("%w: not a failover notice", ErrMalformed)
	}
	m := &failover{standby: r.ReadString(maxMoveURL), carry: -1}
	if r.ReadBool() {
		m.carry = int(min(r.ReadUvarint(), maxWireUvint))
	}
	m.resync = r.ReadBool()
	if r.Err() == nil && r.Remaining() >= 8 {
		m.restored = int(min(r.ReadUvarint(), maxWireUvint))
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: failover notice: %v", ErrMalformed, err)
	}
	return m, nil
}

// carry is a client's word to a room that continues its match (client
// to server): the frames it holds, its inputs the match took, and the
// newest frames it holds from the room's ask.
type carry struct {
	have   int
	acked  uint32
	frames []lockstep.EncodedFrame
}

func appendCarry(dst []byte, m *carry) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeFailover, typeBits)
	w.WriteBool(true) // client to server
	w.WriteUvarint(uint64(m.have))
	w.WriteUvarint(uint64(m.acked))
	frames := m.frames
	// As many as fit, the oldest first: the room takes them in order.
	size := 0
	for i, f := range frames {
		if size += f.FullBits/8 + 8; size > maxCarryBytes-64 || f.FullBits > maxCarryBits {
			frames = frames[:i]
			break
		}
	}
	w.WriteUint(uint64(len(frames)), maxCarryFrames)
	for i, f := range frames {
		if i == 0 {
			w.WriteUvarint(uint64(f.Number))
		}
		w.WriteUint(uint64(f.FullBits), maxCarryBits)
		w.WriteBitString(f.Full, f.FullBits)
	}
	return w.Bytes()
}

func readCarry(msg []byte) (*carry, error) {
	if len(msg) > maxCarryBytes {
		return nil, fmt.Errorf("%w: a carry of %d bytes", ErrMalformed, len(msg))
	}
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeFailover || !r.ReadBool() {
		return nil, fmt.Errorf("%w: not a carry", ErrMalformed)
	}
	m := &carry{have: int(min(r.ReadUvarint(), maxWireUvint))}
	acked := r.ReadUvarint()
	if acked > 1<<32-1 {
		r.Fail(fmt.Errorf("input sequence %d", acked))
	}
	m.acked = uint32(acked)
	n := int(r.ReadUint(maxCarryFrames))
	first := 0
	for i := range n {
		if i == 0 {
			first = int(min(r.ReadUvarint(), maxWireUvint))
		}
		bits := int(r.ReadUint(maxCarryBits))
		if r.Err() != nil || bits > r.Remaining() {
			r.Fail(fmt.Errorf("frame body of %d bits past the message's end", bits))
			break
		}
		body := make([]byte, (bits+7)/8)
		for j := 0; j < bits; j += 8 {
			body[j/8] = byte(r.ReadBits(min(8, bits-j)))
		}
		m.frames = append(m.frames, lockstep.EncodedFrame{Number: first + i, Full: body, FullBits: bits})
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: carry: %v", ErrMalformed, err)
	}
	if n > 0 && first+n > m.have {
		return nil, fmt.Errorf("%w: carry of frames to %d from a client holding %d", ErrMalformed, first+n-1, m.have)
	}
	return m, nil
}

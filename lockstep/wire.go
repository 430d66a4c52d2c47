package lockstep

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Packet kinds: the first 3 bits of every lockstep message (SPEC.md,
// "Lockstep").
const (
	kindInput  = 0 // client to room, unreliable: acks, loss report, inputs
	kindFrames = 1 // room to client, unreliable: input ack, frames
	kindNotice = 2 // room to client, reliable: what happened to late inputs
	kindLife   = 3 // either way: lifecycle messages (lifecycle.go), with a sub-kind
	kindBits   = 3
)

// maxEchoHoldMs bounds how long a client says it held the downlink packet
// it echoes; an older echo is not sent.
const maxEchoHoldMs = 1023

// maxFrame bounds a frame number on the wire: 2^31 frames is over a year
// at 60 Hz.
const maxFrame = 1<<31 - 1

// maxRunFrames bounds the consecutive frames of one downlink packet.
const maxRunFrames = 63

// upInput is one input in an uplink packet.
type upInput struct {
	frame int
	data  []byte
}

// uplink is the client's packet: what it holds of the downlink, how the
// downlink is doing, and every input the room has not acknowledged.
type uplink struct {
	have    int    // frames 0 .. have-1 are held
	mask    uint64 // bit i: frame have+1+i is held
	maskLen int    // bits of mask that are meaningful
	recv    uint16 // downlink packets received, wrapping
	lossRun int    // longest run of downlink packets lost recently, 0..15
	sent    uint16 // uplink packets sent, this one included, wrapping

	hasEcho  bool
	echoSeq  uint16 // the newest downlink packet received
	echoHold int    // ms between its arrival and this packet, 0..maxEchoHoldMs

	hasHash   bool
	hashFrame int    // the frame whose state was hashed (after running it)
	hash      uint64 // the hash

	firstSeq uint32 // sequence number of inputs[0]; inputs are consecutive
	inputs   []upInput
	scratch  []byte // decoded input bytes; inputs' data point into it

	// sealed, in a strict room, is the first frame the client may still
	// send an input for: every input for an earlier frame is in this
	// packet or acknowledged. 0: none said.
	sealed int
}

func (u *uplink) encode(w *codec.Writer) {
	w.WriteBits(kindInput, kindBits)
	w.WriteUvarint(uint64(u.have))
	w.WriteUint(uint64(u.maskLen), maxAckMask)
	w.WriteBits(u.mask, u.maskLen)
	w.WriteBits(uint64(u.recv), 16)
	w.WriteUint(uint64(min(u.lossRun, 15)), 15)
	w.WriteBits(uint64(u.sent), 16)
	w.WriteBool(u.hasEcho)
	if u.hasEcho {
		w.WriteBits(uint64(u.echoSeq), 16)
		w.WriteUint(uint64(u.echoHold), maxEchoHoldMs)
	}
	w.WriteBool(u.hasHash)
	if u.hasHash {
		w.WriteUvarint(uint64(u.hashFrame))
		w.WriteBits(u.hash, 64)
	}
	w.WriteUint(uint64(len(u.inputs)), maxUplinkInputs)
	if len(u.inputs) > 0 {
		u.encodeInputs(w)
	}
	// The seal goes last, after a 1 bit: a packet without one ends in
	// its zero padding, which reads as "none".
	if u.sealed > 0 {
		w.WriteBool(true)
		w.WriteUvarint(uint64(u.sealed))
	}
}

func (u *uplink) encodeInputs(w *codec.Writer) {
	w.WriteUvarint(uint64(u.firstSeq))
	for i, in := range u.inputs {
		if i == 0 {
			w.WriteUvarint(uint64(in.frame))
			w.WriteBytes(in.data, MaxInputBytes)
			continue
		}
		prev := u.inputs[i-1]
		w.WriteVarint(int64(in.frame - prev.frame))
		same := string(in.data) == string(prev.data)
		w.WriteBool(same)
		if !same {
			w.WriteBytes(in.data, MaxInputBytes)
		}
	}
}

func decodeUplink(msg []byte, u *uplink) error {
	r := codec.NewReader(msg)
	if k := r.ReadBits(kindBits); r.Err() == nil && k != kindInput {
		return fmt.Errorf("%w: kind %d is not an input packet", ErrMalformed, k)
	}
	have := r.ReadUvarint()
	u.maskLen = int(r.ReadUint(maxAckMask))
	u.mask = r.ReadBits(u.maskLen)
	u.recv = uint16(r.ReadBits(16))
	u.lossRun = int(r.ReadUint(15))
	u.sent = uint16(r.ReadBits(16))
	u.hasEcho = r.ReadBool()
	if u.hasEcho {
		u.echoSeq = uint16(r.ReadBits(16))
		u.echoHold = int(r.ReadUint(maxEchoHoldMs))
	}
	u.hasHash = r.ReadBool()
	var hashFrame uint64
	if u.hasHash {
		hashFrame = r.ReadUvarint()
		u.hash = r.ReadBits(64)
	}
	n := int(r.ReadUint(maxUplinkInputs))
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: uplink header: %w", ErrMalformed, err)
	}
	if have > maxFrame || hashFrame > maxFrame {
		return fmt.Errorf("%w: acknowledges frame %d, hashes frame %d", ErrMalformed, have, hashFrame)
	}
	u.hashFrame = int(hashFrame)
	u.have = int(have)
	u.inputs = u.inputs[:0]
	u.scratch = u.scratch[:0]
	u.sealed = 0
	if n > 0 {
		if err := u.decodeInputs(r, n); err != nil {
			return err
		}
	}
	if r.Remaining() > 0 && r.ReadBool() {
		s := r.ReadUvarint()
		if err := r.Err(); err != nil || s == 0 || s > maxFrame {
			return fmt.Errorf("%w: seal at frame %d: %v", ErrMalformed, s, err)
		}
		u.sealed = int(s)
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// decodeInputs reads an uplink packet's n inputs.
func (u *uplink) decodeInputs(r *codec.Reader, n int) error {
	seq := r.ReadUvarint()
	if seq == 0 || seq > 1<<32-1-maxUplinkInputs {
		return fmt.Errorf("%w: input sequence %d", ErrMalformed, seq)
	}
	u.firstSeq = uint32(seq)
	frame := int64(0)
	for i := range n {
		var data []byte
		if i == 0 {
			f := r.ReadUvarint()
			if f > maxFrame {
				return fmt.Errorf("%w: input %d targets frame %d", ErrMalformed, i, f)
			}
			frame = int64(f)
			data = u.readInput(r)
		} else {
			d := r.ReadVarint()
			if d < -maxFrame || d > maxFrame {
				return fmt.Errorf("%w: input %d frame step %d", ErrMalformed, i, d)
			}
			frame += d
			if r.ReadBool() {
				data = u.inputs[i-1].data
			} else {
				data = u.readInput(r)
			}
		}
		if err := r.Err(); err != nil {
			return fmt.Errorf("%w: input %d: %w", ErrMalformed, i, err)
		}
		if frame < 0 || frame > maxFrame {
			return fmt.Errorf("%w: input %d targets frame %d", ErrMalformed, i, frame)
		}
		u.inputs = append(u.inputs, upInput{frame: int(frame), data: data})
	}
	return nil
}

// readInput reads one input's bytes into the scratch buffer: no
// allocation once the buffer has grown. Earlier inputs keep pointing at the
// bytes they were read into even when the buffer grows.
func (u *uplink) readInput(r *codec.Reader) []byte {
	start := len(u.scratch)
	u.scratch = r.ReadBytes(u.scratch, MaxInputBytes)
	return u.scratch[start:len(u.scratch):len(u.scratch)]
}

// downlink is a decoded frames packet.
type downlink struct {
	seq       uint16
	inputAck  uint32 // inputs up to this sequence number arrived
	hasMargin bool
	marginMs  int    // how early an input arrived before its frame's cut (negative: late)
	marginSeq uint32 // which input: the margin is for input inputAck - marginSeq
	frames    []Frame
	arena     arena // where its frames' memory comes from
	// A strict room's latest pause: frames from pauseFrom on are cut
	// pausedMs (in all) behind the room's schedule. 0: none said.
	pauseFrom int
	pausedMs  int64
}

// downlinkHeader writes the part of a frames packet before the frames.
// The caller passes marginMs already clamped to ±maxMarginMs.
func downlinkHeader(w *codec.Writer, seq uint16, inputAck uint32, hasMargin bool, marginMs int, marginBack uint32) {
	w.WriteBits(kindFrames, kindBits)
	w.WriteBits(uint64(seq), 16)
	w.WriteUvarint(uint64(inputAck))
	w.WriteBool(hasMargin)
	if hasMargin {
		w.WriteInt(int64(marginMs), -maxMarginMs, maxMarginMs)
		w.WriteUvarint(uint64(marginBack))
	}
}

func decodeDownlink(msg []byte, players int, d *downlink) error {
	r := codec.NewReader(msg)
	if k := r.ReadBits(kindBits); r.Err() == nil && k != kindFrames {
		return fmt.Errorf("%w: kind %d is not a frames packet", ErrMalformed, k)
	}
	d.seq = uint16(r.ReadBits(16))
	ack := r.ReadUvarint()
	d.hasMargin = r.ReadBool()
	var back uint64
	if d.hasMargin {
		d.marginMs = int(r.ReadInt(-maxMarginMs, maxMarginMs))
		back = r.ReadUvarint()
	}
	first := r.ReadUvarint()
	n := int(r.ReadUint(maxRunFrames))
	if err := r.Err(); err != nil {
		return fmt.Errorf("%w: frames header: %w", ErrMalformed, err)
	}
	if ack > 1<<32-1 || first > maxFrame-maxRunFrames || back > ack {
		return fmt.Errorf("%w: input ack %d, first frame %d, margin of input %d back", ErrMalformed, ack, first, back)
	}
	d.inputAck = uint32(ack)
	d.marginSeq = uint32(ack - back)
	d.frames = d.frames[:0]
	for i := range n {
		var prev *Frame
		if i > 0 {
			prev = &d.frames[i-1]
		}
		f, err := decodeBody(r, int(first)+i, players, prev, &d.arena)
		if err != nil {
			return err
		}
		d.frames = append(d.frames, f)
	}
	k := int(r.ReadUint(maxRetransmits))
	num := int64(-1)
	for range k {
		gap := r.ReadUvarint()
		if gap > maxFrame {
			return fmt.Errorf("%w: retransmitted frame gap %d", ErrMalformed, gap)
		}
		num += int64(gap) + 1
		if r.Err() != nil || num > maxFrame {
			return fmt.Errorf("%w: retransmitted frame number: %v", ErrMalformed, r.Err())
		}
		f, err := decodeBody(r, int(num), players, nil, &d.arena)
		if err != nil {
			return err
		}
		d.frames = append(d.frames, f)
	}
	d.pauseFrom, d.pausedMs = 0, 0
	if r.Remaining() > 0 && r.ReadBool() {
		from, ms := r.ReadUvarint(), r.ReadUvarint()
		if err := r.Err(); err != nil || from == 0 || from > maxFrame || ms == 0 || ms > maxPausedMs {
			return fmt.Errorf("%w: a pause of %d ms from frame %d: %v", ErrMalformed, ms, from, err)
		}
		d.pauseFrom, d.pausedMs = int(from), int64(ms)
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// writePause ends a strict room's frames packet with the room's latest
// pause: frames from from on are cut pausedMs later than the room's
// schedule. A room that never paused writes nothing (the padding reads
// as no pause).
func writePause(w *codec.Writer, from int, paused time.Duration) {
	if ms := paused.Milliseconds(); ms > 0 && from > 0 {
		w.WriteBool(true)
		w.WriteUvarint(uint64(from))
		w.WriteUvarint(uint64(min(ms, maxPausedMs)))
	}
}

// maxPausedMs bounds a strict room's pauses in all on the wire (a year).
const maxPausedMs = 365 * 24 * 3600 * 1000

// Notice is the room's word on one input that arrived after its frame was
// cut.
type Notice struct {
	Seq     uint32 // the input's sequence number
	Target  int    // the frame it targeted
	Applied int    // the frame it was applied to, or -1 when it was dropped
}

func encodeNotices(w *codec.Writer, ns []Notice) {
	w.WriteBits(kindNotice, kindBits)
	w.WriteUint(uint64(len(ns)), 63)
	for _, n := range ns {
		w.WriteUvarint(uint64(n.Seq))
		w.WriteUvarint(uint64(n.Target))
		w.WriteBool(n.Applied >= 0)
		if n.Applied >= 0 {
			w.WriteUvarint(uint64(n.Applied - n.Target))
		}
	}
}

func decodeNotices(msg []byte, dst []Notice) ([]Notice, error) {
	r := codec.NewReader(msg)
	if k := r.ReadBits(kindBits); r.Err() == nil && k != kindNotice {
		return dst, fmt.Errorf("%w: kind %d is not a notice", ErrMalformed, k)
	}
	n := int(r.ReadUint(63))
	for range n {
		seq := r.ReadUvarint()
		target := r.ReadUvarint()
		applied := int64(-1)
		if r.ReadBool() {
			d := r.ReadUvarint()
			if d > maxFrame {
				return dst, fmt.Errorf("%w: notice applied %d frames late", ErrMalformed, d)
			}
			applied = int64(target) + int64(d)
		}
		if r.Err() != nil || seq > 1<<32-1 || target > maxFrame || applied > maxFrame {
			return dst, fmt.Errorf("%w: notice: %v", ErrMalformed, r.Err())
		}
		dst = append(dst, Notice{Seq: uint32(seq), Target: int(target), Applied: int(applied)})
	}
	if err := r.Done(); err != nil {
		return dst, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return dst, nil
}

// packetKind returns the kind of a lockstep message, or -1.
func packetKind(msg []byte) int {
	if len(msg) == 0 {
		return -1
	}
	return int(msg[0] & (1<<kindBits - 1))
}

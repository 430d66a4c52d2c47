package lockstep

import (
	"fmt"

	"github.com/tongbu/tongbu/codec"
)

// Lifecycle messages (kind 3, SPEC.md section 7.4) carry a 3-bit sub-kind
// after the kind. All go on the reliable channel.
const (
	lifeLive        = 0 // client to room: caught up, playing live from a frame
	lifeReport      = 1 // client to room: playout quality
	lifeDump        = 2 // client to room: one part of a state dump
	lifeCatchUp     = 3 // room to client: frames from the log, byte-aligned and compressed
	lifeDumpRequest = 4 // room to client: send a state dump for a frame
	lifeSnapshot    = 5 // room to client: one part of a snapshot of the room's simulation
	lifeEvents      = 6 // client to room: game events, and the frames they are complete for
	lifeMore        = 7 // either way: a uvarint names the message (lifeWait, ...), the sub-kinds past these
	lifeBits        = 3
)

// Lifecycle messages past the 3-bit sub-kinds: sub-kind lifeMore, then
// this kind as a uvarint.
const (
	lifeWait     = 0 // room to client: whom a strict room waits for (strict.go)
	lifeViewPart = 1 // room to client: a further part of an authoritative room's view (auth.go)
)

// Bounds of the lifecycle messages.
const (
	// catchUpChunkBytes is the most frame bytes one catch-up message holds
	// before compression; with its header it stays under the reliable
	// channel's 16 KiB message limit.
	catchUpChunkBytes = 12 << 10
	maxChunkFrames    = 4095
	// DumpPartBytes is the most dump bytes one dump message carries.
	DumpPartBytes = 12 << 10
	maxDumpParts  = 256
	// MaxDumpBytes bounds one state dump: DumpPartBytes * 256 (3 MiB).
	MaxDumpBytes   = DumpPartBytes * maxDumpParts
	maxJitterTenth = 65535 // 6.5 s, in tenths of a millisecond
	maxReportMs    = 1<<40 - 1
)

func writeLife(w *codec.Writer, sub int) {
	w.WriteBits(kindLife, kindBits)
	w.WriteBits(uint64(sub), lifeBits)
}

// lifeKind returns the sub-kind of a lifecycle message and a reader past
// it.
func lifeKind(msg []byte) (int, *codec.Reader, error) {
	r := codec.NewReader(msg)
	k := r.ReadBits(kindBits)
	sub := int(r.ReadBits(lifeBits))
	if err := r.Err(); err != nil || k != kindLife {
		return 0, nil, fmt.Errorf("%w: not a lifecycle message (kind %d): %v", ErrMalformed, k, err)
	}
	return sub, r, nil
}

// playReport is a client's playout quality so far (lifeReport).
type playReport struct {
	mapdv2Tenths int    // current mean delay variation, tenths of a millisecond
	stalls       uint64 // pauses so far
	stalledMs    uint64 // time paused
	fastMs       uint64 // time in fast play
	catchUpMs    uint64 // time catching up
}

func (p *playReport) encode(w *codec.Writer) {
	writeLife(w, lifeReport)
	w.WriteUint(uint64(min(max(p.mapdv2Tenths, 0), maxJitterTenth)), maxJitterTenth)
	w.WriteUvarint(p.stalls)
	w.WriteUvarint(min(p.stalledMs, maxReportMs))
	w.WriteUvarint(min(p.fastMs, maxReportMs))
	w.WriteUvarint(min(p.catchUpMs, maxReportMs))
}

func decodePlayReport(r *codec.Reader) (playReport, error) {
	var p playReport
	p.mapdv2Tenths = int(r.ReadUint(maxJitterTenth))
	p.stalls = r.ReadUvarint()
	p.stalledMs = r.ReadUvarint()
	p.fastMs = r.ReadUvarint()
	p.catchUpMs = r.ReadUvarint()
	if err := r.Done(); err != nil {
		return p, fmt.Errorf("%w: play report: %w", ErrMalformed, err)
	}
	if p.stalledMs > maxReportMs || p.fastMs > maxReportMs || p.catchUpMs > maxReportMs || p.stalls > maxReportMs {
		return p, fmt.Errorf("%w: play report out of range", ErrMalformed)
	}
	return p, nil
}

// encodeFrameNumber writes a lifecycle message that carries one frame
// number: lifeLive and lifeDumpRequest.
func encodeFrameNumber(w *codec.Writer, sub, frame int) {
	writeLife(w, sub)
	w.WriteUvarint(uint64(frame))
}

func decodeFrameNumber(r *codec.Reader) (int, error) {
	f := r.ReadUvarint()
	if err := r.Done(); err != nil {
		return 0, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if f > maxFrame {
		return 0, fmt.Errorf("%w: frame %d", ErrMalformed, f)
	}
	return int(f), nil
}

// payloadPart is one part of a payload split over lifecycle messages: the
// frame the payload is of, the part's index and the count of parts.
type payloadPart struct {
	frame       int
	part, parts int
	data        []byte
}

// partSpec is the shape of one kind of split payload: its lifecycle
// sub-kind, bounds, and the first frame it may be of.
type partSpec struct {
	life      int
	what      string
	maxParts  int
	partBytes int
	minFrame  uint64
}

var (
	dumpSpec     = partSpec{life: lifeDump, what: "dump", maxParts: maxDumpParts, partBytes: DumpPartBytes}
	snapshotSpec = partSpec{life: lifeSnapshot, what: "snapshot", maxParts: maxSnapshotParts, partBytes: SnapshotPartBytes, minFrame: 1}
)

// count returns how many parts a payload of n bytes takes: at least one,
// so that an empty payload is still sent.
func (s *partSpec) count(n int) int {
	return max(1, (n+s.partBytes-1)/s.partBytes)
}

// piece returns part i of data.
func (s *partSpec) piece(data []byte, i int) []byte {
	return data[i*s.partBytes : min(len(data), (i+1)*s.partBytes)]
}

func (s *partSpec) encode(w *codec.Writer, d *payloadPart) {
	writeLife(w, s.life)
	w.WriteUvarint(uint64(d.frame))
	w.WriteUint(uint64(d.parts-1), uint64(s.maxParts-1))
	w.WriteUint(uint64(d.part), uint64(s.maxParts-1))
	w.WriteBytes(d.data, s.partBytes)
}

func (s *partSpec) decode(r *codec.Reader) (payloadPart, error) {
	var d payloadPart
	f := r.ReadUvarint()
	d.parts = int(r.ReadUint(uint64(s.maxParts-1))) + 1
	d.part = int(r.ReadUint(uint64(s.maxParts - 1)))
	d.data = r.ReadBytes(nil, s.partBytes)
	if err := r.Done(); err != nil {
		return d, fmt.Errorf("%w: %s part: %w", ErrMalformed, s.what, err)
	}
	if f > maxFrame || f < s.minFrame || d.part >= d.parts {
		return d, fmt.Errorf("%w: %s of frame %d, part %d of %d", ErrMalformed, s.what, f, d.part, d.parts)
	}
	d.frame = int(f)
	return d, nil
}

// dumpPart is one part of a state dump.
type dumpPart payloadPart

func (d *dumpPart) encode(w *codec.Writer) { dumpSpec.encode(w, (*payloadPart)(d)) }

func decodeDumpPart(r *codec.Reader) (dumpPart, error) {
	d, err := dumpSpec.decode(r)
	return dumpPart(d), err
}

// catchUpHeader writes the header of a catch-up message holding frames
// first .. first+count-1; last marks the end of the stream. The caller
// appends the payload: codec.Compress of the frame bodies (the first in
// full, each next relative to the one before), zero-padded to a byte.
func catchUpHeader(w *codec.Writer, first, count int, last bool) {
	writeLife(w, lifeCatchUp)
	w.WriteUvarint(uint64(first))
	w.WriteUint(uint64(count), maxChunkFrames)
	w.WriteBool(last)
	w.AlignByte()
}

// decodeCatchUp decodes a catch-up message (after its sub-kind) into
// frames, appended to dst.
func decodeCatchUp(msg []byte, r *codec.Reader, players int, raw []byte, dst []Frame) ([]Frame, []byte, bool, error) {
	first := r.ReadUvarint()
	count := int(r.ReadUint(maxChunkFrames))
	last := r.ReadBool()
	r.AlignByte()
	if err := r.Err(); err != nil {
		return dst, raw, false, fmt.Errorf("%w: catch-up header: %w", ErrMalformed, err)
	}
	if first > maxFrame-maxChunkFrames {
		return dst, raw, false, fmt.Errorf("%w: catch-up from frame %d", ErrMalformed, first)
	}
	var err error
	raw, err = codec.Decompress(raw[:0], msg[r.Pos()/8:], catchUpChunkBytes)
	if err != nil {
		return dst, raw, false, fmt.Errorf("%w: catch-up payload: %w", ErrMalformed, err)
	}
	fr := codec.NewReader(raw)
	var prev *Frame
	start := len(dst)
	for i := range count {
		f, err := decodeBody(fr, int(first)+i, players, prev, nil)
		if err != nil {
			return dst[:start], raw, false, err
		}
		dst = append(dst, f)
		prev = &dst[len(dst)-1]
	}
	if err := fr.Done(); err != nil {
		return dst[:start], raw, false, fmt.Errorf("%w: catch-up payload: %w", ErrMalformed, err)
	}
	return dst, raw, last, nil
}

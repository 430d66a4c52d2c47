package replay

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep"
)

// Writer writes a replay as the match runs: it is a lockstep.Recorder,
// which the room feeds each frame as it cuts it (Room.Record), and it
// writes a block, with one Write call, every ten seconds of frames, so a
// crash loses at most the last block. Like the room it is not safe for
// concurrent use: call Close on the room's goroutine when the match ends.
type Writer struct {
	w      io.Writer
	h      Header
	every  int // frames per block
	first  int // the block's first frame
	count  int // frames in the block
	frames codec.Writer
	recs   codec.Writer
	nrec   int
	total  int
	buf    []byte
	comp   []byte
	err    error
	closed bool
	stats  Stats
}

var _ lockstep.Recorder = (*Writer)(nil)

// Stats counts what a writer wrote.
type Stats struct {
	Frames  int
	Blocks  int
	Records int
	Bytes   int64
}

// NewWriter writes the file header to w and returns a writer for the
// match's frames. It refuses, with ErrDamaged, a header no replay can
// hold: an invalid configuration, names or parameters over their bounds.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	h.Config = h.Config.WithDefaults()
	if err := validateHeader(&h); err != nil {
		return nil, err
	}
	rw := &Writer{w: w, h: h, every: 10 * h.Config.Hz}
	var cw codec.Writer
	encodeHeader(&cw, &h)
	if err := cw.Err(); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrDamaged, err)
	}
	rw.buf = append(rw.buf[:0], fileMagic...)
	rw.buf = append(rw.buf, formatVersion)
	rw.buf = rw.appendRecord(rw.buf, recHeader, cw.Bytes())
	if err := rw.write(rw.buf); err != nil {
		return nil, err
	}
	return rw, nil
}

// appendRecord appends one record: type, length, bulk frame, CRC-32C.
func (rw *Writer) appendRecord(dst []byte, typ byte, payload []byte) []byte {
	rw.comp = codec.Compress(rw.comp[:0], payload)
	start := len(dst)
	dst = append(dst, typ)
	dst = binary.AppendUvarint(dst, uint64(len(rw.comp)))
	dst = append(dst, rw.comp...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

// write writes b, unless an error came before; it keeps the first.
func (rw *Writer) write(b []byte) error {
	if rw.err != nil {
		return rw.err
	}
	n, err := rw.w.Write(b)
	rw.stats.Bytes += int64(n)
	if err != nil {
		rw.err = fmt.Errorf("replay: writing: %w", err)
	}
	return rw.err
}

// Err returns the first error the writer met; after one it writes nothing
// more.
func (rw *Writer) Err() error { return rw.err }

// Stats returns what the writer has written so far.
func (rw *Writer) Stats() Stats { return rw.stats }

// Config returns the room configuration the replay is for (its
// header's): Room.Record takes the writer for a room with that one.
func (rw *Writer) Config() lockstep.Config { return rw.h.Config }

// RecordFrame adds the next frame the room cut. A frame out of order (the
// writer records one room, from its frame 0) stops the writer: Err says
// why.
func (rw *Writer) RecordFrame(f lockstep.EncodedFrame) {
	if rw.closed {
		return
	}
	if f.Number != rw.total {
		rw.err = fmt.Errorf("%w: frame %d recorded after %d frames (a writer records one room, from its first frame)", ErrDamaged, f.Number, rw.total)
		rw.closed = true
		return
	}
	if rw.count == 0 {
		rw.first = f.Number
		rw.frames.WriteBitString(f.Full, f.FullBits)
	} else {
		rw.frames.WriteBitString(f.Rel, f.RelBits)
	}
	rw.count++
	rw.total++
	rw.stats.Frames++
	if rw.count >= rw.every || rw.count >= maxBlockFrames || rw.frames.Len() >= blockFlush*8 {
		rw.flush()
	}
}

// RecordCheck adds the room's comparison of the hashes players reported
// for a frame.
func (rw *Writer) RecordCheck(c lockstep.HashCheck) {
	if rw.closed {
		return
	}
	w := &rw.recs
	players := rw.h.Config.Players
	w.WriteUint(recCheck, 1<<recBits-1)
	w.WriteUvarint(uint64(c.Frame))
	w.WriteBits(uint64(c.Agree), players)
	w.WriteBool(c.Majority)
	if c.Majority {
		w.WriteBits(c.Hash, 64)
	}
	w.WriteUint(uint64(len(c.Others)), uint64(players))
	for _, o := range c.Others {
		w.WriteUint(uint64(o.Slot), uint64(players-1))
		w.WriteBits(o.Hash, 64)
	}
	rw.record()
}

// RecordJoin adds a join: the player in slot joined when frame was the
// next frame to cut.
func (rw *Writer) RecordJoin(slot, frame int) { rw.event(recJoin, slot, frame) }

// RecordLeave adds a leave: the player in slot left when frame was the
// next frame to cut.
func (rw *Writer) RecordLeave(slot, frame int) { rw.event(recLeave, slot, frame) }

// event adds a join or leave.
func (rw *Writer) event(kind, slot, frame int) {
	if rw.closed {
		return
	}
	w := &rw.recs
	w.WriteUint(uint64(kind), 1<<recBits-1)
	w.WriteUint(uint64(slot), uint64(rw.h.Config.Players-1))
	w.WriteUvarint(uint64(frame))
	rw.record()
}

// RecordDump adds a player's dump of its state after frame, cut to
// MaxDump bytes.
func (rw *Writer) RecordDump(slot, frame int, agrees bool, data []byte) {
	if rw.closed {
		return
	}
	w := &rw.recs
	w.WriteUint(recDump, 1<<recBits-1)
	w.WriteUint(uint64(slot), uint64(rw.h.Config.Players-1))
	w.WriteUvarint(uint64(frame))
	w.WriteBool(agrees)
	w.WriteUvarint(uint64(len(data)))
	w.WriteBytes(data[:min(len(data), MaxDump)], MaxDump)
	rw.record()
}

// record counts a lifecycle record added, and writes the block when it
// holds as many as a block may.
func (rw *Writer) record() {
	rw.nrec++
	rw.stats.Records++
	if rw.nrec >= maxBlockRecords-1 {
		rw.flush()
	}
}

// flush writes the block being built.
func (rw *Writer) flush() {
	if rw.count == 0 && rw.nrec == 0 {
		return
	}
	var w codec.Writer
	w.Reset(rw.buf[:0])
	w.WriteUvarint(uint64(rw.first))
	w.WriteUint(uint64(rw.count), maxBlockFrames)
	w.WriteBitString(rw.frames.Bytes(), rw.frames.Len())
	w.WriteUvarint(uint64(rw.nrec))
	w.WriteBitString(rw.recs.Bytes(), rw.recs.Len())
	payload := w.Bytes()
	rec := rw.appendRecord(nil, recBlock, payload)
	rw.buf = payload[:0]
	rw.write(rec)
	rw.stats.Blocks++
	rw.first += rw.count
	rw.count, rw.nrec = 0, 0
	rw.frames.Reset(rw.frames.Bytes()[:0])
	rw.recs.Reset(rw.recs.Bytes()[:0])
}

// Close writes the last block and the end record. The writer writes
// nothing after; it does not close the underlying writer.
func (rw *Writer) Close() error {
	if rw.closed {
		return rw.err
	}
	rw.flush()
	rw.closed = true
	var w codec.Writer
	w.WriteUvarint(uint64(rw.total))
	rw.write(rw.appendRecord(nil, recEnd, w.Bytes()))
	return rw.err
}

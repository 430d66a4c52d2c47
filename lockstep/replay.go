package lockstep

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// Replay file format (SPEC.md section 7.5): a magic and version, a header
// record, then blocks of frames and lifecycle records, then an end record.
// Each record is a type byte, a uvarint length, a codec bulk frame
// (snappy-compressed when that helps) and a CRC-32C of the type byte, the
// length and the frame.
const (
	replayMagic   = "TBRP"
	replayVersion = 3 // 1 held fewer of the room's settings; 2 had no max delay and no dump records (ReadConfigVersion)

	recHeader = 'H'
	recBlock  = 'B'
	recEnd    = 'E'

	// Bounds a reader enforces.
	maxReplayGame    = 64
	maxReplayParams  = 4096
	maxReplayName    = 64
	maxBlockFrames   = 4096
	maxBlockRecords  = 1 << 16
	maxReplayRecord  = 4 << 20 // compressed bytes in one record
	maxReplayBlock   = 8 << 20 // decompressed bytes in one block
	replayBlockFlush = 1 << 20 // a block is written once its frames reach this many bytes
)

// Record kinds inside a block.
const (
	recCheck = 0
	recJoin  = 1
	recLeave = 2
	recDump  = 3
	recBits  = 2
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// ReplayHeader describes a recorded match.
type ReplayHeader struct {
	// Game names the simulation (`tongbu replay verify` looks it up), at
	// most 64 bytes; Params are its setup (a seed, a map), at most 4096.
	Game   string
	Params []byte
	Config Config    // the room's configuration
	Start  time.Time // when frame 0 was cut
	// Players names the players by slot (at most 64 bytes each); empty
	// names are fine.
	Players []string
}

// ReplayRecordKind says what a ReplayRecord holds.
type ReplayRecordKind uint8

const (
	// RecordCheck holds a HashCheck.
	RecordCheck ReplayRecordKind = iota
	// RecordJoin: the player in Slot joined (or rejoined) when Frame was
	// the next frame to cut.
	RecordJoin
	// RecordLeave: the player in Slot left when Frame was next.
	RecordLeave
	// RecordDump: the player in Slot answered the room's request after a
	// desync with a state dump or its log lines (Client.Dump) for Frame:
	// Dump holds its first MaxReplayDump bytes, of DumpLen; Agrees says
	// whether the player agreed with the majority.
	RecordDump
)

// MaxReplayDump bounds the bytes of a state dump a replay keeps.
const MaxReplayDump = 64 << 10

// ReplayRecord is a lifecycle record of a replay.
type ReplayRecord struct {
	Kind  ReplayRecordKind
	Frame int
	Slot  int
	Check HashCheck
	// RecordDump: the dump's first bytes, its whole length, and whether
	// the player agreed with the majority.
	Dump    []byte
	DumpLen int
	Agrees  bool
}

// ReplayWriter writes a replay as the match runs: the room feeds it each
// frame as it cuts it (Room.Record), and it writes a block, with one Write
// call, every ten seconds of frames, so a crash loses at most the last
// block. Like the room it is not safe for concurrent use: call Close on
// the room's goroutine when the match ends.
type ReplayWriter struct {
	w      io.Writer
	h      ReplayHeader
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
	stats  ReplayStats
}

// ReplayStats counts what a writer wrote.
type ReplayStats struct {
	Frames  int
	Blocks  int
	Records int
	Bytes   int64
}

// NewReplayWriter writes the file header to w and returns a writer for the
// match's frames.
func NewReplayWriter(w io.Writer, h ReplayHeader) (*ReplayWriter, error) {
	h.Config = h.Config.WithDefaults()
	if err := validateHeader(&h); err != nil {
		return nil, err
	}
	rw := &ReplayWriter{w: w, h: h, every: 10 * h.Config.Hz}
	var cw codec.Writer
	encodeReplayHeader(&cw, &h)
	if err := cw.Err(); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrReplay, err)
	}
	rw.buf = append(rw.buf[:0], replayMagic...)
	rw.buf = append(rw.buf, replayVersion)
	rw.buf = rw.appendRecord(rw.buf, recHeader, cw.Bytes())
	if err := rw.write(rw.buf); err != nil {
		return nil, err
	}
	return rw, nil
}

func validateHeader(h *ReplayHeader) error {
	if err := h.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrReplay, err)
	}
	switch {
	case len(h.Game) > maxReplayGame:
		return fmt.Errorf("%w: game name of %d bytes", ErrReplay, len(h.Game))
	case len(h.Params) > maxReplayParams:
		return fmt.Errorf("%w: %d bytes of game parameters", ErrReplay, len(h.Params))
	case len(h.Players) > h.Config.Players:
		return fmt.Errorf("%w: %d player names for %d players", ErrReplay, len(h.Players), h.Config.Players)
	}
	for _, n := range h.Players {
		if len(n) > maxReplayName {
			return fmt.Errorf("%w: player name of %d bytes", ErrReplay, len(n))
		}
	}
	return nil
}

func encodeReplayHeader(w *codec.Writer, h *ReplayHeader) {
	w.WriteString(h.Game, maxReplayGame)
	w.WriteBytes(h.Params, maxReplayParams)
	w.WriteVarint(h.Start.UnixNano())
	WriteConfig(w, h.Config)
	for i := range h.Config.Players {
		name := ""
		if i < len(h.Players) {
			name = h.Players[i]
		}
		w.WriteString(name, maxReplayName)
	}
}

// decodeReplayHeader decodes the header of a replay of the given version.
func decodeReplayHeader(b []byte, version byte) (ReplayHeader, error) {
	var h ReplayHeader
	r := codec.NewReader(b)
	h.Game = r.ReadString(maxReplayGame)
	h.Params = r.ReadBytes(nil, maxReplayParams)
	start := r.ReadVarint()
	var err error
	if h.Config, err = ReadConfigVersion(r, int(version)); err != nil {
		return h, fmt.Errorf("%w: header: %w", ErrReplay, err)
	}
	h.Players = make([]string, h.Config.Players)
	for i := range h.Players {
		h.Players[i] = r.ReadString(maxReplayName)
	}
	if err := r.Done(); err != nil {
		return h, fmt.Errorf("%w: header: %w", ErrReplay, err)
	}
	h.Start = time.Unix(0, start)
	return h, nil
}

// appendRecord appends one record: type, length, bulk frame, CRC-32C.
func (rw *ReplayWriter) appendRecord(dst []byte, typ byte, payload []byte) []byte {
	rw.comp = codec.Compress(rw.comp[:0], payload)
	start := len(dst)
	dst = append(dst, typ)
	dst = binary.AppendUvarint(dst, uint64(len(rw.comp)))
	dst = append(dst, rw.comp...)
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], crcTable))
}

func (rw *ReplayWriter) write(b []byte) error {
	if rw.err != nil {
		return rw.err
	}
	n, err := rw.w.Write(b)
	rw.stats.Bytes += int64(n)
	if err != nil {
		rw.err = fmt.Errorf("lockstep: writing replay: %w", err)
	}
	return rw.err
}

// Err returns the first error the writer met; after one it writes nothing
// more.
func (rw *ReplayWriter) Err() error { return rw.err }

// Stats returns what the writer has written so far.
func (rw *ReplayWriter) Stats() ReplayStats { return rw.stats }

// Config returns the room configuration the replay is for (its
// header's): Room.Record takes the writer for a room with that one.
func (rw *ReplayWriter) Config() Config { return rw.h.Config }

// RecordFrame adds the next frame the room cut. A frame out of order (the
// writer records one room, from its frame 0) stops the writer: Err says
// why.
func (rw *ReplayWriter) RecordFrame(f EncodedFrame) {
	if rw.closed {
		return
	}
	if f.Number != rw.total {
		rw.err = fmt.Errorf("%w: frame %d recorded after %d frames (a writer records one room, from its first frame)", ErrReplay, f.Number, rw.total)
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
	if rw.count >= rw.every || rw.count >= maxBlockFrames || rw.frames.Len() >= replayBlockFlush*8 {
		rw.flush()
	}
}

// RecordCheck adds a resolved hash comparison.
func (rw *ReplayWriter) RecordCheck(c HashCheck) {
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

// RecordJoin adds a join.
func (rw *ReplayWriter) RecordJoin(slot, frame int) { rw.event(recJoin, slot, frame) }

// RecordLeave adds a leave.
func (rw *ReplayWriter) RecordLeave(slot, frame int) { rw.event(recLeave, slot, frame) }

// event adds a join or leave.
func (rw *ReplayWriter) event(kind, slot, frame int) {
	if rw.closed {
		return
	}
	w := &rw.recs
	w.WriteUint(uint64(kind), 1<<recBits-1)
	w.WriteUint(uint64(slot), uint64(rw.h.Config.Players-1))
	w.WriteUvarint(uint64(frame))
	rw.record()
}

// RecordDump adds a player's state dump, cut to MaxReplayDump bytes.
func (rw *ReplayWriter) RecordDump(slot, frame int, agrees bool, data []byte) {
	if rw.closed {
		return
	}
	w := &rw.recs
	w.WriteUint(recDump, 1<<recBits-1)
	w.WriteUint(uint64(slot), uint64(rw.h.Config.Players-1))
	w.WriteUvarint(uint64(frame))
	w.WriteBool(agrees)
	w.WriteUvarint(uint64(len(data)))
	w.WriteBytes(data[:min(len(data), MaxReplayDump)], MaxReplayDump)
	rw.record()
}

func (rw *ReplayWriter) record() {
	rw.nrec++
	rw.stats.Records++
	if rw.nrec >= maxBlockRecords-1 {
		rw.flush()
	}
}

// flush writes the block being built.
func (rw *ReplayWriter) flush() {
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
func (rw *ReplayWriter) Close() error {
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

// ReplayReader reads a replay file as a stream, checking every field:
// Next returns the frames in order, as the clients ran them (a made-up
// input under FillRepeat carries the player's previous input), and
// Records the lifecycle records read so far.
type ReplayReader struct {
	r       *bufio.Reader
	h       ReplayHeader
	block   []Frame
	pos     int
	next    int // the number of the next frame to read
	recs    []ReplayRecord
	ended   bool
	comp    []byte
	raw     []byte
	prevIn  [][]byte
	records int
}

// NewReplayReader reads and checks a replay's header.
func NewReplayReader(r io.Reader) (*ReplayReader, error) {
	rr := &ReplayReader{r: bufio.NewReader(r)}
	var magic [5]byte
	if _, err := io.ReadFull(rr.r, magic[:]); err != nil {
		return nil, fmt.Errorf("%w: no file header: %w", ErrReplayTruncated, err)
	}
	if string(magic[:4]) != replayMagic {
		return nil, fmt.Errorf("%w: not a tongbu replay (magic %q)", ErrReplay, magic[:4])
	}
	if magic[4] < 1 || magic[4] > replayVersion {
		return nil, fmt.Errorf("%w: version %d, this reader reads versions 1 to %d", ErrReplay, magic[4], replayVersion)
	}
	typ, payload, err := rr.record()
	if err != nil {
		return nil, err
	}
	if typ != recHeader {
		return nil, fmt.Errorf("%w: record %q where the header belongs", ErrReplay, typ)
	}
	if rr.h, err = decodeReplayHeader(payload, magic[4]); err != nil {
		return nil, err
	}
	rr.prevIn = make([][]byte, rr.h.Config.Players)
	return rr, nil
}

// Header returns the replay's header.
func (rr *ReplayReader) Header() ReplayHeader { return rr.h }

// record reads one record and returns its type and decompressed payload.
func (rr *ReplayReader) record() (byte, []byte, error) {
	typ, err := rr.r.ReadByte()
	if err == io.EOF {
		return 0, nil, fmt.Errorf("%w: the file ends after frame %d without an end record (the match did not finish, or the file was cut)", ErrReplayTruncated, rr.next)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrReplay, err)
	}
	var head [1 + binary.MaxVarintLen64]byte
	head[0] = typ
	n, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: record length after frame %d: %w", ErrReplayTruncated, rr.next, err)
	}
	if n > maxReplayRecord {
		return 0, nil, fmt.Errorf("%w: record of %d bytes (at most %d)", ErrReplay, n, maxReplayRecord)
	}
	hl := 1 + binary.PutUvarint(head[1:], n)
	if cap(rr.comp) < int(n)+4 {
		rr.comp = make([]byte, 0, int(n)+4)
	}
	rr.comp = rr.comp[:n+4]
	if _, err := io.ReadFull(rr.r, rr.comp); err != nil {
		return 0, nil, fmt.Errorf("%w: a record after frame %d is cut short: %w", ErrReplayTruncated, rr.next, err)
	}
	body := rr.comp[:n]
	crc := crc32.Update(crc32.Checksum(head[:hl], crcTable), crcTable, body)
	if got := binary.LittleEndian.Uint32(rr.comp[n:]); got != crc {
		return 0, nil, fmt.Errorf("%w: checksum mismatch in the record after frame %d (%08x, want %08x)", ErrReplay, rr.next, got, crc)
	}
	rr.raw, err = codec.Decompress(rr.raw[:0], body, maxReplayBlock)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: record after frame %d: %w", ErrReplay, rr.next, err)
	}
	return typ, rr.raw, nil
}

// Next returns the next frame; io.EOF after the last frame of a complete
// replay, an error wrapping ErrReplayTruncated when the file ends early,
// or ErrReplay when it is damaged.
func (rr *ReplayReader) Next() (Frame, error) {
	for rr.pos == len(rr.block) {
		if rr.ended {
			return Frame{}, io.EOF
		}
		if err := rr.load(); err != nil {
			return Frame{}, err
		}
	}
	f := rr.block[rr.pos]
	rr.block[rr.pos] = Frame{}
	rr.pos++
	return f, nil
}

// Records returns and clears the lifecycle records read so far. A block's
// records come with its frames; a hash check may arrive some blocks after
// its frame.
func (rr *ReplayReader) Records() []ReplayRecord {
	r := rr.recs
	rr.recs = nil
	return r
}

// load reads the next block or the end record.
func (rr *ReplayReader) load() error {
	typ, payload, err := rr.record()
	if err != nil {
		return err
	}
	switch typ {
	case recEnd:
		r := codec.NewReader(payload)
		total := r.ReadUvarint()
		if err := r.Done(); err != nil {
			return fmt.Errorf("%w: end record: %w", ErrReplay, err)
		}
		if total != uint64(rr.next) {
			return fmt.Errorf("%w: the end record counts %d frames, the file holds %d", ErrReplay, total, rr.next)
		}
		if _, err := rr.r.ReadByte(); err != io.EOF {
			return fmt.Errorf("%w: data after the end record", ErrReplay)
		}
		rr.ended = true
		return nil
	case recBlock:
		return rr.decodeBlock(payload)
	}
	return fmt.Errorf("%w: unknown record type %q after frame %d", ErrReplay, typ, rr.next)
}

func (rr *ReplayReader) decodeBlock(payload []byte) error {
	cfg := &rr.h.Config
	players := cfg.Players
	r := codec.NewReader(payload)
	first := r.ReadUvarint()
	count := int(r.ReadUint(maxBlockFrames))
	if r.Err() != nil {
		return fmt.Errorf("%w: block header after frame %d: %w", ErrReplay, rr.next, r.Err())
	}
	if first != uint64(rr.next) {
		return fmt.Errorf("%w: block starts at frame %d, expected %d", ErrReplay, first, rr.next)
	}
	if rr.next+count > maxFrame {
		return fmt.Errorf("%w: frame numbers beyond %d", ErrReplay, maxFrame)
	}
	rr.block, rr.pos = rr.block[:0], 0
	var prev *Frame
	for i := range count {
		f, err := ReadFrame(r, rr.next+i, players, prev)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrReplay, err)
		}
		for s := range f.Slots {
			if len(f.Slots[s].Inputs) > cfg.InputsPerFrame {
				return fmt.Errorf("%w: frame %d slot %d holds %d inputs, the room allows %d", ErrReplay, f.Number, s, len(f.Slots[s].Inputs), cfg.InputsPerFrame)
			}
			for _, in := range f.Slots[s].Inputs {
				if len(in) > cfg.InputBytes {
					return fmt.Errorf("%w: frame %d slot %d holds an input of %d bytes, the room allows %d", ErrReplay, f.Number, s, len(in), cfg.InputBytes)
				}
			}
		}
		rr.block = append(rr.block, f)
		prev = &rr.block[len(rr.block)-1]
	}
	// Resolve repeats as clients do, in order, after relative decoding.
	for i := range rr.block {
		rr.resolve(&rr.block[i])
	}
	end := rr.next + count
	n := r.ReadUvarint()
	if r.Err() != nil || n > maxBlockRecords {
		return fmt.Errorf("%w: %d records in the block of frame %d: %v", ErrReplay, n, first, r.Err())
	}
	for range n {
		rec, err := rr.decodeRecord(r, end)
		if err != nil {
			return err
		}
		rr.recs = append(rr.recs, rec)
		rr.records++
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: block of frame %d: %w", ErrReplay, first, err)
	}
	rr.next = end
	return nil
}

func (rr *ReplayReader) resolve(f *Frame) {
	applyFill(f.Slots, rr.prevIn, rr.h.Config.Fill, nil)
}

// decodeRecord reads one lifecycle record of a block ending at frame end.
func (rr *ReplayReader) decodeRecord(r *codec.Reader, end int) (ReplayRecord, error) {
	players := rr.h.Config.Players
	var rec ReplayRecord
	kind := r.ReadUint(1<<recBits - 1)
	switch kind {
	case recCheck:
		rec.Kind = RecordCheck
		f := r.ReadUvarint()
		c := &rec.Check
		c.Agree = uint32(r.ReadBits(players))
		c.Majority = r.ReadBool()
		if c.Majority {
			c.Hash = r.ReadBits(64)
		}
		k := int(r.ReadUint(uint64(players)))
		seen := c.Agree
		for range k {
			s := int(r.ReadUint(uint64(players - 1)))
			h := r.ReadBits(64)
			if r.Err() != nil {
				break
			}
			if seen&(1<<s) != 0 {
				return rec, fmt.Errorf("%w: check of frame %d names player %d twice", ErrReplay, f, s)
			}
			seen |= 1 << s
			c.Others = append(c.Others, PlayerHash{Slot: s, Hash: h})
		}
		if r.Err() != nil {
			return rec, fmt.Errorf("%w: check record: %w", ErrReplay, r.Err())
		}
		every := rr.h.Config.HashEvery
		if f >= uint64(end) || every < 0 || f%uint64(every) != 0 || c.Majority != (c.Agree != 0) {
			return rec, fmt.Errorf("%w: check of frame %d (every %d, %d frames so far, majority %v of %b)", ErrReplay, f, every, end, c.Majority, c.Agree)
		}
		rec.Frame, c.Frame = int(f), int(f)
	case recJoin, recLeave:
		rec.Kind = RecordJoin
		if kind == recLeave {
			rec.Kind = RecordLeave
		}
		rec.Slot = int(r.ReadUint(uint64(players - 1)))
		f := r.ReadUvarint()
		if r.Err() != nil || f > uint64(end) {
			return rec, fmt.Errorf("%w: join or leave at frame %d of %d: %v", ErrReplay, f, end, r.Err())
		}
		rec.Frame = int(f)
	case recDump:
		rec.Kind = RecordDump
		rec.Slot = int(r.ReadUint(uint64(players - 1)))
		f := r.ReadUvarint()
		rec.Agrees = r.ReadBool()
		n := r.ReadUvarint()
		rec.Dump = r.ReadBytes(nil, MaxReplayDump)
		if r.Err() != nil || f > uint64(end) || n > MaxDumpBytes || uint64(len(rec.Dump)) != min(n, MaxReplayDump) {
			return rec, fmt.Errorf("%w: dump of frame %d (%d bytes of %d): %v", ErrReplay, f, len(rec.Dump), n, r.Err())
		}
		rec.Frame, rec.DumpLen = int(f), int(n)
	default:
		return rec, fmt.Errorf("%w: record kind %d", ErrReplay, kind)
	}
	return rec, nil
}

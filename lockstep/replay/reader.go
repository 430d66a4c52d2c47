package replay

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep"
)

// Reader reads a replay file as a stream, checking every field:
// Next returns the frames in order, as the clients ran them (a made-up
// input under FillRepeat carries the player's previous input), and
// Records the lifecycle records read so far.
type Reader struct {
	r       *bufio.Reader
	h       Header
	block   []lockstep.Frame
	pos     int
	next    int // the number of the next frame to read
	recs    []Record
	ended   bool
	comp    []byte
	raw     []byte
	fill    *lockstep.Filler // made-up inputs, as the clients resolved them
	records int
}

// NewReader reads and checks a replay's header: an error wraps
// ErrTruncated for a file that ends within it, ErrDamaged for one that is
// not a replay or is damaged.
func NewReader(r io.Reader) (*Reader, error) {
	rr := &Reader{r: bufio.NewReader(r)}
	var magic [5]byte
	if _, err := io.ReadFull(rr.r, magic[:]); err != nil {
		return nil, fmt.Errorf("%w: no file header: %w", ErrTruncated, err)
	}
	if string(magic[:4]) != fileMagic {
		return nil, fmt.Errorf("%w: not a tongbu replay (magic %q)", ErrDamaged, magic[:4])
	}
	if magic[4] < 1 || magic[4] > formatVersion {
		return nil, fmt.Errorf("%w: version %d, this reader reads versions 1 to %d", ErrDamaged, magic[4], formatVersion)
	}
	typ, payload, err := rr.record()
	if err != nil {
		return nil, err
	}
	if typ != recHeader {
		return nil, fmt.Errorf("%w: record %q where the header belongs", ErrDamaged, typ)
	}
	if rr.h, err = decodeHeader(payload, magic[4]); err != nil {
		return nil, err
	}
	rr.fill = lockstep.NewFiller(rr.h.Config)
	return rr, nil
}

// Header returns the replay's header.
func (rr *Reader) Header() Header { return rr.h }

// record reads one record and returns its type and decompressed payload.
func (rr *Reader) record() (byte, []byte, error) {
	typ, err := rr.r.ReadByte()
	if err == io.EOF {
		return 0, nil, fmt.Errorf("%w: the file ends after frame %d without an end record (the match did not finish, or the file was cut)", ErrTruncated, rr.next)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	var head [1 + binary.MaxVarintLen64]byte
	head[0] = typ
	n, err := binary.ReadUvarint(rr.r)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: record length after frame %d: %w", ErrTruncated, rr.next, err)
	}
	if n > maxRecord {
		return 0, nil, fmt.Errorf("%w: record of %d bytes (at most %d)", ErrDamaged, n, maxRecord)
	}
	hl := 1 + binary.PutUvarint(head[1:], n)
	if cap(rr.comp) < int(n)+4 {
		rr.comp = make([]byte, 0, int(n)+4)
	}
	rr.comp = rr.comp[:n+4]
	if _, err := io.ReadFull(rr.r, rr.comp); err != nil {
		return 0, nil, fmt.Errorf("%w: a record after frame %d is cut short: %w", ErrTruncated, rr.next, err)
	}
	body := rr.comp[:n]
	crc := crc32.Update(crc32.Checksum(head[:hl], crcTable), crcTable, body)
	if got := binary.LittleEndian.Uint32(rr.comp[n:]); got != crc {
		return 0, nil, fmt.Errorf("%w: checksum mismatch in the record after frame %d (%08x, want %08x)", ErrDamaged, rr.next, got, crc)
	}
	rr.raw, err = codec.Decompress(rr.raw[:0], body, maxBlock)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: record after frame %d: %w", ErrDamaged, rr.next, err)
	}
	return typ, rr.raw, nil
}

// Next returns the next frame; io.EOF after the last frame of a complete
// replay, an error wrapping ErrTruncated when the file ends early,
// or ErrDamaged when it is damaged.
func (rr *Reader) Next() (lockstep.Frame, error) {
	for rr.pos == len(rr.block) {
		if rr.ended {
			return lockstep.Frame{}, io.EOF
		}
		if err := rr.load(); err != nil {
			return lockstep.Frame{}, err
		}
	}
	f := rr.block[rr.pos]
	rr.block[rr.pos] = lockstep.Frame{}
	rr.pos++
	return f, nil
}

// Records returns and clears the lifecycle records read so far. A block's
// records come with its frames; a hash check may arrive some blocks after
// its frame.
func (rr *Reader) Records() []Record {
	r := rr.recs
	rr.recs = nil
	return r
}

// load reads the next block or the end record.
func (rr *Reader) load() error {
	typ, payload, err := rr.record()
	if err != nil {
		return err
	}
	switch typ {
	case recEnd:
		r := codec.NewReader(payload)
		total := r.ReadUvarint()
		if err := r.Done(); err != nil {
			return fmt.Errorf("%w: end record: %w", ErrDamaged, err)
		}
		if total != uint64(rr.next) {
			return fmt.Errorf("%w: the end record counts %d frames, the file holds %d", ErrDamaged, total, rr.next)
		}
		if _, err := rr.r.ReadByte(); err != io.EOF {
			return fmt.Errorf("%w: data after the end record", ErrDamaged)
		}
		rr.ended = true
		return nil
	case recBlock:
		return rr.decodeBlock(payload)
	}
	return fmt.Errorf("%w: unknown record type %q after frame %d", ErrDamaged, typ, rr.next)
}

// decodeBlock decodes a block's frames and records.
func (rr *Reader) decodeBlock(payload []byte) error {
	cfg := &rr.h.Config
	players := cfg.Players
	r := codec.NewReader(payload)
	first := r.ReadUvarint()
	count := int(r.ReadUint(maxBlockFrames))
	if r.Err() != nil {
		return fmt.Errorf("%w: block header after frame %d: %w", ErrDamaged, rr.next, r.Err())
	}
	if first != uint64(rr.next) {
		return fmt.Errorf("%w: block starts at frame %d, expected %d", ErrDamaged, first, rr.next)
	}
	if rr.next+count > maxFrame {
		return fmt.Errorf("%w: frame numbers beyond %d", ErrDamaged, maxFrame)
	}
	rr.block, rr.pos = rr.block[:0], 0
	var prev *lockstep.Frame
	for i := range count {
		f, err := lockstep.ReadFrame(r, rr.next+i, players, prev)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrDamaged, err)
		}
		for s := range f.Slots {
			if len(f.Slots[s].Inputs) > cfg.InputsPerFrame {
				return fmt.Errorf("%w: frame %d slot %d holds %d inputs, the room allows %d", ErrDamaged, f.Number, s, len(f.Slots[s].Inputs), cfg.InputsPerFrame)
			}
			for _, in := range f.Slots[s].Inputs {
				if len(in) > cfg.InputBytes {
					return fmt.Errorf("%w: frame %d slot %d holds an input of %d bytes, the room allows %d", ErrDamaged, f.Number, s, len(in), cfg.InputBytes)
				}
			}
		}
		rr.block = append(rr.block, f)
		prev = &rr.block[len(rr.block)-1]
	}
	// Resolve repeats as clients do, in order, after relative decoding.
	for i := range rr.block {
		rr.fill.Apply(&rr.block[i])
	}
	end := rr.next + count
	n := r.ReadUvarint()
	if r.Err() != nil || n > maxBlockRecords {
		return fmt.Errorf("%w: %d records in the block of frame %d: %v", ErrDamaged, n, first, r.Err())
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
		return fmt.Errorf("%w: block of frame %d: %w", ErrDamaged, first, err)
	}
	rr.next = end
	return nil
}

// decodeRecord reads one lifecycle record of a block ending at frame end.
func (rr *Reader) decodeRecord(r *codec.Reader, end int) (Record, error) {
	players := rr.h.Config.Players
	var rec Record
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
				return rec, fmt.Errorf("%w: check of frame %d names player %d twice", ErrDamaged, f, s)
			}
			seen |= 1 << s
			c.Others = append(c.Others, lockstep.PlayerHash{Slot: s, Hash: h})
		}
		if r.Err() != nil {
			return rec, fmt.Errorf("%w: check record: %w", ErrDamaged, r.Err())
		}
		every := rr.h.Config.HashEvery
		if f >= uint64(end) || every < 0 || f%uint64(every) != 0 || c.Majority != (c.Agree != 0) {
			return rec, fmt.Errorf("%w: check of frame %d (every %d, %d frames so far, majority %v of %b)", ErrDamaged, f, every, end, c.Majority, c.Agree)
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
			return rec, fmt.Errorf("%w: join or leave at frame %d of %d: %v", ErrDamaged, f, end, r.Err())
		}
		rec.Frame = int(f)
	case recDump:
		rec.Kind = RecordDump
		rec.Slot = int(r.ReadUint(uint64(players - 1)))
		f := r.ReadUvarint()
		rec.Agrees = r.ReadBool()
		n := r.ReadUvarint()
		rec.Dump = r.ReadBytes(nil, MaxDump)
		if r.Err() != nil || f > uint64(end) || n > lockstep.MaxDumpBytes || uint64(len(rec.Dump)) != min(n, MaxDump) {
			return rec, fmt.Errorf("%w: dump of frame %d (%d bytes of %d): %v", ErrDamaged, f, len(rec.Dump), n, r.Err())
		}
		rec.Frame, rec.DumpLen = int(f), int(n)
	default:
		return rec, fmt.Errorf("%w: record kind %d", ErrDamaged, kind)
	}
	return rec, nil
}

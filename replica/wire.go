package replica

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"regexp"

	"github.com/tongbu/tongbu/codec"
)

// Frame types of the replica protocol (SPEC.md, "Replica protocol").
const (
	typeHeads  = 1 // publisher -> all: its epoch and the version of every collection
	typeSync   = 2 // publisher -> subscribers: a full snapshot and/or deltas of one collection
	typeReport = 3 // subscriber -> publisher: the versions it holds
)

// Wire bounds.
const (
	// maxVersion is the largest version on the wire: a subscriber keeps
	// versions in an int64 and -1 means empty.
	maxVersion = math.MaxInt64 - 1
	// maxCollections bounds the collections of one publisher.
	maxCollections = 1024
	// maxName bounds publisher, subscriber and collection names.
	maxName = 64
	// crcLen is the checksum that ends every message.
	crcLen = 4
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkName validates a name used in bus subjects.
func checkName(kind, name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%w: %s %q: want 1-%d of [A-Za-z0-9_-]", ErrConfig, kind, name, maxName)
	}
	return nil
}

// Subjects of one publisher.
func dataSubject(pub string) string        { return "replica." + pub + ".data" }
func reportSubject(pub string) string      { return "replica." + pub + ".report" }
func directSubject(pub, sub string) string { return "replica." + pub + ".sub." + sub }

// sealMessage appends the CRC-32C of b to b.
func sealMessage(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// openMessage checks and strips the checksum that ends a message.
func openMessage(b []byte) ([]byte, error) {
	if len(b) < crcLen {
		return nil, fmt.Errorf("%w: %d-byte message", ErrMalformed, len(b))
	}
	body, sum := b[:len(b)-crcLen], binary.LittleEndian.Uint32(b[len(b)-crcLen:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrMalformed)
	}
	return body, nil
}

// heads is the publisher's heartbeat.
type heads struct {
	schema   uint32
	epoch    uint64
	versions []uint64 // per collection
}

func encodeHeads(dst []byte, h heads) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(uint64(h.schema), 32)
	w.WriteBits(h.epoch, 64)
	w.WriteUvarint(uint64(len(h.versions)))
	for _, v := range h.versions {
		w.WriteUvarint(v)
	}
	return sealMessage(w.Bytes())
}

func readVersion(r *codec.Reader, what string) (uint64, error) {
	v := r.ReadUvarint()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrMalformed, what, err)
	}
	if v > maxVersion {
		return 0, fmt.Errorf("%w: %s %d", ErrImpossibleVersion, what, v)
	}
	return v, nil
}

func readCollections(r *codec.Reader, want int) (int, error) {
	n := r.ReadUvarint()
	if err := r.Err(); err != nil {
		return 0, fmt.Errorf("%w: collection count: %v", ErrMalformed, err)
	}
	if n != uint64(want) {
		return 0, fmt.Errorf("%w: %d collections, this process has %d", ErrSchema, n, want)
	}
	return int(n), nil
}

func decodeHeads(b []byte, schema uint32, collections int) (heads, error) {
	body, err := openMessage(b)
	if err != nil {
		return heads{}, err
	}
	r := codec.NewReader(body)
	h := heads{schema: uint32(r.ReadBits(32)), epoch: r.ReadBits(64)}
	if err := r.Err(); err != nil {
		return heads{}, fmt.Errorf("%w: heads: %v", ErrMalformed, err)
	}
	if h.schema != schema {
		return heads{}, fmt.Errorf("%w: heads for schema %08x, this process has %08x", ErrSchema, h.schema, schema)
	}
	n, err := readCollections(r, collections)
	if err != nil {
		return heads{}, err
	}
	h.versions = make([]uint64, n)
	for i := range h.versions {
		if h.versions[i], err = readVersion(r, "head version"); err != nil {
			return heads{}, err
		}
	}
	if err := r.Done(); err != nil {
		return heads{}, fmt.Errorf("%w: heads: %v", ErrMalformed, err)
	}
	return h, nil
}

// held is one collection's entry in a report: the epoch and version of the
// subscriber's copy, -1 when it has none.
type held struct {
	epoch   uint64
	version int64
}

// report is a subscriber's version report.
type report struct {
	schema uint32
	id     string
	held   []held
}

func encodeReport(dst []byte, rp report) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(uint64(rp.schema), 32)
	w.WriteString(rp.id, maxName)
	w.WriteUvarint(uint64(len(rp.held)))
	for _, h := range rp.held {
		w.WriteBits(h.epoch, 64)
		w.WriteUvarint(uint64(h.version + 1))
	}
	return sealMessage(w.Bytes())
}

func decodeReport(b []byte, schema uint32, collections int) (report, error) {
	body, err := openMessage(b)
	if err != nil {
		return report{}, err
	}
	r := codec.NewReader(body)
	rp := report{schema: uint32(r.ReadBits(32)), id: r.ReadString(maxName)}
	if err := r.Err(); err != nil {
		return report{}, fmt.Errorf("%w: report: %v", ErrMalformed, err)
	}
	if rp.schema != schema {
		return report{}, fmt.Errorf("%w: report from %q for schema %08x, this publisher has %08x", ErrSchema, rp.id, rp.schema, schema)
	}
	if err := checkName("subscriber", rp.id); err != nil {
		return report{}, fmt.Errorf("%w: report: %v", ErrMalformed, err)
	}
	n, err := readCollections(r, collections)
	if err != nil {
		return report{}, err
	}
	rp.held = make([]held, n)
	for i := range rp.held {
		rp.held[i].epoch = r.ReadBits(64)
		v, err := readVersion(r, "reported version")
		if err != nil {
			return report{}, err
		}
		rp.held[i].version = int64(v) - 1
	}
	if err := r.Done(); err != nil {
		return report{}, fmt.Errorf("%w: report: %v", ErrMalformed, err)
	}
	return rp, nil
}

// syncMsg carries a full snapshot and/or consecutive deltas of one
// collection.
type syncMsg struct {
	schema     uint32
	epoch      uint64
	collection int
	reset      bool   // load the full snapshot whatever the local version
	withFull   bool   // the message carries a full snapshot
	full       []byte // full body
	fullVer    uint64
	first      uint64   // version of deltas[0]; fullVer+1 when full is present
	deltas     [][]byte // delta bodies
}

func (m *syncMsg) hasFull() bool { return m.withFull }

// last returns the version the message brings a copy to.
func (m *syncMsg) last() uint64 {
	if len(m.deltas) > 0 {
		return m.first + uint64(len(m.deltas)) - 1
	}
	return m.fullVer
}

// encodeSync encodes m into dst[:0]; scratch is reused for the uncompressed bulk.
func encodeSync(dst []byte, m *syncMsg, scratch []byte) ([]byte, []byte) {
	w := codec.NewWriter(dst)
	w.WriteBits(uint64(m.schema), 32)
	w.WriteBits(m.epoch, 64)
	w.WriteUvarint(uint64(m.collection))
	w.WriteBool(m.hasFull())
	w.WriteBool(m.reset)
	if m.hasFull() {
		w.WriteUvarint(m.fullVer)
	} else {
		w.WriteUvarint(m.first)
	}
	w.WriteUvarint(uint64(len(m.deltas)))
	w.AlignByte()
	bulk := scratch[:0]
	if m.hasFull() {
		bulk = binary.AppendUvarint(bulk, uint64(len(m.full)))
		bulk = append(bulk, m.full...)
	}
	for _, d := range m.deltas {
		bulk = binary.AppendUvarint(bulk, uint64(len(d)))
		bulk = append(bulk, d...)
	}
	out := codec.Compress(w.Bytes(), bulk)
	return sealMessage(out), bulk
}

// decodeSync decodes a sync message. Its bodies alias a buffer of up to
// maxBulk bytes that decodeSync allocates.
func decodeSync(b []byte, schema uint32, collections int, maxBulk int) (*syncMsg, error) {
	body, err := openMessage(b)
	if err != nil {
		return nil, err
	}
	r := codec.NewReader(body)
	m := &syncMsg{schema: uint32(r.ReadBits(32)), epoch: r.ReadBits(64)}
	c := r.ReadUvarint()
	full, reset := r.ReadBool(), r.ReadBool()
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: sync header: %v", ErrMalformed, err)
	}
	if m.schema != schema {
		return nil, fmt.Errorf("%w: sync for schema %08x, this process has %08x", ErrSchema, m.schema, schema)
	}
	if c >= uint64(collections) {
		return nil, fmt.Errorf("%w: index %d, this process has %d", ErrUnknownCollection, c, collections)
	}
	m.collection, m.reset = int(c), reset
	v, err := readVersion(r, "sync version")
	if err != nil {
		return nil, err
	}
	nd := r.ReadUvarint()
	r.AlignByte()
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: sync header: %v", ErrMalformed, err)
	}
	if nd > uint64(len(body)) { // every delta takes at least a length byte
		return nil, fmt.Errorf("%w: %d deltas in %d bytes", ErrMalformed, nd, len(body))
	}
	if full {
		m.withFull, m.fullVer, m.first = true, v, v+1
	} else {
		m.first = v
		if nd == 0 {
			return nil, fmt.Errorf("%w: sync with neither snapshot nor deltas", ErrMalformed)
		}
		if v == 0 {
			return nil, fmt.Errorf("%w: delta version 0 (deltas start at 1)", ErrImpossibleVersion)
		}
	}
	if m.first-1+nd > maxVersion {
		return nil, fmt.Errorf("%w: deltas %d..%d", ErrImpossibleVersion, m.first, m.first-1+nd)
	}
	bulk, err := codec.Decompress(nil, body[r.Pos()/8:], maxBulk)
	if err != nil {
		return nil, fmt.Errorf("%w: sync bulk: %v", ErrMalformed, err)
	}
	next := func(what string) ([]byte, error) {
		n, k := binary.Uvarint(bulk)
		if k <= 0 || n > uint64(len(bulk)-k) {
			return nil, fmt.Errorf("%w: %s length", ErrMalformed, what)
		}
		part := bulk[k : k+int(n) : k+int(n)]
		bulk = bulk[k+int(n):]
		return part, nil
	}
	if full {
		if m.full, err = next("snapshot"); err != nil {
			return nil, err
		}
	}
	m.deltas = make([][]byte, 0, min(nd, 256))
	for range nd {
		d, err := next("delta")
		if err != nil {
			return nil, err
		}
		m.deltas = append(m.deltas, d)
	}
	if len(bulk) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last delta", ErrMalformed, len(bulk))
	}
	return m, nil
}

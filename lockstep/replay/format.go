package replay

import (
	"fmt"
	"hash/crc32"
	"time"

	"github.com/tongbu/tongbu/codec"
	"github.com/tongbu/tongbu/lockstep"
)

// Replay file format (SPEC.md section 7.5): a magic and version, a header
// record, then blocks of frames and lifecycle records, then an end record.
// Each record is a type byte, a uvarint length, a codec bulk frame
// (snappy-compressed when that helps) and a CRC-32C of the type byte, the
// length and the frame.
const (
	fileMagic     = "TBRP"
	formatVersion = 4 // 1 held fewer of the room's settings; 2 had no max delay and no dump records; 3 no strict rooms (lockstep.ReadConfigVersion reads their settings)

	recHeader = 'H'
	recBlock  = 'B'
	recEnd    = 'E'

	// Bounds a reader enforces.
	maxGame         = 64
	maxParams       = 4096
	maxName         = 64
	maxBlockFrames  = 4096
	maxBlockRecords = 1 << 16
	maxRecord       = 4 << 20 // compressed bytes in one record
	maxBlock        = 8 << 20 // decompressed bytes in one block
	blockFlush      = 1 << 20 // a block is written once its frames reach this many bytes

	// maxFrame bounds a frame number, as lockstep's wire does: 2^31
	// frames is over a year at 60 Hz.
	maxFrame = 1<<31 - 1
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

// Header describes a recorded match.
type Header struct {
	// Game names the simulation, by which a program finds it among the
	// games it registered (Games; Command does), at most 64 bytes; Params
	// are its setup (a seed, a map), at most 4096.
	Game   string
	Params []byte
	Config lockstep.Config // the room's configuration
	Start  time.Time       // when frame 0 was cut
	// Players names the players by slot (at most 64 bytes each); empty
	// names are fine.
	Players []string
}

// RecordKind says what a Record holds.
type RecordKind uint8

const (
	// RecordCheck holds the room's comparison of the hashes the players
	// reported for Frame (Check).
	RecordCheck RecordKind = iota
	// RecordJoin: the player in Slot joined (or rejoined) when Frame was
	// the next frame to cut.
	RecordJoin
	// RecordLeave: the player in Slot left when Frame was next.
	RecordLeave
	// RecordDump: the player in Slot answered the room's request after a
	// desync with a state dump or its log lines (lockstep.Client.Dump)
	// for Frame: Dump holds its first MaxDump bytes, of DumpLen; Agrees
	// says whether the player agreed with the majority.
	RecordDump
)

// MaxDump bounds the bytes of a state dump a replay keeps.
const MaxDump = 64 << 10

// Record is a lifecycle record of a replay.
type Record struct {
	Kind  RecordKind
	Frame int
	Slot  int
	Check lockstep.HashCheck
	// RecordDump: the dump's first bytes, its whole length, and whether
	// the player agreed with the majority.
	Dump    []byte
	DumpLen int
	Agrees  bool
}

// validateHeader checks that a header fits a replay file.
func validateHeader(h *Header) error {
	if err := h.Config.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrDamaged, err)
	}
	switch {
	case len(h.Game) > maxGame:
		return fmt.Errorf("%w: game name of %d bytes", ErrDamaged, len(h.Game))
	case len(h.Params) > maxParams:
		return fmt.Errorf("%w: %d bytes of game parameters", ErrDamaged, len(h.Params))
	case len(h.Players) > h.Config.Players:
		return fmt.Errorf("%w: %d player names for %d players", ErrDamaged, len(h.Players), h.Config.Players)
	}
	for _, n := range h.Players {
		if len(n) > maxName {
			return fmt.Errorf("%w: player name of %d bytes", ErrDamaged, len(n))
		}
	}
	return nil
}

// encodeHeader writes a header record's content.
func encodeHeader(w *codec.Writer, h *Header) {
	w.WriteString(h.Game, maxGame)
	w.WriteBytes(h.Params, maxParams)
	w.WriteVarint(h.Start.UnixNano())
	lockstep.WriteConfig(w, h.Config)
	for i := range h.Config.Players {
		name := ""
		if i < len(h.Players) {
			name = h.Players[i]
		}
		w.WriteString(name, maxName)
	}
}

// decodeHeader decodes the header of a replay of the given version.
func decodeHeader(b []byte, version byte) (Header, error) {
	var h Header
	r := codec.NewReader(b)
	h.Game = r.ReadString(maxGame)
	h.Params = r.ReadBytes(nil, maxParams)
	start := r.ReadVarint()
	var err error
	if h.Config, err = lockstep.ReadConfigVersion(r, int(version)); err != nil {
		return h, fmt.Errorf("%w: header: %w", ErrDamaged, err)
	}
	h.Players = make([]string, h.Config.Players)
	for i := range h.Players {
		h.Players[i] = r.ReadString(maxName)
	}
	if err := r.Done(); err != nil {
		return h, fmt.Errorf("%w: header: %w", ErrDamaged, err)
	}
	h.Start = time.Unix(0, start)
	return h, nil
}

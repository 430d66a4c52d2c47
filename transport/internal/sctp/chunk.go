package sctp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Chunk types (RFC 9260 §3.2, RFC 3758, RFC 6525).
const (
	ctData             = 0
	ctInit             = 1
	ctInitAck          = 2
	ctSack             = 3
	ctHeartbeat        = 4
	ctHeartbeatAck     = 5
	ctAbort            = 6
	ctShutdown         = 7
	ctShutdownAck      = 8
	ctError            = 9
	ctCookieEcho       = 10
	ctCookieAck        = 11
	ctShutdownComplete = 14
	ctReconfig         = 130
	ctForwardTSN       = 192
)

// Parameter types of INIT and INIT-ACK, and of RE-CONFIG.
const (
	ptStateCookie      = 7
	ptUnrecognized     = 8
	ptZeroChecksum     = 0x8001 // RFC 9653
	ptSupportedExt     = 0x8008 // RFC 5061
	ptForwardTSN       = 0xC000 // RFC 3758
	ptOutgoingReset    = 13     // RFC 6525
	ptReconfigResponse = 16
	ptHeartbeatInfo    = 1
)

// DATA chunk flags.
const (
	flagEnd       = 1
	flagBegin     = 2
	flagUnordered = 4
)

// zeroChecksumDTLS is RFC 9653's error detection method: DTLS.
const zeroChecksumDTLS = 1

const (
	commonHeaderLen = 12
	chunkHeaderLen  = 4
	dataHeaderLen   = 16
)

// Errors a peer's packet can cause.
var (
	// ErrMalformed is a packet or chunk that does not parse.
	ErrMalformed = errors.New("sctp: malformed packet")
	// ErrChecksum is a packet whose CRC32c is wrong.
	ErrChecksum = errors.New("sctp: bad checksum")
	// ErrProtocol is a peer breaking the protocol (acknowledging what was
	// never sent, overrunning the window it was given, a bad cookie).
	ErrProtocol = errors.New("sctp: protocol violation")
	// ErrAborted is an association the peer aborted.
	ErrAborted = errors.New("sctp: aborted by peer")
	// ErrClosed is an association that is closed.
	ErrClosed = errors.New("sctp: association closed")
	// ErrTimeout is a peer that stopped answering (retransmissions
	// exhausted).
	ErrTimeout = errors.New("sctp: peer not answering")
	// ErrTooLarge is a message over the association's limit.
	ErrTooLarge = errors.New("sctp: message too large")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header is an SCTP common header.
type Header struct {
	SrcPort, DstPort uint16
	VerificationTag  uint32
	Checksum         uint32
}

// ParseHeader reads the common header of pkt and returns it with the
// chunks that follow. It checks the length, not the checksum.
func ParseHeader(pkt []byte) (Header, []byte, error) {
	if len(pkt) < commonHeaderLen {
		return Header{}, nil, fmt.Errorf("%w: %d bytes, under a common header", ErrMalformed, len(pkt))
	}
	return Header{
		SrcPort:         binary.BigEndian.Uint16(pkt[0:]),
		DstPort:         binary.BigEndian.Uint16(pkt[2:]),
		VerificationTag: binary.BigEndian.Uint32(pkt[4:]),
		Checksum:        binary.LittleEndian.Uint32(pkt[8:]),
	}, pkt[commonHeaderLen:], nil
}

// checksum computes the CRC32c of pkt with its checksum field taken as
// zero (RFC 9260 Appendix A; the value is stored little-endian).
func checksum(pkt []byte) uint32 {
	var zero [4]byte
	c := crc32.Update(0, castagnoli, pkt[:8])
	c = crc32.Update(c, castagnoli, zero[:])
	return crc32.Update(c, castagnoli, pkt[12:])
}

// Chunk is one chunk of a packet; Value aliases the packet.
type Chunk struct {
	Type  uint8
	Flags uint8
	Value []byte // without the header and padding
}

// NextChunk splits the first chunk off b. It returns the chunk and the
// rest, or an error when the chunk's length is impossible.
func NextChunk(b []byte) (Chunk, []byte, error) {
	if len(b) < chunkHeaderLen {
		return Chunk{}, nil, fmt.Errorf("%w: %d bytes left, under a chunk header", ErrMalformed, len(b))
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if n < chunkHeaderLen || n > len(b) {
		return Chunk{}, nil, fmt.Errorf("%w: chunk type %d length %d of %d bytes", ErrMalformed, b[0], n, len(b))
	}
	c := Chunk{Type: b[0], Flags: b[1], Value: b[chunkHeaderLen:n]}
	pad := (n + 3) &^ 3
	if pad > len(b) {
		pad = len(b) // the last chunk's padding may be missing
	}
	return c, b[pad:], nil
}

// dataChunk is a parsed DATA chunk.
type dataChunk struct {
	flags  uint8
	tsn    uint32
	stream uint16
	ssn    uint16
	ppid   uint32
	data   []byte
}

func parseData(c Chunk) (dataChunk, error) {
	v := c.Value
	if len(v) < dataHeaderLen-chunkHeaderLen {
		return dataChunk{}, fmt.Errorf("%w: DATA of %d bytes", ErrMalformed, len(v))
	}
	return dataChunk{
		flags:  c.Flags,
		tsn:    binary.BigEndian.Uint32(v[0:]),
		stream: binary.BigEndian.Uint16(v[4:]),
		ssn:    binary.BigEndian.Uint16(v[6:]),
		ppid:   binary.BigEndian.Uint32(v[8:]),
		data:   v[12:],
	}, nil
}

// initChunk is a parsed INIT or INIT-ACK.
type initChunk struct {
	tag          uint32
	rwnd         uint32
	os, mis      uint16
	tsn          uint32
	cookie       []byte // INIT-ACK's state cookie
	forwardTSN   bool
	reconfig     bool
	zeroChecksum bool
}

func parseInit(c Chunk) (initChunk, error) {
	v := c.Value
	if len(v) < 16 {
		return initChunk{}, fmt.Errorf("%w: INIT of %d bytes", ErrMalformed, len(v))
	}
	in := initChunk{
		tag:  binary.BigEndian.Uint32(v[0:]),
		rwnd: binary.BigEndian.Uint32(v[4:]),
		os:   binary.BigEndian.Uint16(v[8:]),
		mis:  binary.BigEndian.Uint16(v[10:]),
		tsn:  binary.BigEndian.Uint32(v[12:]),
	}
	if in.tag == 0 || in.os == 0 || in.mis == 0 {
		return initChunk{}, fmt.Errorf("%w: INIT with tag %d, streams %d/%d", ErrProtocol, in.tag, in.os, in.mis)
	}
	for p := v[16:]; len(p) > 0; {
		if len(p) < 4 {
			return initChunk{}, fmt.Errorf("%w: INIT parameter of %d bytes", ErrMalformed, len(p))
		}
		typ := binary.BigEndian.Uint16(p)
		n := int(binary.BigEndian.Uint16(p[2:]))
		if n < 4 || n > len(p) {
			return initChunk{}, fmt.Errorf("%w: INIT parameter %#x length %d", ErrMalformed, typ, n)
		}
		val := p[4:n]
		switch typ {
		case ptStateCookie:
			in.cookie = val
		case ptForwardTSN:
			in.forwardTSN = true
		case ptZeroChecksum:
			in.zeroChecksum = len(val) >= 4 && binary.BigEndian.Uint32(val) == zeroChecksumDTLS
		case ptSupportedExt:
			for _, t := range val {
				switch t {
				case ctForwardTSN:
					in.forwardTSN = true
				case ctReconfig:
					in.reconfig = true
				}
			}
		}
		pad := (n + 3) &^ 3
		if pad > len(p) {
			pad = len(p)
		}
		p = p[pad:]
	}
	return in, nil
}

// sackChunk is a parsed SACK; gaps alias the packet (pairs of 16-bit
// start and end offsets from the cumulative TSN).
type sackChunk struct {
	cum   uint32
	rwnd  uint32
	ngaps int
	gaps  []byte
}

func parseSack(c Chunk) (sackChunk, error) {
	v := c.Value
	if len(v) < 12 {
		return sackChunk{}, fmt.Errorf("%w: SACK of %d bytes", ErrMalformed, len(v))
	}
	s := sackChunk{cum: binary.BigEndian.Uint32(v), rwnd: binary.BigEndian.Uint32(v[4:])}
	s.ngaps = int(binary.BigEndian.Uint16(v[8:]))
	ndups := int(binary.BigEndian.Uint16(v[10:]))
	if 12+4*s.ngaps+4*ndups > len(v) {
		return sackChunk{}, fmt.Errorf("%w: SACK with %d gaps and %d duplicates in %d bytes", ErrMalformed, s.ngaps, ndups, len(v))
	}
	s.gaps = v[12 : 12+4*s.ngaps]
	return s, nil
}

func (s sackChunk) gap(i int) (start, end uint16) {
	return binary.BigEndian.Uint16(s.gaps[4*i:]), binary.BigEndian.Uint16(s.gaps[4*i+2:])
}

// tsnLess reports whether a precedes b in serial number arithmetic.
func tsnLess(a, b uint32) bool { return int32(a-b) < 0 }

// tsnLE reports whether a precedes or equals b.
func tsnLE(a, b uint32) bool { return int32(a-b) <= 0 }

// ssnLess reports whether a precedes b, for 16-bit stream sequences.
func ssnLess(a, b uint16) bool { return int16(a-b) < 0 }

package sctp

import "encoding/binary"

// builder assembles outgoing packets: in the caller's buffers when a
// flush gives it next (each packet written once, where it will be sent
// from, after the headroom the caller leaves for its own headers), else in
// one reused buffer of its own.
type builder struct {
	buf     []byte // the packet is buf[off:]
	off     int
	own     []byte
	next    func() []byte // returns the next packet's buffer, its headroom as its length; nil: own
	mtu     int
	needCRC bool // the packet holds a chunk that must carry a real CRC32c
}

// start begins a packet with the common header.
func (b *builder) start(src, dst uint16, tag uint32) {
	if b.next != nil {
		b.buf = b.next()
	} else {
		b.buf = b.own[:0]
	}
	b.off = len(b.buf)
	b.buf = binary.BigEndian.AppendUint16(b.buf, src)
	b.buf = binary.BigEndian.AppendUint16(b.buf, dst)
	b.buf = binary.BigEndian.AppendUint32(b.buf, tag)
	b.buf = append(b.buf, 0, 0, 0, 0)
	b.needCRC = false
}

func (b *builder) empty() bool { return len(b.buf)-b.off <= commonHeaderLen }

// room returns how many bytes of chunk (header included) still fit.
func (b *builder) room() int { return b.mtu - (len(b.buf) - b.off) }

// chunk appends a chunk header for a value of n bytes and returns the
// value's slice to fill; padding is added by pad.
func (b *builder) chunk(typ, flags uint8, n int) []byte {
	b.buf = append(b.buf, typ, flags, 0, 0)
	binary.BigEndian.PutUint16(b.buf[len(b.buf)-2:], uint16(chunkHeaderLen+n))
	start := len(b.buf)
	b.buf = append(b.buf, make([]byte, n)...)
	return b.buf[start : start+n]
}

// raw appends an encoded chunk (header included, unpadded).
func (b *builder) raw(c []byte) {
	b.buf = append(b.buf, c...)
	b.pad()
}

func (b *builder) pad() {
	for (len(b.buf)-b.off)%4 != 0 {
		b.buf = append(b.buf, 0)
	}
}

// finish writes the checksum (or zero, when allowed) and returns the
// buffer: the headroom, then the packet.
func (b *builder) finish(zero bool) []byte {
	pkt := b.buf[b.off:]
	if !zero || b.needCRC {
		binary.LittleEndian.PutUint32(pkt[8:], checksum(pkt))
	}
	if b.next == nil {
		b.own = b.buf[:0]
	}
	return b.buf
}

// appendParam appends a parameter (type, length, value, padding).
func appendParam(dst []byte, typ uint16, val []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, typ)
	dst = binary.BigEndian.AppendUint16(dst, uint16(4+len(val)))
	dst = append(dst, val...)
	for len(dst)%4 != 0 {
		dst = append(dst, 0)
	}
	return dst
}

// encodeChunk returns a whole chunk (header and value, unpadded).
func encodeChunk(typ, flags uint8, val []byte) []byte {
	c := make([]byte, chunkHeaderLen, chunkHeaderLen+len(val))
	c[0], c[1] = typ, flags
	binary.BigEndian.PutUint16(c[2:], uint16(chunkHeaderLen+len(val)))
	return append(c, val...)
}

// initValue encodes an INIT or INIT-ACK value.
func initValue(tag, rwnd, tsn uint32, cookie []byte) []byte {
	v := make([]byte, 16, 64+len(cookie))
	binary.BigEndian.PutUint32(v[0:], tag)
	binary.BigEndian.PutUint32(v[4:], rwnd)
	binary.BigEndian.PutUint16(v[8:], maxStreams)
	binary.BigEndian.PutUint16(v[10:], maxStreams)
	binary.BigEndian.PutUint32(v[12:], tsn)
	if cookie != nil {
		v = appendParam(v, ptStateCookie, cookie)
	}
	v = appendParam(v, ptForwardTSN, nil)
	v = appendParam(v, ptSupportedExt, []byte{ctForwardTSN, ctReconfig})
	v = appendParam(v, ptZeroChecksum, []byte{0, 0, 0, zeroChecksumDTLS})
	return v
}

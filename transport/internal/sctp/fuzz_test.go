package sctp

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// captured returns real packets of an association's life: the handshake,
// DATA both ways, SACKs with gaps, FORWARD-TSN.
func captured() [][]byte {
	s := newSim(&testing.T{}, 5, 0, 5*time.Millisecond)
	var pkts [][]byte
	s.tap = func(_ int, p []byte) []byte {
		if len(pkts) < 64 {
			pkts = append(pkts, bytes.Clone(p))
		}
		return p
	}
	s.connect()
	s.loss = 0.3
	for f := range 40 {
		for _, ep := range s.ep {
			ep.a.SendUnordered(0, PPIDBinary, []byte("frame"))
			if f%5 == 0 {
				ep.a.SendOrdered(1, PPIDBinary, bytes.Repeat([]byte{byte(f)}, 1500))
			}
		}
		s.step(20 * time.Millisecond)
	}
	return pkts
}

// FuzzHandle feeds an established association arbitrary packets, with its
// own verification tag so that they reach the chunks: nothing panics and
// nothing it holds goes past its bounds.
func FuzzHandle(f *testing.F) {
	for _, p := range captured() {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, pkt []byte) {
		s, a := established(t)
		_ = s
		now := time.Unix(5000, 0)
		a.SendOrdered(1, PPIDBinary, []byte("hello"))
		a.SendUnordered(0, PPIDBinary, []byte("frame"))
		a.Flush(now, func([]byte) {})
		if len(pkt) >= commonHeaderLen {
			pkt = bytes.Clone(pkt)
			binary.BigEndian.PutUint32(pkt[4:], a.myTag)
			binary.LittleEndian.PutUint32(pkt[8:], 0)
		}
		for range 2 {
			before := a.Work()
			a.Handle(now, pkt)
			if w := a.Work() - before; w > maxWorkPerPacket+4*len(pkt) {
				t.Fatalf("a packet of %d bytes took %d steps", len(pkt), w)
			}
			now = now.Add(300 * time.Millisecond)
			a.Flush(now, func([]byte) {})
		}
		checkBounds(t, a)
	})
}

// FuzzReassembly feeds an established association DATA chunks and
// FORWARD-TSNs that the fuzzer shapes (five bytes a chunk: the TSN's
// distance from the cumulative one, the flags, the stream and SSN, the
// size), packed into packets as a hostile peer would: the association
// never holds more than its bounds, never takes more than
// maxWorkPerPacket steps for a packet, and what it holds stays
// consistent.
func FuzzReassembly(f *testing.F) {
	f.Add([]byte{1, 2, 0, 0, 1, 2, 2, 0, 0, 1, 3, 1, 0, 0, 1})
	f.Add(bytes.Repeat([]byte{1, 6, 0, 0, 1}, 200))
	f.Add(bytes.Repeat([]byte{2, 2, 0, 0, 1, 0xff, 0, 0, 0, 0}, 100))
	f.Add(bytes.Repeat([]byte{1, 0, 1, 3, 200}, 100))
	f.Fuzz(func(t *testing.T, in []byte) {
		_, a := established(t)
		now := time.Unix(5000, 0)
		p := packer{tag: a.myTag}
		for ; len(in) >= 5; in = in[5:] {
			off, flags, stream, ssn, size := uint32(in[0]), in[1], uint16(in[2]%3), uint16(in[3]), int(in[4])
			base := a.recv.cum // as the packets before this one left it: a guide, not exact
			if flags == 0xff {
				p.add(forwardTSN(base+off, 1, a.nextSSN[1]+ssn%8))
				continue
			}
			p.add(dataChunkBytes(flags&7, base+off*uint32(1+flags>>6), stream, a.nextSSN[stream%2]+ssn%16, make([]byte, 1+size*4)))
		}
		for _, pkt := range p.done() {
			before := a.Work()
			a.Handle(now, pkt)
			a.Messages(nil)
			if w := a.Work() - before; w > maxWorkPerPacket {
				t.Fatalf("a packet of %d bytes took %d steps", len(pkt), w)
			}
			checkBounds(t, a)
		}
	})
}

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
			a.Handle(now, pkt)
			now = now.Add(300 * time.Millisecond)
			a.Flush(now, func([]byte) {})
		}
		if a.buffered > int(a.cfg.RecvWindow) || len(a.recvd) > maxRecvdTSNs || len(a.out)-a.outHead > maxOutstanding {
			t.Fatalf("over bounds: %d bytes buffered, %d TSNs, %d outstanding", a.buffered, len(a.recvd), len(a.out)-a.outHead)
		}
	})
}

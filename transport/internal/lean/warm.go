//go:build !js

package lean

import (
	"net/netip"
	"unsafe"

	"github.com/tongbu/tongbu/internal/prefetch"
	"github.com/tongbu/tongbu/transport/internal/record"
	"github.com/tongbu/tongbu/transport/internal/sctp"
)

// A server touches a peer's state (the Peer, its cipher, its association)
// once a datagram, and with thousands of peers that state has left the
// cache since the peer's last datagram: each first touch waited on memory,
// one after another (the hottest lines of the relay server's profile at
// 2,500 players). The reader and the flusher know which peers their next
// datagrams are for, and ask the CPU for their state first, so the waits
// overlap (BENCHMARKS.md, "The data path's tail, third round").

// keyed is where a peer's cipher and association keep what a datagram
// reads, published once both are set: the spans a loop asks for.
type keyed struct {
	open, seal [2]prefetch.Span // the cipher's, for a datagram in and one out
	assoc      prefetch.Span
	send       [2]prefetch.Span // the association's, for a message queued (Warm)
}

func newKeyed(c *record.Cipher, a *sctp.Assoc) *keyed {
	return &keyed{open: c.Spans(true), seal: c.Spans(false), assoc: a.Span(), send: a.SendSpans()}
}

// warm asks for the Peer's own memory that a datagram touches.
func (p *Peer) warm() { prefetch.Lines(unsafe.Pointer(p), unsafe.Offsetof(p.hotEnd)) }

// warmKeyed asks for the peer's keyed, from the Peer (asked for a while
// ago).
func (p *Peer) warmKeyed() {
	if k := p.keyed.Load(); k != nil {
		prefetch.Lines(unsafe.Pointer(k), unsafe.Sizeof(*k))
	}
}

// warmState asks for what its keyed says: the cipher's side that opens
// the peer's records (open) or seals them, and the association.
func (p *Peer) warmState(open bool) {
	k := p.keyed.Load()
	if k == nil {
		return
	}
	s := &k.seal
	if open {
		s = &k.open
	}
	s[0].Warm()
	s[1].Warm()
	k.assoc.Warm()
}

// lookAhead finds the peers a server's batch of datagrams is for, in
// rd.ahead (nil for a datagram of none), for warmAhead as the reader
// takes them. The reader's take looks each up again: a datagram before
// may have moved or closed a peer.
func (s *socket) lookAhead(in []inDatagram, rd *reading) {
	rd.ahead = rd.ahead[:0] // cleared after the batch (readLoop)
	s.mu.RLock()
	for i := range in {
		var p *Peer
		if d := &in[i]; len(d.b) > 0 && d.b[0] >= 20 && d.b[0] <= 63 { // DTLS records only (see take)
			p = s.byAddr[netip.AddrPortFrom(d.from.Addr().Unmap(), d.from.Port())]
		}
		rd.ahead = append(rd.ahead, p)
	}
	s.mu.RUnlock()
}

// warmDistance is how many peers apart a loop's three asks are: for
// the state of the peer d ahead of the one it is at, for its keyed 2d
// ahead, for the Peer 3d ahead. Far enough for memory to answer each
// before the next needs it, near enough for the lines to stay in the
// cache until used.
const warmDistance = 4

// warmAhead asks, as a loop over list comes to its i-th peer, for the
// Peer of the one 3d ahead, the keyed of the one 2d ahead and the state
// of the one d ahead; at 0 it asks for those before them too. open: the
// loop opens the peers' records (the reader), else it seals them (the
// flusher). A nil peer is skipped.
func warmAhead(list []*Peer, i int, open bool) {
	const d = warmDistance
	from := i
	if i == 0 {
		from = -3 * d
	}
	for j := from; j <= i; j++ {
		if k := j + 3*d; k >= 0 && k < len(list) && list[k] != nil {
			list[k].warm()
		}
		if k := j + 2*d; k >= 0 && k < len(list) && list[k] != nil {
			list[k].warmKeyed()
		}
		if k := j + d; k >= 0 && k < len(list) && list[k] != nil {
			list[k].warmState(open)
		}
	}
}

// Warm implements transport.Warmer: it asks for what a send touches, the
// Peer's hot fields and the lines of its association a message queued
// reads (not the cipher: the flusher seals, and warms its peers itself).
func (p *Peer) Warm() {
	p.warm()
	if k := p.keyed.Load(); k != nil {
		k.send[0].Warm()
		k.send[1].Warm()
	}
}

//go:build !js

package lean

import (
	"sync"

	"github.com/tongbu/tongbu/transport/internal/conn"
)

// How a peer's messages reach whoever reads them: a Handler, called in
// the reader's goroutine, or the inbox.

// Handle implements transport.Handler.
func (p *Peer) Handle(f func(conn.Message)) {
	p.handler.Store(&f)
	p.handOver(nil)
}

// HandleClose implements transport.Handler.
func (p *Peer) HandleClose(f func()) {
	f = sync.OnceFunc(f)
	p.closer.Store(&f)
	if p.IsDone() { // closed before the hook was set: closeWith may have missed it
		go f()
	}
}

// reading is a reader's (a socket's, or a TCP connection's) state for the
// messages it takes: those for a Handler, handed over after each
// datagram once the peer's lock is let go, and the slab every message's
// bytes are copied into. The receiver owns a message's bytes: a slab is
// never reused, but one is allocated for many messages (for 64 KiB of
// them on a server's socket), not one a message.
type reading struct {
	hand     []conn.Message
	slab     []byte
	slabSize int
	ahead    []*Peer // a server's: the peer each datagram of the batch is for (warm.go)
}

// Slab sizes: a server's socket, or a shared client socket, reads every
// peer's messages; a client's own socket only its own.
const (
	serverSlab = 64 << 10
	clientSlab = 4 << 10
)

// keep copies data into the slab.
func (rd *reading) keep(data []byte) []byte {
	if cap(rd.slab)-len(rd.slab) < len(data) {
		rd.slab = make([]byte, 0, max(rd.slabSize, len(data)))
	}
	start := len(rd.slab)
	rd.slab = append(rd.slab, data...)
	return rd.slab[start:len(rd.slab):len(rd.slab)]
}

// handOver hands p's messages of the last datagram to its handler, and
// empties rd.hand for the next.
func (rd *reading) handOver(p *Peer) {
	p.handOver(rd.hand)
	clear(rd.hand)
	rd.hand = rd.hand[:0]
}

// handOver gives the handler, if one is set, what the inbox holds and
// then the messages of hand (which are newer: they went past the inbox
// once the handler was set); the reader calls it after each datagram,
// with p.mu not held (the handler may send and close).
func (p *Peer) handOver(hand []conn.Message) {
	h := p.handler.Load()
	if h == nil {
		return
	}
	// The inbox holds only what came before the handler was set (and at
	// most a datagram's worth that raced with Handle): its lock is not
	// taken a datagram for nothing.
	inboxed := p.inboxed.Load()
	if len(hand) == 0 && !inboxed {
		return
	}
	p.handleMu.Lock()
	defer p.handleMu.Unlock()
	if inboxed {
		p.inboxed.Store(false)
		for {
			m, ok := p.In.TryPop()
			if !ok {
				break
			}
			(*h)(m)
		}
	}
	for _, m := range hand {
		(*h)(m)
	}
}

package world

// link carries one direction's packets for every player with a fixed
// delay in frames: each frame's packets are copied, in order, into one
// arena, which the receiving side reads when they are due.
type link struct {
	batches []batch // by frame modulo len
}

// batch is one frame's packets on a link.
type batch struct {
	frame int
	data  []byte
	pkts  []linkPkt
}

// linkPkt is one packet of a batch: its player and its bytes in the
// batch's arena.
type linkPkt struct {
	to       int32 // index in worldSim.players
	off, end int32
}

// newLink returns a link that delays packets by delay frames.
func newLink(delay int) *link { return &link{batches: make([]batch, delay+2)} }

// push queues msg for player i, sent at frame f.
func (l *link) push(f int, i int32, msg []byte) {
	b := &l.batches[f%len(l.batches)]
	if b.frame != f {
		b.frame, b.data, b.pkts = f, b.data[:0], b.pkts[:0]
	}
	off := int32(len(b.data))
	b.data = append(b.data, msg...)
	b.pkts = append(b.pkts, linkPkt{i, off, int32(len(b.data))})
}

// sent calls fn for every packet sent at frame f, in order.
func (l *link) sent(f int, fn func(i int32, msg []byte)) {
	if f < 0 {
		return
	}
	b := &l.batches[f%len(l.batches)]
	if b.frame != f {
		return
	}
	for _, p := range b.pkts {
		fn(p.to, b.data[p.off:p.end:p.end])
	}
}

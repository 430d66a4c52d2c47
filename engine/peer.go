//go:build !js

package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/tokens"
	"github.com/tongbu/tongbu/transport"
)

// peer is one joined connection on the server.
type peer struct {
	conn   transport.Conn
	warmer transport.Warmer // conn, when it is one; else nil
	ticket Ticket
	wire   int // the wire version the client reads (SPEC.md §9.4)
	s      *Server
	// onEngine takes the engine messages the client sends (a world's
	// peers: a failed move); nil drops them.
	onEngine func(msg []byte)
	once     sync.Once
	joined   time.Time   // when it joined its room or world; zero while joining
	released atomic.Bool // no more resume credentials (resume_server.go)
	byed     atomic.Bool // the server told it to go (bye): it does not resume
	recvAt   uint64      // its messages received at its last credential refresh
	rq       resumeLink  // its place in the server's resumeQueue

	// What each message received touches, together (receive): where it
	// goes, and a token bucket on them (a flooding client loses its own
	// excess, nobody else's time). A transport.Handler's messages are
	// taken under rmu; rclosed, set as the connection closes, stops them.
	rmu     sync.Mutex
	rclosed bool
	bucket  tokens.Bucket
	deliver func(msg []byte, now time.Time)
}

const (
	peerRate  = 240 // messages per second a client may send
	peerBurst = 120
)

// allow takes a token for one received message.
func (p *peer) allow(now time.Time) bool { return p.bucket.Take(now, peerRate, peerBurst) }

// warm asks the CPU for what a send to the peer touches (transport.Warmer),
// when its connection can.
func (p *peer) warm() {
	if p.warmer != nil {
		p.warmer.Warm()
	}
}

// bye tells the client why it is being closed and closes it. The reliable
// channel delivers the message before the close when the client is still
// there; when it is not, the close alone is enough.
func (p *peer) bye(reason int, text string) {
	p.once.Do(func() {
		p.byed.Store(true)
		p.conn.SendReliable(appendBye(nil, reason, text))
		go func() { // let the bye leave before the connection goes
			select {
			case <-p.conn.Done():
			case <-time.After(byeLinger):
			}
			p.conn.Close()
		}()
	})
}

// byeLinger is how long a connection told to go stays open for the
// message to be delivered.
const byeLinger = 250 * time.Millisecond

// receive hands each of the peer's mode messages to deliver until its
// connection closes, then calls gone, once. Engine messages from clients
// go to onEngine, or are counted and dropped. A connection that can
// hand its messages over as they arrive and tell of its close (the lean
// stack's, a transport.Handler) does both in the transport's goroutines:
// no goroutine waits for it, and none wakes per message. Another is read
// by a goroutine of its own.
func (p *peer) receive(deliver func(msg []byte, now time.Time), gone func()) {
	p.deliver = deliver
	if h, ok := p.conn.(transport.Handler); ok {
		// The transport may be handing over a message as the connection
		// closes: rclosed, set under rmu, makes sure nothing is delivered
		// once gone runs (the slot may be someone else's then).
		h.Handle(p.handle)
		h.HandleClose(func() {
			p.rmu.Lock()
			p.rclosed = true
			p.rmu.Unlock()
			gone()
		})
		return
	}
	go func() {
		for {
			m, err := p.conn.Receive(context.Background())
			if err != nil {
				break
			}
			p.take(m)
		}
		gone()
	}()
}

// handle takes a message a transport.Handler hands over.
func (p *peer) handle(m transport.Message) {
	p.rmu.Lock()
	if !p.rclosed {
		p.take(m)
	}
	p.rmu.Unlock()
}

// take passes a received message on: to deliver, to onEngine, or
// counted and dropped.
func (p *peer) take(m transport.Message) {
	now := time.Now()
	switch {
	case !p.allow(now):
		p.s.metrics.drop("engine", "rate")
	case isEngine(m.Data) && p.onEngine != nil:
		p.onEngine(m.Data)
	case isEngine(m.Data):
		p.s.metrics.drop("engine", "unexpected")
	default:
		p.deliver(m.Data, now)
	}
}

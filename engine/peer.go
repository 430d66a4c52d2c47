//go:build !js

package engine

import (
	"context"
	"sync"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// peer is one joined connection on the server.
type peer struct {
	conn   transport.Conn
	ticket Ticket
	s      *Server
	once   sync.Once

	// A token bucket on received messages: a flooding client loses its own
	// excess, nobody else's time.
	tokens float64
	last   time.Time
}

const (
	peerRate  = 240 // messages per second a client may send
	peerBurst = 120
)

// allow takes a token for one received message.
func (p *peer) allow(now time.Time) bool {
	if p.last.IsZero() {
		p.tokens = peerBurst
	} else {
		p.tokens = min(peerBurst, p.tokens+now.Sub(p.last).Seconds()*peerRate)
	}
	p.last = now
	if p.tokens < 1 {
		return false
	}
	p.tokens--
	return true
}

// bye tells the client why it is being closed and closes it. The reliable
// channel delivers the message before the close when the client is still
// there; when it is not, the close alone is enough.
func (p *peer) bye(reason int, text string) {
	p.once.Do(func() {
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

// receive reads the peer's messages until its connection closes, handing
// each mode message to deliver. Engine messages from clients are not
// expected: they are counted and dropped. A connection that can hand its
// messages over as they arrive (the lean stack's) does so in its reading
// goroutine, and this one only waits for the close: no goroutine wakes
// per message.
func (p *peer) receive(deliver func(msg []byte, now time.Time)) {
	take := func(m transport.Message) {
		now := time.Now()
		switch {
		case !p.allow(now):
			p.s.metrics.drop("engine", "rate")
		case isEngine(m.Data):
			p.s.metrics.drop("engine", "unexpected")
		default:
			deliver(m.Data, now)
		}
	}
	if h, ok := p.conn.(transport.Handler); ok {
		// The transport may be handing over a message as the connection
		// closes: gone, set under mu, makes sure nothing is delivered
		// once receive returns (the slot may be someone else's then).
		var mu sync.Mutex
		gone := false
		h.Handle(func(m transport.Message) {
			mu.Lock()
			if !gone {
				take(m)
			}
			mu.Unlock()
		})
		<-p.conn.Done()
		mu.Lock()
		gone = true
		mu.Unlock()
		return
	}
	for {
		m, err := p.conn.Receive(context.Background())
		if err != nil {
			return
		}
		take(m)
	}
}

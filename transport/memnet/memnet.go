package memnet

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/timeq"
	"github.com/tongbu/tongbu/transport"
	"github.com/tongbu/tongbu/transport/internal/inbox"
)

// Network is an in-memory network with a seeded emulator of latency,
// jitter, loss, duplication, reordering and bandwidth. Its connections
// implement Conn, so anything built on Conn can be tested over it.
//
// Everything is driven by the time package: inside a testing/synctest
// bubble a minute of network time takes milliseconds and runs the same way
// every time. Each direction of each connection draws from its own random
// stream, seeded from the network's seed and the order in which
// connections were made, so a test that makes its connections in a fixed
// order sees the same losses and delays on every run.
type Network struct {
	seed     uint64
	mu       sync.Mutex
	nextLink uint64
	nextPeer transport.PeerID
}

// New returns an empty network whose randomness derives from seed.
func New(seed uint64) *Network {
	return &Network{seed: seed}
}

// Distribution is the shape of jitter.
type Distribution uint8

const (
	// Uniform jitter is uniform on [0, Jitter].
	Uniform Distribution = iota
	// Normal jitter is the absolute value of a normal sample with standard
	// deviation Jitter.
	Normal
	// Pareto jitter is heavy-tailed (shape 2.5) with mean Jitter: mostly
	// small, with rare long spikes, like a busy wireless link.
	Pareto
)

// GilbertElliott describes bursty loss as a two-state Markov chain: the
// link moves from good to bad with probability GoodToBad per packet and
// back with BadToGood, and loses a packet with LossGood or LossBad
// depending on its state.
type GilbertElliott struct {
	GoodToBad, BadToGood float64
	LossGood, LossBad    float64
}

// MeanLoss returns the long-run loss rate of the chain.
func (g GilbertElliott) MeanLoss() float64 {
	if g.GoodToBad+g.BadToGood == 0 {
		return g.LossGood
	}
	bad := g.GoodToBad / (g.GoodToBad + g.BadToGood)
	return (1-bad)*g.LossGood + bad*g.LossBad
}

// LinkConfig describes one direction of a connection. The zero value is a
// perfect link: no delay, no loss, unlimited bandwidth.
type LinkConfig struct {
	Latency time.Duration // one-way base delay
	Jitter  time.Duration // scale of the extra delay, shaped by Dist
	Dist    Distribution

	Loss  float64         // independent loss probability per unreliable message
	Burst *GilbertElliott // bursty loss; replaces Loss when set

	Duplicate    float64       // probability an unreliable message arrives twice
	Reorder      float64       // probability an unreliable message is held back by ReorderDelay
	ReorderDelay time.Duration // default 2 * Jitter + 10 ms

	// Bandwidth caps the link in bytes per second (0: unlimited). Messages
	// wait for the link; an unreliable message that would wait longer than
	// MaxQueueDelay is dropped and counted, as a WebRTC channel whose
	// buffered amount is over its threshold.
	Bandwidth     int
	MaxQueueDelay time.Duration // default 100 ms

	// MaxUnreliable is the largest unreliable message (default
	// DefaultMaxUnreliable).
	MaxUnreliable int

	// Record, when set, receives the fate of every message sent on the
	// link. Replay, when set, decides the fate of messages from a recorded
	// trace instead of the random model, until the trace runs out.
	Record *Trace
	Replay *Trace
}

func (c LinkConfig) withDefaults() LinkConfig {
	if c.ReorderDelay <= 0 {
		c.ReorderDelay = 2*c.Jitter + 10*time.Millisecond
	}
	if c.MaxQueueDelay <= 0 {
		c.MaxQueueDelay = 100 * time.Millisecond
	}
	if c.MaxUnreliable <= 0 {
		c.MaxUnreliable = transport.DefaultMaxUnreliable
	}
	return c
}

// Validate reports a configuration that cannot describe a link.
func (c LinkConfig) Validate() error {
	probs := []float64{c.Loss, c.Duplicate, c.Reorder}
	if b := c.Burst; b != nil {
		probs = append(probs, b.GoodToBad, b.BadToGood, b.LossGood, b.LossBad)
	}
	for _, p := range probs {
		if !(p >= 0 && p <= 1) {
			return fmt.Errorf("memnet: link probability %v not in [0, 1]", p)
		}
	}
	if c.Latency < 0 || c.Jitter < 0 || c.Bandwidth < 0 {
		return fmt.Errorf("memnet: negative latency, jitter or bandwidth")
	}
	return nil
}

// LinkStats counts what a link did to the messages sent on it.
type LinkStats struct {
	Sent       uint64 // messages handed to the link
	Lost       uint64 // unreliable messages lost
	Duplicated uint64
	Reordered  uint64        // unreliable messages held back
	Dropped    uint64        // unreliable messages dropped at a full queue
	Retransmit uint64        // reliable messages delayed by a simulated retransmission
	Delivered  uint64        // messages (copies) delivered
	DelaySum   time.Duration // sum of the one-way delays of delivered messages
}

// Pipe connects two endpoints: client sends over up, server over down.
// Both configurations are validated; Pipe panics on an invalid one, since
// that is a bug in the test or scenario that made it.
func (n *Network) Pipe(up, down LinkConfig) (client, server *Conn) {
	for _, c := range []LinkConfig{up, down} {
		if err := c.Validate(); err != nil {
			panic(err)
		}
	}
	n.mu.Lock()
	n.nextPeer += 2
	cid, sid := n.nextPeer-1, n.nextPeer
	ul, dl := n.nextLink, n.nextLink+1
	n.nextLink += 2
	n.mu.Unlock()
	client = newConn(cid)
	server = newConn(sid)
	client.out = newLink(up, rand.New(rand.NewPCG(n.seed, ul)), server)
	server.out = newLink(down, rand.New(rand.NewPCG(n.seed, dl)), client)
	client.peer, server.peer = server, client
	client.rtt = up.Latency + down.Latency
	server.rtt = client.rtt
	return client, server
}

// Conn is one end of an in-memory connection.
type Conn struct {
	id   transport.PeerID
	out  *link
	peer *Conn
	rtt  time.Duration

	in *inbox.Inbox[transport.Message]

	closeOnce sync.Once
	done      chan struct{}

	sentMsgs, sentBytes, recvMsgs, recvBytes, dropped atomic.Uint64
}

func newConn(id transport.PeerID) *Conn {
	c := &Conn{id: id, done: make(chan struct{})}
	c.in = inbox.New(c.done, 0, 0, func(m transport.Message) bool { return m.Channel == transport.Reliable }, transport.ErrClosed) // unbounded: the emulated links bound what is in flight
	return c
}

// ID returns the connection's peer id.
func (c *Conn) ID() transport.PeerID { return c.id }

// SendUnreliable sends msg on the emulated unreliable channel.
func (c *Conn) SendUnreliable(msg []byte) error { return c.send(transport.Unreliable, msg) }

// SendReliable sends msg on the emulated reliable channel: never lost,
// always in order, delayed by a retransmission when the link would have
// lost it.
func (c *Conn) SendReliable(msg []byte) error { return c.send(transport.Reliable, msg) }

func (c *Conn) send(ch transport.Channel, msg []byte) error {
	select {
	case <-c.done:
		return transport.ErrClosed
	default:
	}
	err := c.out.send(ch, msg)
	switch err {
	case nil:
		c.sentMsgs.Add(1)
		c.sentBytes.Add(uint64(len(msg)))
	case transport.ErrDropped:
		c.dropped.Add(1)
	}
	return err
}

// SetLink replaces the configuration of the connection's outbound link;
// messages already in flight keep their fate. Use it for a loss window or a
// latency spike in the middle of a test.
func (c *Conn) SetLink(cfg LinkConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	c.out.mu.Lock()
	c.out.cfg = cfg.withDefaults()
	c.out.model.cfg = c.out.cfg
	c.out.mu.Unlock()
	return nil
}

// LinkStats returns what the outbound link did so far.
func (c *Conn) LinkStats() LinkStats {
	c.out.mu.Lock()
	defer c.out.mu.Unlock()
	return c.out.stats
}

// Receive returns the next delivered message.
func (c *Conn) Receive(ctx context.Context) (transport.Message, error) {
	m, err := c.in.Pop(ctx)
	if err == nil {
		c.recvMsgs.Add(1)
		c.recvBytes.Add(uint64(len(m.Data)))
	}
	return m, err
}

// TryReceive returns the next delivered message without waiting.
func (c *Conn) TryReceive() (transport.Message, bool) {
	m, ok := c.in.TryPop()
	if ok {
		c.recvMsgs.Add(1)
		c.recvBytes.Add(uint64(len(m.Data)))
	}
	return m, ok
}

// Close closes both ends: the peer sees its Done closed too, as it would
// when a real connection is torn down.
func (c *Conn) Close() error {
	c.closeLocal()
	if c.peer != nil {
		c.peer.closeLocal()
	}
	return nil
}

func (c *Conn) closeLocal() {
	c.closeOnce.Do(func() {
		close(c.done)
		c.out.close()
		c.in.Clear()
	})
}

// Done is closed when the connection closes.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Stats returns the connection's counters. RTT is the sum of the two
// links' base latencies.
func (c *Conn) Stats() transport.Stats {
	return transport.Stats{
		RTT:               c.rtt,
		SentMessages:      c.sentMsgs.Load(),
		SentBytes:         c.sentBytes.Load(),
		RecvMessages:      c.recvMsgs.Load(),
		RecvBytes:         c.recvBytes.Load(),
		DroppedUnreliable: c.dropped.Load(),
	}
}

// link is one direction: it decides each message's fate and delivers it to
// dst when its time comes, in order of arrival time.
type link struct {
	mu           sync.Mutex
	cfg          LinkConfig
	model        LinkModel
	busyUntil    time.Time
	lastReliable time.Time
	q            timeq.Queue[pkt]
	timer        *time.Timer
	timerAt      time.Time
	dst          *Conn
	closed       bool
	stats        LinkStats
}

type pkt struct {
	at   time.Time
	sent time.Time
	msg  transport.Message
}

func newLink(cfg LinkConfig, rng *rand.Rand, dst *Conn) *link {
	cfg = cfg.withDefaults()
	return &link{cfg: cfg, model: LinkModel{cfg: cfg, rng: rng}, dst: dst}
}

// maxRetransmits bounds the simulated retransmissions of one reliable
// message.
const maxRetransmits = 8

func (l *link) send(ch transport.Channel, msg []byte) error {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return transport.ErrClosed
	}
	cfg := &l.cfg
	if ch == transport.Unreliable && len(msg) > cfg.MaxUnreliable {
		return fmt.Errorf("%w: %d bytes > %d", transport.ErrTooLarge, len(msg), cfg.MaxUnreliable)
	}
	depart := now
	if cfg.Bandwidth > 0 {
		if l.busyUntil.After(now) {
			depart = l.busyUntil
		}
		if ch == transport.Unreliable && depart.Sub(now) > cfg.MaxQueueDelay {
			l.stats.Dropped++
			return transport.ErrDropped
		}
		depart = depart.Add(time.Duration(float64(len(msg)) / float64(cfg.Bandwidth) * float64(time.Second)))
		l.busyUntil = depart
	}
	l.stats.Sent++
	fate := l.model.Fate(ch)
	l.model.count(&l.stats)
	if cfg.Record != nil {
		cfg.Record.add(fate)
	}
	data := append([]byte(nil), msg...)
	if fate.Lost {
		l.stats.Lost++
		return nil // the sender cannot tell
	}
	at := depart.Add(fate.Delay)
	if ch == transport.Reliable {
		if at.Before(l.lastReliable) {
			at = l.lastReliable // ordered: never overtakes an earlier reliable message
		}
		l.lastReliable = at
	}
	l.push(pkt{at: at, sent: now, msg: transport.Message{Channel: ch, Data: data}})
	if fate.Dup {
		l.stats.Duplicated++
		l.push(pkt{at: at.Add(l.model.jitter() / 2), sent: now, msg: transport.Message{Channel: ch, Data: append([]byte(nil), data...)}})
	}
	return nil
}

// LinkModel decides the fate of each message on one emulated link (loss,
// delay, duplication, reordering) and keeps no clock: the in-memory network
// uses it with real timers, and a simulator with virtual time can use it
// directly. It is not safe for concurrent use.
type LinkModel struct {
	cfg LinkConfig
	rng *rand.Rand
	bad bool // Gilbert-Elliott state

	reordered, retransmit uint64 // since the last count (the link counts losses itself)
}

// NewLinkModel returns the model of a link with cfg, seeded.
func NewLinkModel(cfg LinkConfig, seed uint64) (*LinkModel, error) {
	if err := cfg.Validate(); err != nil {
		return nil, errstack.With(err)
	}
	return &LinkModel{cfg: cfg.withDefaults(), rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}, nil
}

// Fate decides what happens to one message on ch: from the replayed trace
// while it lasts, else from the model. A reliable message is never lost:
// the loss a real path would inflict becomes retransmission delay.
func (m *LinkModel) Fate(ch transport.Channel) TraceEvent {
	cfg := &m.cfg
	if cfg.Replay != nil {
		if ev, ok := cfg.Replay.next(); ok {
			if ch == transport.Reliable {
				ev.Lost, ev.Dup = false, false
			}
			return ev
		}
	}
	ev := TraceEvent{Delay: cfg.Latency + m.jitter()}
	if ch == transport.Reliable {
		for range maxRetransmits {
			if !m.lose() {
				break
			}
			m.retransmit++
			ev.Delay += max(2*cfg.Latency, 200*time.Millisecond)
		}
		return ev
	}
	if m.lose() {
		ev.Lost = true
		return ev
	}
	if cfg.Reorder > 0 && m.rng.Float64() < cfg.Reorder {
		m.reordered++
		ev.Delay += cfg.ReorderDelay
	}
	ev.Dup = cfg.Duplicate > 0 && m.rng.Float64() < cfg.Duplicate
	return ev
}

// count moves the model's counters into stats.
func (m *LinkModel) count(st *LinkStats) {
	st.Reordered += m.reordered
	st.Retransmit += m.retransmit
	m.reordered, m.retransmit = 0, 0
}

func (m *LinkModel) lose() bool {
	cfg := &m.cfg
	if b := cfg.Burst; b != nil {
		if m.bad {
			if m.rng.Float64() < b.BadToGood {
				m.bad = false
			}
		} else if m.rng.Float64() < b.GoodToBad {
			m.bad = true
		}
		p := b.LossGood
		if m.bad {
			p = b.LossBad
		}
		return p > 0 && m.rng.Float64() < p
	}
	return cfg.Loss > 0 && m.rng.Float64() < cfg.Loss
}

func (m *LinkModel) jitter() time.Duration {
	j := float64(m.cfg.Jitter)
	if j == 0 {
		return 0
	}
	switch m.cfg.Dist {
	case Normal:
		return time.Duration(math.Abs(m.rng.NormFloat64()) * j)
	case Pareto:
		const shape = 2.5
		scale := j * (shape - 1) / shape // so that the excess has mean j
		u := 1 - m.rng.Float64()         // (0, 1]
		return time.Duration(scale*math.Pow(u, -1/shape) - scale)
	default:
		return time.Duration(m.rng.Float64() * j)
	}
}

// push queues a message and arms the timer for the earliest one.
func (l *link) push(p pkt) {
	l.q.Push(p.at, p)
	l.arm()
}

func (l *link) arm() {
	at, ok := l.q.Next()
	if !ok {
		return
	}
	if l.timer != nil && !l.timerAt.After(at) {
		return // already armed for this or earlier
	}
	d := time.Until(at)
	l.timerAt = at
	if l.timer == nil {
		l.timer = time.AfterFunc(d, l.fire)
	} else {
		l.timer.Reset(d)
	}
}

func (l *link) fire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	now := time.Now()
	for {
		p, ok := l.q.PopDue(now)
		if !ok {
			break
		}
		l.stats.Delivered++
		l.stats.DelaySum += now.Sub(p.sent)
		l.dst.in.Push(p.msg)
	}
	l.timer = nil
	if l.q.Len() > 0 {
		l.timerAt = time.Time{}
		l.arm()
	}
}

func (l *link) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	l.q.Clear()
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
}

package seal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Stats counts a process's sealed messages: those opened, and those
// dropped by why. Its fields are safe for concurrent use.
type Stats struct {
	Opened   atomic.Uint64 // opened and taken
	Forged   atomic.Uint64 // ErrForged: not sealed with a secret of the cluster, altered, or not parsing
	Stale    atomic.Uint64 // ErrStale
	Replayed atomic.Uint64 // ErrReplayed
	// Refused counts messages that opened but that their sender may not
	// send: a heartbeat for another node than its sender, a reply from
	// another process than the one asked (Conn.Refuse).
	Refused atomic.Uint64
}

// Dropped returns the counts of messages dropped, by reason, for the
// metrics: "forged", "stale", "replayed", "refused".
func (s *Stats) Dropped() map[string]uint64 {
	return map[string]uint64{"forged": s.Forged.Load(), "stale": s.Stale.Load(), "replayed": s.Replayed.Load(), "refused": s.Refused.Load()}
}

// Config tunes a Conn; the zero value is the default.
type Config struct {
	// MaxSkew is how far from this clock a message's time may be
	// (default DefaultMaxSkew).
	MaxSkew time.Duration
	// Stats, when set, is where the Conn counts (several Conns of one
	// process may share it).
	Stats *Stats
	// Logger receives a line for the messages dropped, at most one a
	// reason every 10 s (default: discarded).
	Logger *slog.Logger
	// Name starts the log lines ("cluster", "matchmaker").
	Name string
}

// Conn sends and receives sealed messages on a NATS connection, as one
// sender. Its methods are safe for concurrent use.
type Conn struct {
	nc    *nats.Conn
	keys  *Keys
	s     *Sender
	cache *aeads
	skew  time.Duration
	stats *Stats
	log   *slog.Logger
	name  string
	drops dropLog

	mu      sync.Mutex
	inbox   string
	mux     *nats.Subscription
	replies *Opener
	calls   map[string]*call
	next    uint64
	closed  bool
}

// NewConn returns a Conn on nc that seals as role id (a new instance)
// with keys.
func NewConn(nc *nats.Conn, keys *Keys, role Role, id string, cfg Config) (*Conn, error) {
	s, err := keys.NewSender(role, id)
	if err != nil {
		return nil, err
	}
	if cfg.MaxSkew <= 0 {
		cfg.MaxSkew = DefaultMaxSkew
	}
	if cfg.Stats == nil {
		cfg.Stats = &Stats{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Name == "" {
		cfg.Name = "seal"
	}
	c := &Conn{nc: nc, keys: keys, s: s, cache: &aeads{}, skew: cfg.MaxSkew, stats: cfg.Stats, log: cfg.Logger, name: cfg.Name,
		calls: map[string]*call{}}
	c.replies = newOpener(keys, c.cache, cfg.MaxSkew)
	return c, nil
}

// NC returns the NATS connection.
func (c *Conn) NC() *nats.Conn { return c.nc }

// Peer returns the name this Conn seals as.
func (c *Conn) Peer() Peer { return c.s.peer }

// Stats returns the Conn's counters.
func (c *Conn) Stats() *Stats { return c.stats }

// Keys returns the Conn's keys.
func (c *Conn) Keys() *Keys { return c.keys }

// Publish seals payload for subject and publishes it. NATS copies it
// before Publish returns.
func (c *Conn) Publish(subject string, payload []byte) error {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.nc.Publish(subject, c.s.seal(subject, nil, payload, time.Now()))
}

// Msg is a sealed message that opened.
type Msg struct {
	Subject string
	Data    []byte // the payload, the receiver's to keep
	From    Peer
	reply   string
	tag     []byte
	c       *Conn
}

// Respond seals payload as the reply to m (bound to it) and publishes it
// to m's reply subject; a message that asked for none gets nothing.
func (m *Msg) Respond(payload []byte) error {
	if m.reply == "" {
		return nil
	}
	c := m.c
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return c.nc.Publish(m.reply, c.s.seal(m.reply, m.tag, payload, time.Now()))
}

// Asks reports whether m is a request (it has a reply subject).
func (m *Msg) Asks() bool { return m.reply != "" }

// Subscribe calls fn, on the subscription's goroutine, with every
// message on subject that opens and is fresh; the others are dropped,
// counted and logged. Each subscription keeps its own replay windows.
func (c *Conn) Subscribe(subject string, fn func(*Msg)) (*nats.Subscription, error) {
	o := newOpener(c.keys, c.cache, c.skew)
	return c.nc.Subscribe(subject, func(m *nats.Msg) { c.deliver(o, m, fn) })
}

// QueueSubscribe is Subscribe in queue group queue.
func (c *Conn) QueueSubscribe(subject, queue string, fn func(*Msg)) (*nats.Subscription, error) {
	o := newOpener(c.keys, c.cache, c.skew)
	return c.nc.QueueSubscribe(subject, queue, func(m *nats.Msg) { c.deliver(o, m, fn) })
}

func (c *Conn) deliver(o *Opener, m *nats.Msg, fn func(*Msg)) {
	from, data, err := o.Open(nil, m.Subject, m.Data, time.Now())
	if err != nil {
		c.dropped(m.Subject, m.Data, err)
		return
	}
	c.stats.Opened.Add(1)
	fn(&Msg{Subject: m.Subject, Data: data, From: from, reply: m.Reply, tag: TagOf(m.Data), c: c})
}

// Refuse counts and logs m, which opened but which its sender may not
// send (a heartbeat for another node than its sender, say), for the
// caller that drops it.
func (c *Conn) Refuse(m *Msg, why string) {
	c.stats.Refused.Add(1)
	c.drops.note(c, "refused", m.Subject, m.From, why)
}

// dropped counts and logs a message that did not open.
func (c *Conn) dropped(subject string, msg []byte, err error) {
	reason := "forged"
	switch {
	case errors.Is(err, ErrStale):
		reason = "stale"
		c.stats.Stale.Add(1)
	case errors.Is(err, ErrReplayed):
		reason = "replayed"
		c.stats.Replayed.Add(1)
	default:
		c.stats.Forged.Add(1)
	}
	p, _ := Claimed(msg)
	c.drops.note(c, reason, subject, p, err.Error())
}

// dropLog bounds the log lines about dropped messages: one a reason
// every dropLogEvery, with the count since the last.
type dropLog struct {
	mu    sync.Mutex
	last  map[string]time.Time
	count map[string]int
}

const dropLogEvery = 10 * time.Second

func (d *dropLog) note(c *Conn, reason, subject string, claimed Peer, why string) {
	now := time.Now()
	d.mu.Lock()
	if d.last == nil {
		d.last, d.count = map[string]time.Time{}, map[string]int{}
	}
	d.count[reason]++
	if now.Sub(d.last[reason]) < dropLogEvery {
		d.mu.Unlock()
		return
	}
	n := d.count[reason]
	d.last[reason], d.count[reason] = now, 0
	d.mu.Unlock()
	c.log.Warn(c.name+": NATS messages dropped", "reason", reason, "count", n, "subject", subject,
		"claimed_sender", claimed.ID, "claimed_role", claimed.Role.String(), "err", why)
}

// call is a request waiting for its reply.
type call struct {
	tag    []byte
	accept func(*Msg) bool
	ch     chan *Msg
	none   chan struct{} // NATS said no one subscribes
}

// noRespondersGrace is how long a request told "no responders" still
// waits for a reply: the status is NATS's, and anyone who sees the
// request's reply subject can send one, so it is taken only when no
// real reply follows soon.
const noRespondersGrace = 250 * time.Millisecond

// Request seals payload for subject, publishes it with a reply subject
// of this Conn's, and waits until ctx ends for the first reply that
// opens, answers this request and that accept takes (nil: any; accept
// checks its sender, and may look at its payload);
// others are dropped and counted, so that a forged or replayed reply
// cannot stand in for the real one. It fails with nats.ErrNoResponders
// when NATS says no one subscribes to subject and no reply comes within
// a moment, and with ctx's error when ctx ends first.
func (c *Conn) Request(ctx context.Context, subject string, payload []byte, accept func(*Msg) bool) (*Msg, error) {
	cl := &call{accept: accept, ch: make(chan *Msg, 1), none: make(chan struct{}, 1)}
	token, err := c.register(cl)
	if err != nil {
		return nil, err
	}
	defer func() {
		c.mu.Lock()
		delete(c.calls, token)
		c.mu.Unlock()
	}()
	c.s.mu.Lock()
	b := c.s.seal(subject, nil, payload, time.Now())
	cl.tag = append([]byte(nil), TagOf(b)...)
	err = c.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: c.inbox + "." + token, Data: b})
	c.s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var grace <-chan time.Time
	for {
		select {
		case m := <-cl.ch:
			return m, nil
		case <-cl.none:
			if grace == nil {
				t := time.NewTimer(noRespondersGrace)
				defer t.Stop()
				grace = t.C
			}
		case <-grace:
			return nil, nats.ErrNoResponders
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// register gives cl a token on this Conn's reply subscription, which it
// makes at the first request.
func (c *Conn) register(cl *call) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return "", nats.ErrConnectionClosed
	}
	if c.mux == nil {
		inbox := c.nc.NewInbox()
		sub, err := c.nc.Subscribe(inbox+".*", c.onReply)
		if err != nil {
			return "", err
		}
		c.inbox, c.mux = inbox, sub
	}
	c.next++
	token := strconv.FormatUint(c.next, 36)
	c.calls[token] = cl
	return token, nil
}

// onReply takes a message on the reply subscription.
func (c *Conn) onReply(m *nats.Msg) {
	if len(m.Subject) <= len(c.inbox)+1 {
		return
	}
	token := m.Subject[len(c.inbox)+1:]
	c.mu.Lock()
	cl := c.calls[token]
	c.mu.Unlock()
	if cl == nil {
		return // a late reply (its request timed out), or one to nothing
	}
	if len(m.Data) == 0 && m.Header.Get("Status") == "503" {
		select {
		case cl.none <- struct{}{}:
		default:
		}
		return
	}
	from, data, err := c.replies.OpenReply(nil, m.Subject, cl.tag, m.Data, time.Now())
	if err != nil {
		c.dropped(m.Subject, m.Data, err)
		return
	}
	msg := &Msg{Subject: m.Subject, Data: data, From: from, c: c}
	if cl.accept != nil && !cl.accept(msg) {
		c.Refuse(msg, "a reply from a process that was not asked")
		return
	}
	c.stats.Opened.Add(1)
	select {
	case cl.ch <- msg:
	default: // a second reply to one request: the first was taken
	}
}

// Close ends the reply subscription; the NATS connection stays open.
func (c *Conn) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.mux != nil {
		c.mux.Unsubscribe()
	}
}

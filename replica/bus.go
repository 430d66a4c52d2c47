package replica

import (
	"fmt"
	"math/rand/v2"
	"sync"
)

// Bus carries replica messages between processes: subject-addressed, unordered, may lose messages.
type Bus interface {
	// Publish sends msg to every current subscriber of subject. The bus may keep a reference to msg only until Publish returns.
	Publish(subject string, msg []byte) error
	// Subscribe calls fn for every message published on subject, from one goroutine per subscription, until the returned cancel func is called. fn must not retain msg after it returns.
	Subscribe(subject string, fn func(msg []byte)) (cancel func(), err error)
}

// LocalBusConfig makes a LocalBus misbehave on purpose, for tests: each
// delivery to each subscription is decided by a PRNG seeded with Seed.
type LocalBusConfig struct {
	// Seed seeds the PRNG that decides loss, reordering and duplication.
	Seed uint64
	// Loss is the probability that a delivery is dropped.
	Loss float64
	// Reorder is the probability that a delivery is held back and handed
	// over after the next message to the same subscription.
	Reorder float64
	// Duplicate is the probability that a delivery is handed over twice.
	Duplicate float64
	// QueueLimit caps the messages waiting for one subscription; a message
	// over it is dropped (default 65536).
	QueueLimit int
}

// LocalBusStats counts what a LocalBus carried.
type LocalBusStats struct {
	Published uint64 // Publish calls
	Delivered uint64 // messages handed to a subscription's queue, copies included
	Bytes     uint64 // bytes of the messages Delivered counts
	Dropped   uint64 // deliveries dropped by Loss or by a full queue
}

// LocalBus is the in-process Bus: it copies each message into the queue of
// every subscription of its subject, and a goroutine per subscription hands
// them to the callback in order (unless the config reorders them). It is safe
// for concurrent use.
type LocalBus struct {
	mu       sync.Mutex
	idle     *sync.Cond // signalled when inflight drops to zero
	cfg      LocalBusConfig
	rng      *rand.Rand
	subs     map[string][]*localSub
	inflight int // messages queued or being handled
	stats    LocalBusStats
	closed   bool
}

type localSub struct {
	subject string
	fn      func([]byte)
	queue   [][]byte
	held    []byte // a message held back by Reorder
	wake    chan struct{}
	done    chan struct{}
	gone    bool
}

// NewLocalBus returns a LocalBus that delivers every message once, in order
// per subscription.
func NewLocalBus() *LocalBus { return NewLocalBusWithConfig(LocalBusConfig{}) }

// NewLocalBusWithConfig returns a LocalBus that loses, reorders and
// duplicates deliveries as cfg says.
func NewLocalBusWithConfig(cfg LocalBusConfig) *LocalBus {
	if cfg.QueueLimit <= 0 {
		cfg.QueueLimit = 1 << 16
	}
	b := &LocalBus{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		subs: make(map[string][]*localSub),
	}
	b.idle = sync.NewCond(&b.mu)
	return b
}

// Publish implements Bus.
func (b *LocalBus) Publish(subject string, msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return fmt.Errorf("%w: publish on %q", ErrClosed, subject)
	}
	b.stats.Published++
	for _, s := range b.subs[subject] {
		if b.cfg.Loss > 0 && b.rng.Float64() < b.cfg.Loss {
			b.stats.Dropped++
			continue
		}
		copies := 1
		if b.cfg.Duplicate > 0 && b.rng.Float64() < b.cfg.Duplicate {
			copies = 2
		}
		for range copies {
			m := append([]byte(nil), msg...)
			switch {
			case s.held != nil:
				b.enqueue(s, m)
				b.enqueue(s, s.held)
				s.held = nil
			case b.cfg.Reorder > 0 && b.rng.Float64() < b.cfg.Reorder:
				s.held = m
			default:
				b.enqueue(s, m)
			}
		}
	}
	return nil
}

func (b *LocalBus) enqueue(s *localSub, m []byte) {
	if len(s.queue) >= b.cfg.QueueLimit {
		b.stats.Dropped++
		return
	}
	s.queue = append(s.queue, m)
	b.inflight++
	b.stats.Delivered++
	b.stats.Bytes += uint64(len(m))
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Subscribe implements Bus.
func (b *LocalBus) Subscribe(subject string, fn func(msg []byte)) (func(), error) {
	if fn == nil {
		return nil, fmt.Errorf("%w: nil callback for %q", ErrConfig, subject)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, fmt.Errorf("%w: subscribe to %q", ErrClosed, subject)
	}
	s := &localSub{subject: subject, fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	b.subs[subject] = append(b.subs[subject], s)
	go b.run(s)
	var once sync.Once
	return func() { once.Do(func() { b.cancel(s) }) }, nil
}

func (b *LocalBus) run(s *localSub) {
	for {
		select {
		case <-s.done:
			return
		case <-s.wake:
		}
		for {
			b.mu.Lock()
			if s.gone || len(s.queue) == 0 {
				b.mu.Unlock()
				break
			}
			m := s.queue[0]
			s.queue[0] = nil
			s.queue = s.queue[1:]
			b.mu.Unlock()
			s.fn(m)
			b.mu.Lock()
			b.done1()
			b.mu.Unlock()
		}
	}
}

// done1 retires one in-flight message; b.mu is held.
func (b *LocalBus) done1() {
	if b.inflight--; b.inflight == 0 {
		b.idle.Broadcast()
	}
}

func (b *LocalBus) cancel(s *localSub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.remove(s)
}

// remove detaches s and retires what it still had queued; b.mu is held.
func (b *LocalBus) remove(s *localSub) {
	if s.gone {
		return
	}
	s.gone = true
	list := b.subs[s.subject]
	for i, x := range list {
		if x == s {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(b.subs, s.subject)
	} else {
		b.subs[s.subject] = list
	}
	for range s.queue {
		b.done1()
	}
	s.queue, s.held = nil, nil
	close(s.done)
}

// Drain hands over every message held back by Reorder and blocks until
// every message published so far, and every message the callbacks publish
// meanwhile, has been handled or dropped. Tests and simulations call it to
// let traffic settle; it must not be called from a callback.
func (b *LocalBus) Drain() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		for _, list := range b.subs {
			for _, s := range list {
				if s.held != nil {
					b.enqueue(s, s.held)
					s.held = nil
				}
			}
		}
		if b.inflight == 0 {
			return
		}
		b.idle.Wait()
	}
}

// Stats returns what the bus carried so far.
func (b *LocalBus) Stats() LocalBusStats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Close cancels every subscription and refuses further use.
func (b *LocalBus) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, list := range b.subs {
		for _, s := range list {
			b.remove(s)
		}
	}
	return nil
}

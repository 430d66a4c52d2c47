// Package inbox queues a connection's received messages for one reader:
// the lean stack's connections and the in-memory network's share it.
package inbox

import (
	"context"
	"sync"
)

// Inbox queues received messages of type M for one reader. Unreliable
// messages beyond maxUnrel queued are dropped (the reader is behind; newer
// data will follow); a reliable push waits for room, which pushes back on
// the sender through the channel's flow control. A bound of 0 is no bound.
type Inbox[M any] struct {
	mu       sync.Mutex
	q        []M
	head     int
	unrel    int // unreliable messages queued
	maxUnrel int
	maxRel   int
	reliable func(M) bool  // which channel a message came on
	closed   error         // what Pop returns once done is closed
	notify   chan struct{} // a message was queued
	room     chan struct{} // a message was taken
	done     <-chan struct{}
	dropped  uint64
}

// New returns an inbox for a connection that is over once done is closed
// (Pop then returns closed); reliable tells a message's channel.
func New[M any](done <-chan struct{}, maxUnrel, maxRel int, reliable func(M) bool, closed error) *Inbox[M] {
	return &Inbox[M]{
		notify: make(chan struct{}, 1), room: make(chan struct{}, 1), done: done,
		maxUnrel: maxUnrel, maxRel: maxRel, reliable: reliable, closed: closed,
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Push queues m. It returns false when m was dropped or the inbox closed.
// A reliable message waits for room.
func (b *Inbox[M]) Push(m M) bool {
	for {
		switch b.add(m) {
		case added:
			return true
		case droppedUnrel:
			return false
		}
		select { // wait for the reader to take something
		case <-b.room:
		case <-b.done:
			return false
		}
	}
}

// Offer queues m without waiting: it returns false when m's channel is
// over its bound (an unreliable message is then counted dropped). The lean
// stack's reader, which serves every peer, must never wait for one.
func (b *Inbox[M]) Offer(m M) bool { return b.add(m) == added }

type addResult uint8

const (
	added addResult = iota
	droppedUnrel
	fullRel
)

// add queues m if its channel has room.
func (b *Inbox[M]) add(m M) addResult {
	rel := b.reliable(m)
	b.mu.Lock()
	n := len(b.q) - b.head
	switch {
	case !rel && b.maxUnrel > 0 && b.unrel >= b.maxUnrel:
		b.dropped++
		b.mu.Unlock()
		return droppedUnrel
	case rel && b.maxRel > 0 && n-b.unrel >= b.maxRel:
		b.mu.Unlock()
		return fullRel
	}
	if !rel {
		b.unrel++
	}
	b.q = append(b.q, m)
	b.mu.Unlock()
	signal(b.notify)
	return added
}

// TryPop returns the oldest message without waiting.
func (b *Inbox[M]) TryPop() (M, bool) {
	var zero M
	b.mu.Lock()
	if b.head == len(b.q) {
		b.mu.Unlock()
		return zero, false
	}
	m := b.q[b.head]
	b.q[b.head] = zero
	b.head++
	if b.head == len(b.q) {
		b.q, b.head = b.q[:0], 0
	}
	if !b.reliable(m) {
		b.unrel--
	}
	b.mu.Unlock()
	signal(b.room)
	return m, true
}

// Pop returns the oldest message, waiting for one.
func (b *Inbox[M]) Pop(ctx context.Context) (M, error) {
	var zero M
	for {
		if m, ok := b.TryPop(); ok {
			return m, nil
		}
		select {
		case <-b.notify:
		case <-b.done:
			return zero, b.closed
		case <-ctx.Done():
			return zero, ctx.Err()
		}
	}
}

// Clear drops everything queued.
func (b *Inbox[M]) Clear() {
	b.mu.Lock()
	b.q, b.head, b.unrel = nil, 0, 0
	b.mu.Unlock()
}

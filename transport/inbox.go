package transport

import (
	"context"
	"sync"
)

// inbox queues received messages for one reader. Unreliable messages beyond
// maxUnreliable queued are dropped (the reader is behind; newer data will
// follow); a reliable push waits for room, which pushes back on the
// sender through the channel's flow control.
type inbox struct {
	mu       sync.Mutex
	q        []Message
	head     int
	unrel    int // unreliable messages queued
	maxUnrel int
	maxRel   int
	notify   chan struct{} // a message was queued
	room     chan struct{} // a message was taken
	done     <-chan struct{}
	dropped  uint64
}

func newInbox(done <-chan struct{}, maxUnrel, maxRel int) *inbox {
	return &inbox{
		notify: make(chan struct{}, 1), room: make(chan struct{}, 1), done: done,
		maxUnrel: maxUnrel, maxRel: maxRel,
	}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues m. It returns false when m was dropped or the inbox closed.
// A reliable message waits for room.
func (b *inbox) push(m Message) bool {
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

// offer queues m without waiting: it returns false when m's channel is
// over its bound (an unreliable message is then counted dropped). The lean
// stack's reader, which serves every peer, must never wait for one.
func (b *inbox) offer(m Message) bool { return b.add(m) == added }

type addResult uint8

const (
	added addResult = iota
	droppedUnrel
	fullRel
)

// add queues m if its channel has room.
func (b *inbox) add(m Message) addResult {
	b.mu.Lock()
	n := len(b.q) - b.head
	switch {
	case m.Channel == Unreliable && b.maxUnrel > 0 && b.unrel >= b.maxUnrel:
		b.dropped++
		b.mu.Unlock()
		return droppedUnrel
	case m.Channel == Reliable && b.maxRel > 0 && n-b.unrel >= b.maxRel:
		b.mu.Unlock()
		return fullRel
	}
	if m.Channel == Unreliable {
		b.unrel++
	}
	b.q = append(b.q, m)
	b.mu.Unlock()
	signal(b.notify)
	return added
}

// tryPop returns the oldest message without waiting.
func (b *inbox) tryPop() (Message, bool) {
	b.mu.Lock()
	if b.head == len(b.q) {
		b.mu.Unlock()
		return Message{}, false
	}
	m := b.q[b.head]
	b.q[b.head] = Message{}
	b.head++
	if b.head == len(b.q) {
		b.q, b.head = b.q[:0], 0
	}
	if m.Channel == Unreliable {
		b.unrel--
	}
	b.mu.Unlock()
	signal(b.room)
	return m, true
}

// pop returns the oldest message, waiting for one.
func (b *inbox) pop(ctx context.Context) (Message, error) {
	for {
		if m, ok := b.tryPop(); ok {
			return m, nil
		}
		select {
		case <-b.notify:
		case <-b.done:
			return Message{}, ErrClosed
		case <-ctx.Done():
			return Message{}, ctx.Err()
		}
	}
}

// clear drops everything queued.
func (b *inbox) clear() {
	b.mu.Lock()
	b.q, b.head, b.unrel = nil, 0, 0
	b.mu.Unlock()
}

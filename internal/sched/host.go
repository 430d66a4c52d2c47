package sched

import (
	"sync"
	"time"
)

// Loop is a game loop a Host runs: a room's or a world's. Its methods are
// called on the Scheduler's workers, one at a time, so it needs no lock.
type Loop[P any] interface {
	// Take applies the packets that arrived since the last tick, in the
	// order they arrived. The slice is reused once Take returns.
	Take(in []P)
	// Tick runs what is due at now and returns when the loop next needs
	// to run.
	Tick(now time.Time) time.Time
	// Stop is the loop's last call, after Close.
	Stop()
}

// Host runs a Loop as a Scheduler job. Any goroutine may queue work for
// the loop (Do) and packets for it (Deliver); on each run the worker does
// the queued work, then hands the loop the packets, then ticks it.
type Host[P any] struct {
	loop Loop[P]

	mu     sync.Mutex
	ctl    []func()
	inbox  []P
	closed bool

	spare []P // owned by the worker
}

// NewHost wraps loop for a Scheduler: s.Add(host, firstTick).
func NewHost[P any](loop Loop[P]) *Host[P] { return &Host[P]{loop: loop} }

// Do queues f to run on the loop's worker before its next tick. It
// reports false, and drops f, once the host is closed.
func (h *Host[P]) Do(f func()) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.ctl = append(h.ctl, f)
	return true
}

// Deliver queues a packet for the loop's next tick.
func (h *Host[P]) Deliver(p P) {
	h.mu.Lock()
	h.inbox = append(h.inbox, p)
	h.mu.Unlock()
}

// Close ends the loop: its next run calls Stop and leaves the scheduler,
// and queued work is dropped. It reports whether this call closed it.
func (h *Host[P]) Close() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.closed
	h.closed = true
	return !was
}

// Run is the Job: the queued work, the packets, the tick.
func (h *Host[P]) Run(now time.Time) time.Time {
	h.mu.Lock()
	ctl, in, closed := h.ctl, h.inbox, h.closed
	h.ctl, h.inbox = nil, h.spare[:0]
	h.mu.Unlock()
	if closed {
		h.loop.Stop()
		return time.Time{}
	}
	for _, f := range ctl {
		f()
	}
	h.loop.Take(in)
	clear(in)
	h.spare = in[:0]
	return h.loop.Tick(now)
}

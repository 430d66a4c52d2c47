// Package timeq is a time-ordered queue: the scheduler's jobs, the
// in-memory network's packets in flight and the simulators' events all
// wait in one.
package timeq

import "time"

// Queue holds values until their time: Pop returns the earliest, and of
// those with the same time, the one pushed first. The zero value is an
// empty queue. It is not safe for concurrent use.
type Queue[T any] struct {
	h   []entry[T] // a binary min-heap by (at, seq)
	seq uint64
}

type entry[T any] struct {
	at  time.Time
	seq uint64
	v   T
}

func (e *entry[T]) before(o *entry[T]) bool {
	if c := e.at.Compare(o.at); c != 0 {
		return c < 0
	}
	return e.seq < o.seq
}

// Len returns how many values wait.
func (q *Queue[T]) Len() int { return len(q.h) }

// Push adds v, due at at.
func (q *Queue[T]) Push(at time.Time, v T) {
	q.seq++
	q.h = append(q.h, entry[T]{at: at, seq: q.seq, v: v})
	q.up(len(q.h) - 1)
}

// Next returns the earliest time in the queue; ok is false when it is
// empty.
func (q *Queue[T]) Next() (at time.Time, ok bool) {
	if len(q.h) == 0 {
		return time.Time{}, false
	}
	return q.h[0].at, true
}

// Pop removes and returns the earliest value and its time. The queue must
// not be empty.
func (q *Queue[T]) Pop() (time.Time, T) {
	top := q.h[0]
	last := len(q.h) - 1
	q.h[0] = q.h[last]
	q.h[last] = entry[T]{} // let the value go
	q.h = q.h[:last]
	if last > 0 {
		q.down(0)
	}
	return top.at, top.v
}

// PopDue removes and returns the earliest value if it is due at now.
func (q *Queue[T]) PopDue(now time.Time) (T, bool) {
	if len(q.h) == 0 || q.h[0].at.After(now) {
		var zero T
		return zero, false
	}
	_, v := q.Pop()
	return v, true
}

// Clear empties the queue, keeping its storage.
func (q *Queue[T]) Clear() {
	clear(q.h)
	q.h = q.h[:0]
}

func (q *Queue[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !q.h[i].before(&q.h[p]) {
			return
		}
		q.h[i], q.h[p] = q.h[p], q.h[i]
		i = p
	}
}

func (q *Queue[T]) down(i int) {
	n := len(q.h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && q.h[r].before(&q.h[l]) {
			m = r
		}
		if !q.h[m].before(&q.h[i]) {
			return
		}
		q.h[i], q.h[m] = q.h[m], q.h[i]
		i = m
	}
}

// Package sched runs the server's rooms and worlds on a few goroutines: a
// Scheduler hands each due Job to a pool of workers, and a Host turns a
// game loop (a lockstep room, an interest world) into such a job, taking
// work and packets from any goroutine and applying them on the loop's
// worker just before it ticks.
package sched

import (
	"runtime"
	"sync"
	"time"

	"github.com/tongbu/tongbu/internal/timeq"
)

// Job is work a Scheduler runs on time, such as a Host.
type Job interface {
	// Run does what is due at now and returns when the job next needs to
	// run; the zero time removes it.
	Run(now time.Time) time.Time
}

// Scheduler runs many jobs (rooms) on a few goroutines: one timer loop hands
// each due job to a pool of workers, so there is no goroutine per room and
// no goroutine per frame, and a slow room holds up one worker, not the
// others. A job is never run by two workers at once. With one worker the
// timer loop runs the jobs itself.
type Scheduler struct {
	inline bool // one worker: the timer loop runs each job itself
	mu     sync.Mutex
	q      timeq.Queue[*jobEntry]
	wake   chan struct{}
	work   chan *jobEntry
	closed chan struct{}
	wg     sync.WaitGroup
	late   lateHistogram
	runs   uint64
}

type jobEntry struct {
	job Job
	due time.Time
}

// NewScheduler starts a scheduler with the given number of workers
// (GOMAXPROCS when workers <= 0).
func NewScheduler(workers int) *Scheduler {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	s := &Scheduler{wake: make(chan struct{}, 1), work: make(chan *jobEntry), closed: make(chan struct{})}
	if workers == 1 {
		// A worker of its own would run the jobs one at a time as the
		// loop does, a goroutine switch later: each job would wait for
		// the worker to be scheduled, behind whatever else is runnable
		// (on a server with one P, the transport's reader and flusher).
		s.inline = true
		s.wg.Add(1)
		go s.loop()
		return s
	}
	s.wg.Add(workers + 1)
	go s.loop()
	for range workers {
		go s.worker()
	}
	return s
}

// Add schedules job to run at at.
func (s *Scheduler) Add(job Job, at time.Time) {
	s.push(&jobEntry{job: job, due: at})
}

func (s *Scheduler) push(e *jobEntry) {
	s.mu.Lock()
	s.q.Push(e.due, e)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// loop waits for the earliest job and hands it to a free worker (or, with
// one worker, runs it).
func (s *Scheduler) loop() {
	defer s.wg.Done()
	defer close(s.work)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.mu.Lock()
		var wait time.Duration = -1
		var e *jobEntry
		if due, ok := s.q.Next(); ok {
			if d := time.Until(due); d > 0 {
				wait = d
			} else {
				_, e = s.q.Pop()
			}
		}
		s.mu.Unlock()
		if e != nil && s.inline {
			select {
			case <-s.closed:
				return
			default:
			}
			s.run(e)
			continue
		}
		if e != nil {
			select {
			case s.work <- e:
			case <-s.closed:
				return
			}
			continue
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-s.wake:
		case <-timer.C:
		case <-s.closed:
			return
		}
		if wait >= 0 && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

func (s *Scheduler) worker() {
	defer s.wg.Done()
	for e := range s.work {
		s.run(e)
	}
}

// run runs a due job and schedules its next run.
func (s *Scheduler) run(e *jobEntry) {
	now := time.Now()
	s.mu.Lock()
	s.late.add(now.Sub(e.due))
	s.runs++
	s.mu.Unlock()
	if next := e.job.Run(now); !next.IsZero() {
		e.due = next
		s.push(e)
	}
}

// Close stops the scheduler and waits for running jobs to return.
func (s *Scheduler) Close() {
	select {
	case <-s.closed:
		return
	default:
	}
	close(s.closed)
	s.wg.Wait()
}

// SchedulerStats reports how late jobs ran against their due time.
type SchedulerStats struct {
	Runs             uint64
	LateP50, LateP99 time.Duration
	LateMax          time.Duration
	Jobs             int // scheduled, not running
}

// Stats returns the scheduler's counters.
func (s *Scheduler) Stats() SchedulerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return SchedulerStats{
		Runs: s.runs, LateP50: s.late.quantile(0.5), LateP99: s.late.quantile(0.99),
		LateMax: s.late.max, Jobs: s.q.Len(),
	}
}

// lateHistogram counts lateness in 100-microsecond buckets up to one
// second; later runs land in the last bucket.
type lateHistogram struct {
	buckets [10001]uint64
	n       uint64
	max     time.Duration
}

func (h *lateHistogram) add(d time.Duration) {
	d = max(d, 0)
	h.buckets[min(int(d/(100*time.Microsecond)), len(h.buckets)-1)]++
	h.n++
	h.max = max(h.max, d)
}

func (h *lateHistogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	want := uint64(q * float64(h.n))
	var seen uint64
	for i, c := range h.buckets {
		seen += c
		if seen > want {
			return time.Duration(i+1) * 100 * time.Microsecond
		}
	}
	return h.max
}

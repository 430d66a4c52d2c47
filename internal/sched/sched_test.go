package sched

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// periodic is a job that runs every period, optionally taking long.
type periodic struct {
	period time.Duration
	work   time.Duration
	mu     sync.Mutex
	runs   []time.Time
	due    time.Time
	late   time.Duration
}

func (p *periodic) Run(now time.Time) time.Time {
	p.mu.Lock()
	if d := now.Sub(p.due); d > p.late {
		p.late = d
	}
	p.runs = append(p.runs, now)
	p.due = p.due.Add(p.period)
	next := p.due
	p.mu.Unlock()
	time.Sleep(p.work) // a slow room holds its worker this long
	return next
}

func TestSchedulerSlowRoomDoesNotDelayOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(2)
		defer s.Close()
		now := time.Now()
		slow := &periodic{period: 66 * time.Millisecond, work: 500 * time.Millisecond, due: now}
		s.Add(slow, now)
		var fast []*periodic
		for range 50 {
			p := &periodic{period: 66 * time.Millisecond, due: now}
			fast = append(fast, p)
			s.Add(p, now)
		}
		time.Sleep(10 * time.Second)
		checkOnTime(t, "fast room", fast, 150)
		slow.mu.Lock()
		if len(slow.runs) < 15 {
			t.Errorf("slow room ran %d times", len(slow.runs))
		}
		slow.mu.Unlock()
		if st := s.Stats(); st.Runs < 7500 {
			t.Errorf("stats %+v", st)
		}
	})
}

// TestSchedulerOneWorker: with one worker the timer loop runs the jobs
// itself: each on time while the work fits, in the order they are due,
// a job added by a running job runs too, and Close returns with none
// running.
func TestSchedulerOneWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewScheduler(1)
		now := time.Now()
		var rooms []*periodic
		for i := range 20 {
			p := &periodic{period: 66 * time.Millisecond, work: time.Millisecond, due: now.Add(time.Duration(i) * time.Millisecond)}
			rooms = append(rooms, p)
			s.Add(p, p.due)
		}
		added := &periodic{period: time.Second}
		s.Add(jobFunc(func(now time.Time) time.Time {
			added.due = now
			s.Add(added, now) // from inside a run
			return time.Time{}
		}), now.Add(1030*time.Millisecond)) // between the rooms' runs
		time.Sleep(10 * time.Second)
		s.Close()
		checkOnTime(t, "room", rooms, 150)
		added.mu.Lock()
		if len(added.runs) < 8 {
			t.Errorf("the job added from a run ran %d times", len(added.runs))
		}
		added.mu.Unlock()
		if st := s.Stats(); st.Runs < 20*150 {
			t.Errorf("stats %+v", st)
		}
	})
}

// checkOnTime fails t for each job that ran late or fewer than runs times.
func checkOnTime(t *testing.T, what string, jobs []*periodic, runs int) {
	t.Helper()
	for i, p := range jobs {
		p.mu.Lock()
		if p.late > 0 || len(p.runs) < runs {
			t.Errorf("%s %d: %d runs, up to %v late", what, i, len(p.runs), p.late)
		}
		p.mu.Unlock()
	}
}

// jobFunc is a Job made of a function.
type jobFunc func(now time.Time) time.Time

func (f jobFunc) Run(now time.Time) time.Time { return f(now) }

// counting is a loop that records what its host hands it.
type counting struct {
	took    []int
	ticks   int
	stopped int
}

func (c *counting) Take(in []int) { c.took = append(c.took, in...) }
func (c *counting) Tick(now time.Time) time.Time {
	c.ticks++
	return now.Add(time.Second)
}
func (c *counting) Stop() { c.stopped++ }

// TestHost: work queued with Do runs before the packets are taken, the
// packets come in arrival order, and after Close the loop is stopped once
// and further work is refused.
func TestHost(t *testing.T) {
	loop := &counting{}
	h := NewHost[int](loop)
	var order []string
	h.Deliver(1)
	h.Do(func() { order = append(order, "work"); loop.took = append(loop.took, 0) })
	h.Deliver(2)
	now := time.Unix(0, 0)
	if next := h.Run(now); !next.Equal(now.Add(time.Second)) {
		t.Fatalf("next run %v", next)
	}
	if len(order) != 1 || len(loop.took) != 3 || loop.took[0] != 0 || loop.took[1] != 1 || loop.took[2] != 2 || loop.ticks != 1 {
		t.Fatalf("took %v after %v, %d ticks", loop.took, order, loop.ticks)
	}
	if !h.Close() || h.Close() {
		t.Fatal("Close reports the first call only")
	}
	if h.Do(func() { t.Fatal("work after Close ran") }) {
		t.Fatal("work queued after Close")
	}
	if next := h.Run(now); !next.IsZero() || loop.stopped != 1 || loop.ticks != 1 {
		t.Fatalf("after Close: next %v, stopped %d, ticks %d", next, loop.stopped, loop.ticks)
	}
}

//go:build !js

package engine

import (
	"sync"
	"time"
)

// offerResume gives p's client its two resume credentials now, and a
// fresh one every resumeRefresh until the connection is released (the
// oldest then stops admitting: at most two do at once).
func (s *Server) offerResume(p *peer) {
	if s.cfg.ResumeWindow < 0 || p.released.Load() {
		return
	}
	p.recvAt = p.conn.Stats().RecvMessages
	s.sendResume(p, resumeCreds)
	s.resumes.push(p, s.refreshResumes)
}

// sendResume sends p's client n fresh credentials (the credentials
// table, credentials.go, says which admit); none past the session's end.
func (s *Server) sendResume(p *peer, n int) {
	select {
	case <-p.conn.Done():
		return
	default:
	}
	creds := s.creds.issue(s, p, n, time.Now())
	if len(creds) == 0 {
		return
	}
	p.conn.SendReliable(appendResume(nil, creds))
	if r, ok := s.Room(p.ticket.Target); ok && p.ticket.Role == RolePlayer {
		r.seatChanged(p.ticket.Player) // the standby vouches for them too
	}
}

// refreshResumes sends the credentials that are due, and queues each of
// those connections for its next. A connection that sent nothing since
// its last refresh is given none: its path may be dead (the server has
// not noticed yet), and a credential sent into it would displace one its
// client holds.
func (s *Server) refreshResumes() {
	for _, p := range s.resumes.pop(time.Now()) {
		if recv := p.conn.Stats().RecvMessages; recv != p.recvAt {
			p.recvAt = recv
			s.sendResume(p, 1)
		}
		s.resumes.push(p, s.refreshResumes)
	}
}

// stopResume stops the refreshes of p's credential.
func (p *peer) stopResume() {
	p.released.Store(true)
	p.s.resumes.remove(p)
}

// resumeQueue holds every connection's next credential refresh, with
// one timer for all of them. A timer a connection would put thousands in
// the runtime's timer heap, and the runtime walks that heap whenever a
// timer reset to an earlier time comes due, as the rooms' scheduler does
// its own on every run: that walk was 4% of a 2,500-player relay
// server's CPU. Every connection waits the same resumeRefresh, so the
// queue, a list through the peers, is in order of due time by
// construction, and a connection released leaves it at once.
type resumeQueue struct {
	mu         sync.Mutex
	head, tail *peer
	timer      *time.Timer // armed while the queue holds a connection
	armed      bool
}

// resumeLink is a peer's place in the resumeQueue.
type resumeLink struct {
	at         time.Time // when its next credential is due
	prev, next *peer
	queued     bool
}

// push queues p to be refreshed resumeRefresh from now, unless it was
// released; fire is what the timer calls.
func (q *resumeQueue) push(p *peer, fire func()) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if p.released.Load() || p.rq.queued { // released is read under q.mu: remove cannot miss it
		return
	}
	p.rq = resumeLink{at: time.Now().Add(resumeRefresh), prev: q.tail, queued: true}
	if q.tail != nil {
		q.tail.rq.next = p
	} else {
		q.head = p
	}
	q.tail = p
	q.arm(fire)
}

// remove takes p out of the queue.
func (q *resumeQueue) remove(p *peer) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.unlink(p)
}

// unlink takes p out of the list; q.mu is held.
func (q *resumeQueue) unlink(p *peer) {
	if !p.rq.queued {
		return
	}
	if p.rq.prev != nil {
		p.rq.prev.rq.next = p.rq.next
	} else {
		q.head = p.rq.next
	}
	if p.rq.next != nil {
		p.rq.next.rq.prev = p.rq.prev
	} else {
		q.tail = p.rq.prev
	}
	p.rq = resumeLink{}
}

// arm sets the timer for the first connection due, if it is not set; q.mu
// is held.
func (q *resumeQueue) arm(fire func()) {
	if q.armed || q.head == nil {
		return
	}
	d := time.Until(q.head.rq.at)
	if q.timer == nil {
		if fire == nil {
			return
		}
		q.timer = time.AfterFunc(d, fire)
	} else {
		q.timer.Reset(d)
	}
	q.armed = true
}

// pop takes the connections due at now out of the queue.
func (q *resumeQueue) pop(now time.Time) []*peer {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.armed = false
	var out []*peer
	for q.head != nil && !q.head.rq.at.After(now) {
		p := q.head
		q.unlink(p)
		out = append(out, p)
	}
	q.arm(nil) // the timer exists and keeps its function
	return out
}

// stop stops the timer (the server shut down).
func (q *resumeQueue) stop() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.timer != nil {
		q.timer.Stop()
	}
	q.armed = false
}

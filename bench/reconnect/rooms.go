package reconnect

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/tongbu/tongbu/bench/internal/moba"
	"github.com/tongbu/tongbu/bench/internal/simmatch"
	"github.com/tongbu/tongbu/lockstep"
	"github.com/tongbu/tongbu/lockstep/movers"
	"github.com/tongbu/tongbu/transport/memnet"
)

// lateRec collects the other rooms' cut lateness by phase of the
// scenario: warm-up, baseline, catch-up, after.
type lateRec struct {
	mu    sync.Mutex
	phase int
	late  [4][]time.Duration
}

const (
	phaseWarmUp = iota
	phaseBaseline
	phaseCatchUp
	phaseAfter
)

// add records d in the current phase; early counts as 0.
func (l *lateRec) add(d time.Duration) {
	l.mu.Lock()
	l.late[l.phase] = append(l.late[l.phase], max(d, 0))
	l.mu.Unlock()
}

// set moves to phase: what add records from now on goes to it.
func (l *lateRec) set(phase int) {
	l.mu.Lock()
	l.phase = phase
	l.mu.Unlock()
}

// quantile returns the q-quantile of a phase's lateness and its count.
func (l *lateRec) quantile(phase int, q float64) (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	d := slices.Clone(l.late[phase])
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return d[int(q*float64(len(d)-1))], len(d)
}

// roomJob runs a room on the scheduler over in-memory connections: it
// applies queued actions (leave, join), drains the server ends, ticks the
// room and hands its events on. With late set it records how late each
// run came against the cut it asked for.
type roomJob struct {
	room    *lockstep.Room
	conns   []*memnet.Conn // server ends by peer; touched only in Run
	late    *lateRec       // other rooms: how late each run came
	spent   *lateRec       // the reconnect room: how long each run took
	due     time.Time
	onEvent func(lockstep.Event)

	mu   sync.Mutex
	todo []func(now time.Time)
}

// do queues f for the job's next run, on the scheduler.
func (j *roomJob) do(f func(now time.Time)) {
	j.mu.Lock()
	j.todo = append(j.todo, f)
	j.mu.Unlock()
}

// Run is the job's turn on the scheduler; it returns when the job wants
// its next: the room's next cut.
func (j *roomJob) Run(now time.Time) time.Time {
	if j.late != nil && !j.due.IsZero() {
		j.late.add(now.Sub(j.due))
	}
	if j.spent != nil {
		t0 := time.Now()
		defer func() { j.spent.add(time.Since(t0)) }()
	}
	j.mu.Lock()
	todo := j.todo
	j.todo = nil
	j.mu.Unlock()
	for _, f := range todo {
		f(now)
	}
	for slot, c := range j.conns {
		for c != nil {
			m, ok := c.TryReceive()
			if !ok {
				break
			}
			j.room.Deliver(slot, m.Data, now) // errors are counted in the room's stats
		}
	}
	j.room.Tick(now)
	for _, e := range j.room.Events() {
		if j.onEvent != nil {
			j.onEvent(e)
		}
	}
	j.due = j.room.NextCut()
	return j.due
}

// jobSender is a room's Sender over its job's connections.
type jobSender struct{ j *roomJob }

// SendUnreliable sends msg to peer over its connection, if it has one.
func (s jobSender) SendUnreliable(peer int, msg []byte) error {
	if c := s.j.conns[peer]; c != nil {
		return c.SendUnreliable(msg)
	}
	return errors.New("no connection")
}

// SendReliable sends msg to peer reliably over its connection, if it has
// one.
func (s jobSender) SendReliable(peer int, msg []byte) error {
	if c := s.j.conns[peer]; c != nil {
		return c.SendReliable(msg)
	}
	return errors.New("no connection")
}

// liveClient is a client over its connection, with its game.
type liveClient struct {
	c    *lockstep.Client
	conn *memnet.Conn
	game *movers.Game
	slot int

	snapAt     int   // the frame a snapshot was restored at
	restoreErr error // restoring it failed
}

// tick is one render tick of a client: take the room's messages, act,
// send, run the frames given.
func (lc *liveClient) tick(now time.Time, model *moba.Model, every int) lockstep.Step {
	for {
		m, ok := lc.conn.TryReceive()
		if !ok {
			break
		}
		lc.c.Deliver(now, m.Data) // a bad message is dropped, as a game would
	}
	if in := model.Input(lc.slot, now); in != nil {
		lc.c.Input(now, in)
	}
	lc.conn.SendUnreliable(lc.c.Packet(now))
	st := lc.c.Advance(now)
	if st.Snapshot != nil {
		lc.snapAt = st.SnapshotFrame
		if err := lc.game.Restore(st.Snapshot); err != nil {
			lc.restoreErr = err
		}
	}
	simmatch.PlayFrames(lc.c, lc.game, st.Frames, every)
	for _, msg := range lc.c.Outbox() {
		lc.conn.SendReliable(msg)
	}
	return st
}

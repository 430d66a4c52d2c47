//go:build !js

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tongbu/tongbu/lockstep"
)

// Handing rooms over on purpose: a drain.

// drain hands every room of the node that has a standby over to it and
// reports how many were handed over; the others are left to end.
func (s *standbys) drain(ctx context.Context) int {
	s.mu.Lock()
	var names []string
	for name, o := range s.out {
		if o.standby != "" && !o.taken {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	return s.handOverAll(ctx, names, "room", func(ctx context.Context, name string) error {
		s.mu.Lock()
		o := s.out[name]
		s.mu.Unlock()
		if o == nil || o.taken {
			return nil
		}
		err := s.handOver(ctx, name)
		if err != nil {
			s.mu.Lock()
			o.handing = false // it plays on here until it ends
			o.hold()
			s.mu.Unlock()
		}
		return err
	})
}

// handOverAll runs hand, a room's or a world's hand-over, for each of
// names, a few at a time, each held only for its own (it waits for no
// other's), and reports how many succeeded; a failure is logged.
func (s *standbys) handOverAll(ctx context.Context, names []string, what string, hand func(context.Context, string) error) int {
	var handed atomic.Int64
	work := make(chan string)
	var wg sync.WaitGroup
	for range min(handOverAtOnce, len(names)) {
		wg.Go(func() {
			for name := range work {
				if err := hand(ctx, name); err != nil {
					s.n.opts.Logger.Warn("cluster: hand-over failed; it plays on here", what, name, "err", err)
					continue
				}
				handed.Add(1)
			}
		})
	}
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		work <- name
	}
	close(work)
	wg.Wait()
	return int(handed.Load())
}

// handOverAtOnce bounds the rooms a drain hands over at once.
const handOverAtOnce = 8

// handOver hands one room to its standby: the room has stopped cutting;
// its last frames go out, the standby restores it, and the clients are
// told to move.
func (s *standbys) handOver(ctx context.Context, name string) error {
	s.mu.Lock()
	o := s.out[name]
	s.mu.Unlock()
	if o == nil {
		return fmt.Errorf("%w: room %q", ErrInvalid, name)
	}
	s.mu.Lock()
	to, url := o.standby, o.url
	s.mu.Unlock()
	// The standby makes the room ready, held; the clients connect to it
	// and wait there, while the match goes on here.
	if _, err := s.askStandby(ctx, to, standbyControl{Op: "prepare", Room: name}); err != nil {
		return err
	}
	want := o.room.MoveTo(url, true)
	for end := time.Now().Add(parkWait); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		rep, err := s.askStandby(ctx, to, standbyControl{Op: "parked", Room: name})
		if err != nil || rep.Parked >= want {
			break
		}
	}
	// Then it cuts no more here, its last frames go out, and the standby
	// lets the room go on: each client switches at its welcome.
	s.mu.Lock()
	o.handing = true
	o.hold()
	s.mu.Unlock()
	cut := make(chan int, 1)
	o.room.Do(func(l *lockstep.Room) { cut <- l.NextFrame() }) // after the tick in progress: no more cuts
	var next int
	select {
	case next = <-cut:
	case <-ctx.Done():
		return ctx.Err()
	}
	s.flush()
	if _, err := s.askStandby(ctx, to, standbyControl{Op: "handover", Room: name, Next: next}); err != nil {
		publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(to), standbyControl{Op: "cancel", Room: name})
		return err
	}
	s.mu.Lock()
	o.taken = true
	o.hold()
	s.handed++
	s.mu.Unlock()
	s.n.opts.Logger.Info("cluster: room handed over", "room", name, "standby", to, "frames", next, "clients", want)
	return nil
}

// parkWait bounds how long a hand-over waits for the clients to connect
// to the standby before it switches them (those not there yet follow
// with a handshake).
const parkWait = 3 * time.Second

// A world's move waits parkPerPlayer longer a player, maxParkWait at most.
const (
	parkPerPlayer = 20 * time.Millisecond
	maxParkWait   = 15 * time.Second
)

// askStandby sends a control request to node to and returns its reply,
// an error if it refused.
func (s *standbys) askStandby(ctx context.Context, to string, c standbyControl) (*standbyReply, error) {
	b, _ := json.Marshal(c)
	rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	msg, err := s.n.c.Request(rctx, s.n.opts.subjControl(to), b, fromNode(to))
	if err != nil {
		return nil, err
	}
	rep, err := decode[standbyReply](msg.Data)
	if err != nil {
		return nil, err
	}
	if !rep.OK {
		return rep, fmt.Errorf("%w: standby %s: %s %s", ErrRefused, to, c.Op, rep.Error)
	}
	return rep, nil
}

// Drain stops the node taking new rooms and hands each of its rooms that
// has a standby over to it, while its players play: the standby
// continues the match from its last frame, and the clients move there
// over their open connections. It returns when every such room is handed
// over or ctx is done, with the number handed over; the rooms without a
// standby play on until they end (the caller waits for them, up to its
// deadline). The node stays in the cluster until Leave.
func (n *Node) Drain(ctx context.Context) (int, error) {
	n.mu.Lock()
	n.full, n.draining = true, true // out of the create queue for good, and named standby no more
	err := n.member(false)
	sb := n.sb
	n.heartbeatLocked()
	n.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if sb == nil {
		return 0, nil
	}
	sb.resign()
	rooms := sb.drain(ctx)
	worlds := sb.moveWorlds(ctx)
	return rooms + worlds, ctx.Err()
}

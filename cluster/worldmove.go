//go:build !js

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/engine"
)

// Moving a world to its heir on purpose, while its players play: a
// drain (SPEC.md §11.5). The heir holds the world (engine.PrepareWorld);
// every player's client connects there ahead and waits (a standby place,
// as at a cell's border); then the world stops here, its checkpoint is
// written with the heir as its owner, and the heir loads it and lets
// every waiting client in at once: each switches to its open connection
// in one round trip, keeps its entity and what it knows. A player who had
// no place waiting follows with a transfer.

// moveWorlds moves each world of the node to its heir (one is named now
// for a world that has none: a node may have joined a moment ago), a few
// at a time, and reports how many moved.
func (s *standbys) moveWorlds(ctx context.Context) int {
	s.mu.Lock()
	var names []string
	for name, o := range s.outw {
		if !o.taken && !o.w.Closed() {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	return s.handOverAll(ctx, names, "world", s.moveWorld)
}

// moveWorld moves one world to its heir.
func (s *standbys) moveWorld(ctx context.Context, name string) error {
	s.mu.Lock()
	o := s.outw[name]
	if o != nil && !o.taken && o.heir == "" {
		if s.pickHeir(o); o.heir != "" {
			// Told now, ahead of the prepare (on another subject of the
			// same connection: in order).
			o.dirty = false
			ctl := standbyControl{Op: "world", Room: name, Cap: o.req.Cap, Config: o.req.Config}
			s.mu.Unlock()
			s.publishControl(o.heir, ctl)
			s.mu.Lock()
		}
	}
	if o == nil || o.taken || o.heir == "" {
		s.mu.Unlock()
		return fmt.Errorf("%w: world %q has no heir", ErrInvalid, name)
	}
	to := o.heir
	s.mu.Unlock()
	w := o.w
	begun := time.Now()
	// An heir named a moment ago may take the prepare before its word of
	// the world: asked again, a few times.
	prepare := standbyControl{Op: "wprepare", Room: name, Cap: o.req.Cap, Config: o.req.Config, Start: w.Start().UnixNano()}
	for try := 0; ; try++ {
		_, err := s.askStandby(ctx, to, prepare)
		if err == nil {
			break
		}
		if try == 4 || !strings.Contains(err.Error(), "not the heir") {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	cancel := func() {
		publishJSON(s.n.c, &s.n.opts, s.n.opts.subjControl(to), standbyControl{Op: "wcancel", Room: name})
	}
	// Every player's client connects to the heir and waits there.
	// One destination a player: a booking keeps its node and transfer in it.
	destFor := func() seamless {
		return seamless{s.n.Destination(JoinRequest{World: name, TicketTTL: engine.StandbyTTL, standby: true, node: to})}
	}
	// A cell's players near a border give up their places next door
	// first: one standby at a time.
	cell := s.n.cellOf(name)
	if cell != nil {
		cell.dropStandbys()
	}
	var mu sync.Mutex
	waiting := map[string]func(){}
	ended := map[string]error{}
	tries := map[string]int{}
	park := func(player string) {
		stop, err := w.Standby(player, destFor(), engine.RejoinState(), func(err error) {
			mu.Lock()
			ended[player] = err
			mu.Unlock()
		})
		if err == nil {
			mu.Lock()
			waiting[player] = stop
			tries[player]++
			mu.Unlock()
		}
	}
	for _, player := range w.Players() {
		park(player)
	}
	// parkAgain tries again, a few times, for the players whose place at
	// the heir could not be booked yet (a standby next door was still
	// being given up).
	parkAgain := func() {
		mu.Lock()
		var again []string
		for player, err := range ended {
			if err != nil && tries[player] < maxParkTries {
				delete(ended, player)
				again = append(again, player)
			}
		}
		mu.Unlock()
		for _, player := range again {
			park(player)
		}
	}
	mu.Lock()
	want := len(waiting)
	mu.Unlock()
	// A crowd's handshakes take their time: the wait grows with it. A
	// player not parked by then follows with a handshake, its entity away
	// from the others' views meanwhile.
	parked := 0
	for end := time.Now().Add(min(parkWait+time.Duration(want)*parkPerPlayer, maxParkWait)); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		rep, err := s.askStandby(ctx, to, standbyControl{Op: "wparked", Room: name})
		if err != nil {
			break
		}
		if parked = rep.Parked; parked >= want {
			break
		}
		parkAgain()
	}
	if parked < want {
		s.n.opts.Logger.Warn("cluster: moving a world before all its players are at its heir", "world", name, "parked", parked, "players", want)
	}
	// It stops here; its checkpoint goes to the heir as its owner. A
	// checkpoint in flight would change the record's revision under the
	// hand-over: the world stops once it is written, playing on till then.
	var last uint64
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		s.mu.Lock()
		if !o.writing || time.Now().After(end) {
			o.handing = true
			o.hold()
			last = o.rev
			s.mu.Unlock()
			break
		}
		s.mu.Unlock()
	}
	stopped := time.Now()
	if cell != nil {
		cell.hold() // its neighbours' messages from now on are the heir's to take
	}
	undo := func(err error) error {
		s.mu.Lock()
		o.handing = false
		o.hold()
		s.mu.Unlock()
		if cell != nil {
			cell.thaw()
		}
		mu.Lock()
		for _, stop := range waiting {
			stop()
		}
		mu.Unlock()
		cancel()
		return err
	}
	cp, err := w.Checkpoint(ctx)
	if err != nil {
		return undo(err)
	}
	encoded := time.Now()
	hand := standbyControl{Op: "whandover", Room: name}
	if s.bucket() != nil {
		rev, err := s.bucket().put(ctx, name, storedWorld{owner: to, cp: cp}, last)
		if errors.Is(err, errTakenElsewhere) {
			// This node's own record, from a write it did not hear back
			// from, is no take-over: the hand-over writes over it.
			if rec, got, gerr := s.bucket().get(ctx, name); gerr == nil && rec.owner == s.n.info.ID {
				rev, err = s.bucket().put(ctx, name, storedWorld{owner: to, cp: cp}, got)
			}
		}
		if err != nil {
			return undo(err)
		}
		hand.Rev = rev
	}
	if s.bucket() == nil || len(cp) <= inlineCheckpoint {
		hand.Point = cp // the heir need not read it back from a replica
	}
	stored := time.Now()
	if _, err := s.askStandby(ctx, to, hand); err != nil {
		if s.bucket() != nil { // the record names the heir: take it back
			if rev, perr := s.bucket().put(ctx, name, storedWorld{owner: s.n.info.ID, cp: cp}, hand.Rev); perr == nil {
				s.mu.Lock()
				o.rev = rev
				s.mu.Unlock()
			} else {
				s.n.opts.Logger.Warn("cluster: a world's record after a failed move", "world", name, "err", perr)
			}
		}
		return undo(err)
	}
	s.mu.Lock()
	o.taken = true
	o.hold()
	s.movedW++
	s.mu.Unlock()
	s.n.gone(name, w)
	s.n.opts.Logger.Info("cluster: world moved", "world", name, "to", to, "parked", want, "took", time.Since(begun).Round(time.Millisecond), "paused", time.Since(stopped).Round(time.Millisecond),
		"checkpoint", encoded.Sub(stopped).Round(time.Millisecond), "store", stored.Sub(encoded).Round(time.Millisecond), "heir", time.Since(stored).Round(time.Millisecond))
	go s.letGo(w, destFor().Destination.(*worldDest), &mu, waiting, ended)
	return nil
}

// letGo ends a world that moved away: its players who had no place
// waiting at the heir (they came as it moved, or their place was given
// up) follow with a transfer, and it closes once they all have gone, or
// after a while.
func (s *standbys) letGo(w *engine.World, dest *worldDest, mu *sync.Mutex, waiting map[string]func(), ended map[string]error) {
	sent := map[string]bool{}
	for end := time.Now().Add(movedLinger); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		players := w.Players()
		if len(players) == 0 {
			break
		}
		for _, p := range players {
			mu.Lock()
			_, had := waiting[p]
			err, over := ended[p]
			mu.Unlock()
			if sent[p] || had && (!over || err == nil) {
				continue // its client is let in at the heir, or has been
			}
			sent[p] = true
			d := &worldDest{j: dest.j, req: dest.req}
			d.req.standby, d.req.TicketTTL = false, 0
			w.Transfer(p, seamless{d}, engine.RejoinState(), nil)
		}
	}
	w.Close()
	s.n.opts.Logger.Info("cluster: world closed here after its move", "world", w.Name())
}

// inlineCheckpoint bounds the checkpoint a hand-over carries itself
// (its JSON must fit in a NATS message, 1 MiB by default); a larger one
// the heir reads from the record the old node wrote.
const inlineCheckpoint = 256 << 10

// maxParkTries bounds the bookings at the heir one player is tried for.
const maxParkTries = 10

// movedLinger bounds how long a world that moved away waits for its last
// players to follow.
const movedLinger = 15 * time.Second

// heirMoveControl takes the heir's part of a world's move. It reports
// whether c was one.
func (s *standbys) heirMoveControl(from string, c *standbyControl, reply func(standbyReply)) bool {
	switch c.Op {
	case "wprepare":
		reply(worldControlReply(s.prepareWorld(c.Room, from, time.Unix(0, c.Start)), 0))
	case "wparked":
		s.mu.Lock()
		in := s.inw[c.Room]
		s.mu.Unlock()
		if in == nil || in.primary != from || in.prepared == nil {
			reply(worldControlReply(fmt.Errorf("%w: no world %q held here", ErrInvalid, c.Room), 0))
			return true
		}
		reply(worldControlReply(nil, in.prepared.Parked()))
	case "wcancel":
		s.mu.Lock()
		in := s.inw[c.Room]
		var w *engine.World
		if in != nil && in.primary == from {
			w, in.prepared = in.prepared, nil
		}
		s.mu.Unlock()
		if w != nil {
			s.n.dropHeld(c.Room, w)
		}
	case "whandover":
		reply(worldControlReply(s.releaseWorld(c.Room, from, c.Rev, c.Point), 0))
	default:
		return false
	}
	return true
}

// prepareWorld holds here a world of node from, ahead of its move.
func (s *standbys) prepareWorld(name, from string, start time.Time) error {
	s.mu.Lock()
	in := s.inw[name]
	if in == nil || in.primary != from {
		s.mu.Unlock()
		return fmt.Errorf("%w: not the heir of world %q of node %s", ErrInvalid, name, from)
	}
	if in.prepared != nil {
		s.mu.Unlock()
		return nil
	}
	req := in.req
	s.mu.Unlock()
	w, err := s.n.restoreWorld(req, true, func(cfg engine.WorldConfig) (*engine.World, error) { return s.srv.PrepareWorld(name, cfg, start) })
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inw[name] != in {
		go s.n.dropHeld(name, w)
		return fmt.Errorf("%w: world %q: the inheritance ended meanwhile", ErrInvalid, name)
	}
	in.prepared = w
	return nil
}

// releaseWorld lets the world held here go on from the checkpoint its
// old node handed over: inline, or in the record of revision rev. With
// a bucket, rev is the revision of the record the old node wrote naming
// this node its owner (its compare-and-set succeeded): this node's
// checkpoints write after it.
func (s *standbys) releaseWorld(name, from string, rev uint64, cp []byte) error {
	s.mu.Lock()
	in := s.inw[name]
	if in == nil || in.primary != from || in.prepared == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: no world %q of node %s held here", ErrInvalid, name, from)
	}
	w := in.prepared
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.bucket() != nil && cp == nil {
		rec, got, err := s.bucket().get(ctx, name)
		// A replica of the bucket may answer before it has the record the
		// old node just wrote (reads go to any replica): it is asked
		// again until it has caught up.
		for err == nil && got < rev && ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond)
			rec, got, err = s.bucket().get(ctx, name)
		}
		if err != nil {
			return err
		}
		if got != rev || rec.owner != s.n.info.ID {
			return fmt.Errorf("%w: world %q's record is of revision %d, owner %s", ErrRefused, name, got, rec.owner)
		}
		cp = rec.cp
	}
	// A cell is listed here before its first frame, so that its
	// neighbours take its border messages from here (they come after
	// the heartbeat, on the same connection).
	_, _, cell := splitCell(name)
	if cell {
		s.n.unhold(name)
	}
	if err := w.Release(ctx, cp); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.inw, name)
	s.movedIn++
	s.mu.Unlock()
	if !cell {
		s.n.unhold(name)
	}
	s.createdWorld(in.req, w, rev)
	return nil
}

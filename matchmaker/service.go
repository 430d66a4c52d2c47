//go:build !js

package matchmaker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/cluster"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// Service is one matchmaker process on NATS. Several may run (in tongbu
// serve processes, or alone): queues spread the pools over them, each
// pool (a mode and the builds that may meet) on one Service, and send a
// dead Service's tickets to another. A Service forms matches from the
// tickets it holds, claims them from their queues (a queue grants each
// ticket to one match only, so no player is matched twice), places each
// match on a cluster node in the region that suits its players best, and
// hands every ticket its Assignment.
type Service struct {
	nc       *nats.Conn
	c        *seal.Conn // sealed as this Service
	opts     Options
	cfg      Config
	instance uint64
	dir      *cluster.Directory // nil with Options.Place
	subs     []*nats.Subscription
	stop     chan struct{}
	done     chan struct{}

	mu         sync.Mutex
	m          *Matcher
	queueOf    map[string]string // ticket id -> its queue
	switchesAt int64
	stats      Stats
	closed     bool
}

// Stats counts what a Service did.
type Stats struct {
	Waiting  int // tickets queued now
	Received int // tickets taken (a ticket sent again counts again)
	Matches  int // matches placed
	Matched  int // tickets in them
	Expired  int // tickets that waited past Config.Timeout
	// Unplaced counts matches formed but not placed (no node took them,
	// or a queue did not grant a ticket): their tickets queue again.
	Unplaced int
}

// Serve starts a Service on nc with the modes of cfg: from now on it takes
// tickets and places matches, until Close. nc stays the caller's.
func Serve(nc *nats.Conn, cfg Config, opts *Options) (*Service, error) {
	s, err := serve(nc, cfg, opts)
	return s, errstack.With(err)
}

func serve(nc *nats.Conn, cfg Config, opts *Options) (*Service, error) {
	o := opts.withDefaults()
	var b [8]byte
	rand.Read(b[:])
	if o.ID == "" {
		o.ID = "mm-" + hex.EncodeToString(b[:4])
	}
	if err := checkServiceID(o.ID); err != nil {
		return nil, err
	}
	c, err := o.conn(nc, seal.RoleService, o.ID)
	if err != nil {
		return nil, err
	}
	// The heartbeats carry the sealing instance, so that a queue can tell
	// that a heartbeat comes from the Service instance it names.
	s := &Service{nc: nc, c: c, opts: o, instance: c.Peer().Instance, queueOf: map[string]string{},
		stop: make(chan struct{}), done: make(chan struct{})}
	// Match ids are room names: unique across Services and restarts.
	cfg.Name = o.ID + "-" + hex.EncodeToString(b[4:])
	m, err := NewMatcher(cfg)
	if err != nil {
		return nil, err
	}
	s.m, s.cfg = m, m.cfg
	if o.Place == nil {
		if s.dir, err = cluster.Watch(nc, o.Cluster); err != nil {
			c.Close()
			return nil, err
		}
	}
	for subj, fn := range map[string]func(*seal.Msg){
		o.subjSubmit(o.ID): s.onSubmit,
		o.subjCancel(o.ID): s.onCancel,
		o.subjSwitch():     s.onSwitch,
		o.subjProbe():      func(*seal.Msg) { s.heartbeat(false) },
		o.subjHeartbeat():  s.onHeartbeat,
	} {
		sub, err := c.Subscribe(subj, fn)
		if err != nil {
			s.unsubscribe()
			return nil, fmt.Errorf("matchmaker: subscribe %s: %w", subj, err)
		}
		s.subs = append(s.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		s.unsubscribe()
		return nil, fmt.Errorf("matchmaker: subscribe: %w", err)
	}
	go s.run()
	o.Logger.Info("matchmaker: serving", "id", o.ID, "modes", len(cfg.Modes))
	return s, nil
}

func (s *Service) unsubscribe() {
	for _, sub := range s.subs {
		sub.Unsubscribe()
	}
	if s.dir != nil {
		s.dir.Close()
	}
	s.c.Close()
}

// Dropped counts the NATS messages the Service dropped, by reason:
// "forged", "stale", "replayed", "refused" (cluster.Node.Dropped says
// what each is).
func (s *Service) Dropped() map[string]uint64 { return s.c.Stats().Dropped() }

// Opened counts the NATS messages the Service took.
func (s *Service) Opened() uint64 { return s.c.Stats().Opened.Load() }

// ID returns the Service's id.
func (s *Service) ID() string { return s.opts.ID }

// Stats returns what the Service did so far.
func (s *Service) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Waiting = s.m.Len()
	return st
}

// Close stops the Service: it tells the queues, which send its tickets to
// another Service at once. nc stays open.
func (s *Service) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	<-s.done
	s.heartbeat(true)
	s.unsubscribe()
	s.nc.Flush()
	return nil
}

// run publishes heartbeats and forms matches.
func (s *Service) run() {
	defer close(s.done)
	hb := time.NewTicker(s.opts.Heartbeat)
	defer hb.Stop()
	pass := time.NewTicker(s.opts.Interval)
	defer pass.Stop()
	s.heartbeat(false)
	for {
		select {
		case <-s.stop:
			return
		case <-hb.C:
			s.heartbeat(false)
		case now := <-pass.C:
			s.pass(now)
		}
	}
}

// heartbeat announces the Service (leaving: for the last time).
func (s *Service) heartbeat(leaving bool) {
	s.mu.Lock()
	h := heartbeat{ID: s.opts.ID, Instance: s.instance, IntervalMS: s.opts.Heartbeat.Milliseconds(),
		Switches: s.m.Switches(), SwitchesAt: s.switchesAt, Tickets: s.m.Len(), Leaving: leaving}
	s.mu.Unlock()
	s.publish(s.opts.subjHeartbeat(), h)
}

func (s *Service) publish(subject string, v any) { publishJSON(s.c, s.opts.Logger, subject, v) }

// onSubmit takes a queue's tickets: from that queue.
func (s *Service) onSubmit(msg *seal.Msg) {
	req, err := decode[submitMsg](msg.Data)
	if err != nil {
		s.opts.Logger.Debug("matchmaker: submit dropped", "err", err)
		respond(msg, submitReply{Instance: s.instance, Refused: map[string]string{"": err.Error()}})
		return
	}
	if !queueSpeaks(msg, req.Queue) {
		s.c.Refuse(msg, fmt.Sprintf("a submit for queue %s from %v", req.Queue, msg.From))
		return
	}
	rep := submitReply{Instance: s.instance}
	now := time.Now()
	s.mu.Lock()
	for _, t := range req.Tickets {
		err := s.m.Add(t, now)
		switch {
		case errors.Is(err, ErrDuplicate) && s.queueOf[t.ID] == req.Queue: // sent again: it is here
		case err != nil:
			if rep.Refused == nil {
				rep.Refused = map[string]string{}
			}
			rep.Refused[t.ID] = err.Error()
		default:
			s.queueOf[t.ID] = req.Queue
			s.stats.Received++
		}
	}
	s.mu.Unlock()
	respond(msg, rep)
}

// onCancel forgets a queue's tickets: at that queue's word.
func (s *Service) onCancel(msg *seal.Msg) {
	req, err := decode[cancelMsg](msg.Data)
	if err != nil {
		s.opts.Logger.Debug("matchmaker: cancel dropped", "err", err)
		return
	}
	if !queueSpeaks(msg, req.Queue) {
		s.c.Refuse(msg, fmt.Sprintf("a cancel for queue %s from %v", req.Queue, msg.From))
		return
	}
	s.mu.Lock()
	for _, id := range req.IDs {
		if s.queueOf[id] == req.Queue {
			s.m.Remove(id)
			delete(s.queueOf, id)
		}
	}
	s.mu.Unlock()
}

// onSwitch takes the operator's switches, if newer than what it has.
func (s *Service) onSwitch(msg *seal.Msg) {
	if !operator(msg) {
		s.c.Refuse(msg, "build switches from a "+msg.From.Role.String())
		return
	}
	sw, err := decode[switchMsg](msg.Data)
	if err != nil {
		s.opts.Logger.Debug("matchmaker: switch dropped", "err", err)
		return
	}
	s.setSwitches(sw.Switches, sw.At)
	s.heartbeat(false)
}

// onHeartbeat takes another Service's switches if newer: a Service that
// started after the operator set them learns them so.
func (s *Service) onHeartbeat(msg *seal.Msg) {
	h, err := decode[heartbeat](msg.Data)
	if err != nil || h.Instance == s.instance {
		return
	}
	if !serviceSpeaks(msg, h.ID, h.Instance) {
		s.c.Refuse(msg, fmt.Sprintf("a heartbeat of Service %s from %v", h.ID, msg.From))
		return
	}
	s.setSwitches(h.Switches, h.SwitchesAt)
}

func (s *Service) setSwitches(sw [][2]string, at int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if at <= s.switchesAt {
		return
	}
	s.switchesAt = at
	s.m.SetSwitches(sw)
	s.opts.Logger.Info("matchmaker: build switches", "open", sw)
}

// sites lists where matches may go now: the cluster's live nodes and the
// rooms they can still take.
func (s *Service) sites() []Site {
	if s.dir == nil {
		if s.opts.Sites == nil {
			return nil
		}
		return s.opts.Sites()
	}
	var out []Site
	for _, n := range s.dir.Nodes() {
		if !n.Alive {
			continue
		}
		used := max(n.Rooms, s.dir.RoomCount(n.ID))
		out = append(out, Site{Node: n.ID, Region: n.Region, Builds: n.Builds, Free: n.Capacity - used})
	}
	return out
}

// formed is a match of a pass and what became of it.
type formed struct {
	m       Match
	queues  []string        // of m.Tickets
	granted map[string]bool // by queue
	place   cluster.Placement
	err     error
}

// pass forms matches, claims their tickets, places them and assigns them.
func (s *Service) pass(now time.Time) {
	sites := s.sites()
	s.mu.Lock()
	matches, expired := s.m.Match(now, sites)
	queues := map[string]*queueMsg{}
	expire := map[string][]string{}
	for _, t := range expired {
		if q := s.queueOf[t.ID]; q != "" {
			expire[q] = append(expire[q], t.ID)
		}
		delete(s.queueOf, t.ID)
	}
	s.stats.Expired += len(expired)
	fs := make([]*formed, len(matches))
	for i, m := range matches {
		fs[i] = &formed{m: m, granted: map[string]bool{}, queues: make([]string, len(m.Tickets))}
		per := map[string][]string{}
		for k, t := range m.Tickets {
			q := s.queueOf[t.ID]
			fs[i].queues[k] = q
			if q != "" { // a ticket of no queue is granted by none: the match is released
				per[q] = append(per[q], t.ID)
			}
		}
		for q, ids := range per {
			qm := queues[q]
			if qm == nil {
				qm = &queueMsg{Op: "claim", Service: s.opts.ID, Instance: s.instance}
				queues[q] = qm
			}
			qm.Claims = append(qm.Claims, claim{Match: m.ID, Tickets: ids})
		}
	}
	s.mu.Unlock()
	for q, ids := range expire {
		s.request(q, &queueMsg{Op: "expire", Service: s.opts.ID, Instance: s.instance, IDs: ids})
	}
	if len(fs) == 0 {
		return
	}

	// Claim: every queue grants its tickets of each match, or not.
	byID := make(map[string]*formed, len(fs))
	for _, f := range fs {
		byID[f.m.ID] = f
	}
	gone := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for q, qm := range queues {
		wg.Go(func() {
			rep, err := s.request(q, qm)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.opts.Logger.Info("matchmaker: queue did not answer a claim", "queue", q, "err", err)
				for _, c := range qm.Claims {
					for _, id := range c.Tickets {
						gone[id] = true // a queue that is gone: so are its tickets
					}
				}
				return
			}
			for _, id := range rep.Granted {
				if f := byID[id]; f != nil {
					f.granted[q] = true
				}
			}
			for _, id := range rep.Gone {
				gone[id] = true
			}
		})
	}
	wg.Wait()

	// Place the matches every queue granted, at most 64 at a time.
	sem := make(chan struct{}, 64)
	for _, f := range fs {
		if !f.allGranted() {
			continue
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 2*s.opts.RequestTimeout)
			defer cancel()
			f.place, f.err = s.place(ctx, f, sites)
			if f.err != nil {
				s.opts.Logger.Warn("matchmaker: match not placed", "match", f.m.ID, "region", f.m.Region, "err", f.err)
			}
		})
	}
	wg.Wait()

	// Assign the placed; release and queue again the others.
	assign := map[string]*queueMsg{}
	release := map[string]*queueMsg{}
	requeue := []Ticket{}
	for _, f := range fs {
		ok := f.allGranted() && f.err == nil
		for k, t := range f.m.Tickets {
			q := f.queues[k]
			switch {
			case ok:
				qm := assign[q]
				if qm == nil {
					qm = &queueMsg{Op: "assign", Service: s.opts.ID, Instance: s.instance}
					assign[q] = qm
				}
				qm.Assign = append(qm.Assign, assignmentOf(f, t))
			case gone[t.ID]:
			default:
				requeue = append(requeue, t)
				if f.granted[q] {
					qm := release[q]
					if qm == nil {
						qm = &queueMsg{Op: "release", Service: s.opts.ID, Instance: s.instance}
						release[q] = qm
					}
					if !slices.Contains(qm.Matches, f.m.ID) {
						qm.Matches = append(qm.Matches, f.m.ID)
					}
				}
			}
		}
	}
	s.mu.Lock()
	for _, f := range fs {
		if f.allGranted() && f.err == nil {
			s.stats.Matches++
			s.stats.Matched += len(f.m.Tickets)
		} else {
			s.stats.Unplaced++
		}
		for _, t := range f.m.Tickets {
			// A ticket its queue sent again during the pass is back in
			// the pool: it keeps its queue.
			if (gone[t.ID] || (f.allGranted() && f.err == nil)) && !s.m.Has(t.ID) {
				delete(s.queueOf, t.ID)
			}
		}
	}
	for _, t := range requeue {
		if s.queueOf[t.ID] != "" { // not canceled meanwhile
			s.m.Add(t, now) // keeps its Since: its place in line
		}
	}
	s.mu.Unlock()
	for q, qm := range release {
		s.request(q, qm)
	}
	for q, qm := range assign {
		wg.Go(func() {
			rep, err := s.request(q, qm)
			if err == nil && len(rep.Refused) > 0 {
				s.opts.Logger.Info("matchmaker: a queue refused assignments (its claims had lapsed)", "queue", q, "tickets", len(rep.Refused))
			}
		})
	}
	wg.Wait()
	if s.opts.OnMatch != nil {
		for _, f := range fs {
			if f.allGranted() && f.err == nil {
				s.opts.OnMatch(f.m, f.place)
			}
		}
	}
}

// allGranted reports whether every queue of f's tickets granted it.
func (f *formed) allGranted() bool {
	for _, q := range f.queues {
		if !f.granted[q] {
			return false
		}
	}
	return true
}

// assignmentOf is ticket t's part of the placed match f.
func assignmentOf(f *formed, t Ticket) Assignment {
	a := Assignment{Ticket: t.ID, Match: f.m.ID, Mode: f.m.Mode, Room: f.place.Room, Node: f.place.Node, URL: f.place.URL,
		Region: f.m.Region, Tickets: map[string]string{}, Teams: f.m.Teams, WorstRTT: f.m.WorstRTT}
	for _, p := range t.Players {
		a.Tickets[p.ID] = f.place.Tickets[p.ID]
	}
	if len(t.Players) > 0 {
		for i, team := range f.m.Teams {
			if slices.ContainsFunc(team, func(p Player) bool { return p.ID == t.Players[0].ID }) {
				a.Team = i
			}
		}
	}
	return a
}

// place creates f's room: on the node the Matcher picked, else another of
// its region; for a backfill, it asks the room's queue to seat the
// players.
func (s *Service) place(ctx context.Context, f *formed, sites []Site) (cluster.Placement, error) {
	m := f.m
	var players []string
	for _, team := range m.Teams {
		for _, p := range team {
			players = append(players, p.ID)
		}
	}
	if b := m.Backfill; b != nil {
		rep, err := s.request(f.queues[0], &queueMsg{Op: "seat", Service: s.opts.ID, Instance: s.instance,
			Seat: &seatMsg{Ticket: m.Tickets[0].ID, Match: m.ID, Players: players}})
		switch {
		case err != nil:
			return cluster.Placement{}, err
		case rep.Error != "":
			return cluster.Placement{}, fmt.Errorf("matchmaker: backfill of %s refused: %s", b.Room, rep.Error)
		}
		return cluster.Placement{Room: b.Room, Node: b.Node, URL: b.URL, Tickets: rep.Tickets}, nil
	}
	if s.opts.Place != nil {
		return s.opts.Place(ctx, m)
	}
	md, _ := s.m.Mode(m.Mode) // modes never change
	req := cluster.RoomRequest{Room: m.ID, Players: players, Config: md.Room, Builds: m.Builds}
	nodes := []string{m.Node}
	for _, st := range sites { // as the pass began: its own matches may have filled some
		if st.Region == m.Region && st.Node != m.Node && st.Free > 0 && cluster.Serves(st.Builds, m.Builds) && len(nodes) < 3 {
			nodes = append(nodes, st.Node)
		}
	}
	var last error
	for _, n := range nodes {
		if n == "" {
			continue
		}
		p, err := cluster.CreateRoomOn(ctx, s.nc, n, req, s.opts.Cluster)
		if err == nil {
			return p, nil
		}
		last = err
		if !errors.Is(err, cluster.ErrNoCapacity) {
			break
		}
	}
	if last == nil {
		last = fmt.Errorf("%w: no node in region %q", cluster.ErrNoCapacity, m.Region)
	}
	return cluster.Placement{}, last
}

// request sends a queue its message and reads the reply. A message
// longer than a queue reads (maxBatch tickets, assignments, matches or
// ids) goes in parts, whose replies are joined.
func (s *Service) request(q string, qm *queueMsg) (*queueReply, error) {
	if parts := split(qm); len(parts) > 1 {
		var all queueReply
		for _, part := range parts {
			rep, err := s.request(q, part)
			if err != nil {
				return nil, err
			}
			all.Granted = append(all.Granted, rep.Granted...)
			all.Gone = append(all.Gone, rep.Gone...)
			all.Refused = append(all.Refused, rep.Refused...)
		}
		return &all, nil
	}
	b, err := json.Marshal(qm)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.RequestTimeout)
	defer cancel()
	msg, err := s.c.Request(ctx, s.opts.subjQueue(q), b, func(m *seal.Msg) bool { return queueSpeaks(m, q) })
	if err != nil {
		return nil, err
	}
	return decode[queueReply](msg.Data)
}

// split cuts qm into messages of at most maxBatch claimed tickets,
// assignments, matches and ids each (a claim, one match's, stays whole).
func split(qm *queueMsg) []*queueMsg {
	tickets := 0
	for _, c := range qm.Claims {
		tickets += len(c.Tickets)
	}
	if tickets <= maxBatch && len(qm.Assign) <= maxBatch && len(qm.Matches) <= maxBatch && len(qm.IDs) <= maxBatch {
		return []*queueMsg{qm}
	}
	var parts []*queueMsg
	part := func() *queueMsg {
		p := &queueMsg{Op: qm.Op, Service: qm.Service, Instance: qm.Instance, Seat: qm.Seat}
		parts = append(parts, p)
		return p
	}
	p, n := part(), 0
	for _, c := range qm.Claims {
		if n+len(c.Tickets) > maxBatch {
			p, n = part(), 0
		}
		p.Claims = append(p.Claims, c)
		n += len(c.Tickets)
	}
	for i := 0; i < len(qm.Assign); i += maxBatch {
		part().Assign = qm.Assign[i:min(len(qm.Assign), i+maxBatch)]
	}
	for i := 0; i < len(qm.Matches); i += maxBatch {
		part().Matches = qm.Matches[i:min(len(qm.Matches), i+maxBatch)]
	}
	for i := 0; i < len(qm.IDs); i += maxBatch {
		part().IDs = qm.IDs[i:min(len(qm.IDs), i+maxBatch)]
	}
	return slices.DeleteFunc(parts, func(p *queueMsg) bool {
		return len(p.Claims) == 0 && len(p.Assign) == 0 && len(p.Matches) == 0 && len(p.IDs) == 0
	})
}

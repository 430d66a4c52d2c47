//go:build !js

package matchmaker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tongbu/tongbu/internal/errstack"
	"github.com/tongbu/tongbu/internal/seal"
)

// Queue puts tickets in line for a match, from the process that holds the
// players (a lobby, a game's front server). It holds every ticket until it
// is matched, canceled or times out: it sends each to the Service that
// holds its pool, sends it to another when that Service dies, and grants
// each ticket to one match only. Its methods are safe for concurrent use.
type Queue struct {
	nc   *nats.Conn
	c    *seal.Conn // sealed as this queue
	opts Options
	id   string
	subs []*nats.Subscription
	stop chan struct{}
	done chan struct{}

	mu         sync.Mutex
	seq        uint64
	tickets    map[string]*Wait
	pending    []*Wait            // unsent: to send at the next tick
	claims     map[*Wait]struct{} // claimed: watched for lapsed claims
	services   map[string]*peer
	switches   map[[2]string]bool
	switchesAt int64
	// view counts the changes of the live Services and the switches:
	// tickets are routed again when it moves; owners caches the Service
	// of each mode and build for the current view.
	view, routed uint64
	owners       map[[2]string]string
	refreshed    time.Time // the last time tickets long in line were sent again
	closed       bool
}

// peer is what a queue knows of a Service.
type peer struct {
	instance uint64
	last     time.Time
	interval time.Duration
	leaving  bool
	up       bool // alive at the last tick
}

// A ticket's states in its queue.
const (
	unsent  = iota // to be sent to the Service of its pool
	sending        // a submit is under way
	waiting        // a Service holds it
	claimed        // granted to a match being placed
)

// Wait is a ticket in line: Await its Assignment, or Cancel it.
type Wait struct {
	q        *Queue
	t        Ticket
	seat     func(players []string) (map[string]string, error)
	state    int
	holder   string // the Service that holds it
	instance uint64
	match    string    // claimed: by which match
	deadline time.Time // claimed: until when
	since    time.Time // since when no Service has held it
	sent     time.Time // when its Service last took it
	done     chan struct{}
	res      Assignment
	err      error
}

// NewQueue starts a queue on nc. Close stops it; nc stays the caller's.
func NewQueue(nc *nats.Conn, opts *Options) (*Queue, error) {
	q, err := newQueue(nc, opts)
	return q, errstack.With(err)
}

func newQueue(nc *nats.Conn, opts *Options) (*Queue, error) {
	o := opts.withDefaults()
	var b [6]byte
	rand.Read(b[:])
	q := &Queue{nc: nc, opts: o, id: "q" + hex.EncodeToString(b[:]), tickets: map[string]*Wait{},
		services: map[string]*peer{}, switches: map[[2]string]bool{}, claims: map[*Wait]struct{}{}, owners: map[[2]string]string{}, stop: make(chan struct{}), done: make(chan struct{})}
	c, err := o.conn(nc, seal.RoleQueue, q.id)
	if err != nil {
		return nil, err
	}
	q.c = c
	for subj, fn := range map[string]func(*seal.Msg){
		o.subjQueue(q.id): q.onMsg,
		o.subjHeartbeat(): q.onHeartbeat,
		o.subjSwitch():    q.onSwitch,
	} {
		sub, err := c.Subscribe(subj, fn)
		if err != nil {
			q.unsubscribe()
			return nil, fmt.Errorf("matchmaker: subscribe %s: %w", subj, err)
		}
		q.subs = append(q.subs, sub)
	}
	if err := nc.Flush(); err != nil {
		q.unsubscribe()
		return nil, fmt.Errorf("matchmaker: subscribe: %w", err)
	}
	c.Publish(o.subjProbe(), nil) // every Service heartbeats at once
	go q.run()
	return q, nil
}

func (q *Queue) unsubscribe() {
	for _, s := range q.subs {
		s.Unsubscribe()
	}
	q.c.Close()
}

// Submit puts t in line and returns its Wait. The queue names the ticket
// (t.ID is replaced) and dates it (t.Since, unless set: a ticket moved
// from another queue keeps its place).
func (q *Queue) Submit(t Ticket) (*Wait, error) {
	w, err := q.submit(t, nil)
	return w, errstack.With(err)
}

// Backfill puts in line a running room's request for players (t.Backfill
// set, t.Players empty). When the matchmaker has found players, it calls
// seat with their ids, from the queue's goroutine: seat returns a room
// ticket for each (signed as the room's node signs them), or an error to
// turn them down. The Wait's Assignment then lists the players who join.
func (q *Queue) Backfill(t Ticket, seat func(players []string) (map[string]string, error)) (*Wait, error) {
	if t.Backfill == nil || seat == nil {
		return nil, errstack.With(fmt.Errorf("%w: Backfill needs Ticket.Backfill and a seat func", ErrTicket))
	}
	w, err := q.submit(t, seat)
	return w, errstack.With(err)
}

func (q *Queue) submit(t Ticket, seat func([]string) (map[string]string, error)) (*Wait, error) {
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, fmt.Errorf("%w: queue closed", ErrUnavailable)
	}
	q.seq++
	t.ID = q.id + "-" + strconv.FormatUint(q.seq, 36)
	if t.Since.IsZero() || t.Since.After(now) {
		t.Since = now
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	w := &Wait{q: q, t: t, seat: seat, since: now, done: make(chan struct{})}
	q.tickets[t.ID] = w
	q.pending = append(q.pending, w)
	return w, nil
}

// ID returns the ticket's id.
func (w *Wait) ID() string { return w.t.ID }

// Service returns the id of the Service that holds the ticket now, or ""
// while none does.
func (w *Wait) Service() string {
	w.q.mu.Lock()
	defer w.q.mu.Unlock()
	if w.state == waiting || w.state == claimed {
		return w.holder
	}
	return ""
}

// Ticket returns the ticket as queued.
func (w *Wait) Ticket() Ticket { return w.t }

// Done is closed once the ticket is matched, canceled, timed out or given
// up; Result then tells which.
func (w *Wait) Done() <-chan struct{} { return w.done }

// Result returns the ticket's Assignment, or why it has none (ErrTimeout,
// ErrCanceled, ErrUnavailable, ErrTicket); call it once Done is closed.
func (w *Wait) Result() (Assignment, error) {
	select {
	case <-w.done:
		return w.res, w.err
	default:
		return Assignment{}, errors.New("matchmaker: ticket still in line")
	}
}

// Await waits for the ticket's Assignment; ctx ending cancels the ticket.
func (w *Wait) Await(ctx context.Context) (Assignment, error) {
	select {
	case <-w.done:
	case <-ctx.Done():
		w.Cancel()
		<-w.done
	}
	return w.res, w.err
}

// Cancel takes the ticket out of line (ErrCanceled), unless it is matched
// already.
func (w *Wait) Cancel() {
	q := w.q
	q.mu.Lock()
	if q.tickets[w.t.ID] != w {
		q.mu.Unlock()
		return
	}
	holder, held := w.holder, w.state == waiting || w.state == claimed
	q.finish(w, Assignment{}, ErrCanceled)
	q.mu.Unlock()
	if held {
		q.publish(q.opts.subjCancel(holder), cancelMsg{Queue: q.id, IDs: []string{w.t.ID}})
	}
}

// finish ends w with res or err; q.mu is held.
func (q *Queue) finish(w *Wait, res Assignment, err error) {
	delete(q.tickets, w.t.ID)
	delete(q.claims, w)
	w.res, w.err = res, err
	close(w.done)
}

// Services returns the ids of the Services the queue takes for alive,
// sorted: those it sends tickets to.
func (q *Queue) Services() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := time.Now()
	var out []string
	for id, p := range q.services {
		if q.alive(p, now) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// Dropped counts the NATS messages the queue dropped, by reason
// (Service.Dropped).
func (q *Queue) Dropped() map[string]uint64 { return q.c.Stats().Dropped() }

// Len returns the tickets in line.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.tickets)
}

// Close stops the queue: its tickets end with ErrCanceled and the Services
// forget them. nc stays open.
func (q *Queue) Close() error {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return nil
	}
	q.closed = true
	per := map[string][]string{}
	for _, w := range q.tickets {
		if w.state == waiting || w.state == claimed {
			per[w.holder] = append(per[w.holder], w.t.ID)
		}
		q.finish(w, Assignment{}, ErrCanceled)
	}
	q.mu.Unlock()
	close(q.stop)
	<-q.done
	q.unsubscribe()
	for s, ids := range per {
		q.publish(q.opts.subjCancel(s), cancelMsg{Queue: q.id, IDs: ids})
	}
	q.nc.Flush()
	return nil
}

func (q *Queue) publish(subject string, v any) { publishJSON(q.c, q.opts.Logger, subject, v) }

// onHeartbeat follows the Services: each speaks for itself only, so
// that no one else can make a Service seem alive (and win pools by
// rendezvous hashing) or seem to leave.
func (q *Queue) onHeartbeat(msg *seal.Msg) {
	h, err := decode[heartbeat](msg.Data)
	if err != nil {
		q.opts.Logger.Debug("matchmaker: heartbeat dropped", "err", err)
		return
	}
	if !serviceSpeaks(msg, h.ID, h.Instance) {
		q.c.Refuse(msg, fmt.Sprintf("a heartbeat of Service %s from %v", h.ID, msg.From))
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	p := q.services[h.ID]
	if h.Leaving {
		if p != nil && p.instance == h.Instance && !p.leaving {
			p.leaving = true
			q.view++
		}
		return
	}
	if p == nil || p.instance != h.Instance {
		p = &peer{instance: h.Instance}
		q.services[h.ID] = p
		q.view++
	}
	p.last, p.interval = time.Now(), time.Duration(h.IntervalMS)*time.Millisecond
	if !p.up && !p.leaving {
		p.up = true
		q.view++
	}
	q.setSwitches(h.Switches, h.SwitchesAt)
}

func (q *Queue) onSwitch(msg *seal.Msg) {
	if !operator(msg) {
		q.c.Refuse(msg, "build switches from a "+msg.From.Role.String())
		return
	}
	sw, err := decode[switchMsg](msg.Data)
	if err != nil {
		return
	}
	q.mu.Lock()
	q.setSwitches(sw.Switches, sw.At)
	q.mu.Unlock()
}

// setSwitches takes switches if newer; q.mu is held.
func (q *Queue) setSwitches(sw [][2]string, at int64) {
	if at <= q.switchesAt {
		return
	}
	q.switchesAt = at
	q.view++
	q.switches = map[[2]string]bool{}
	for _, l := range sw {
		if l[0] != l[1] {
			q.switches[link(l[0], l[1])] = true
		}
	}
}

// alive reports whether Service p is alive at now.
func (q *Queue) alive(p *peer, now time.Time) bool {
	return p != nil && !p.leaving && now.Sub(p.last) <= time.Duration(q.opts.Misses)*p.interval
}

// owner returns the live Service that holds t's pool: of the live ones,
// the one whose hash with the pool's name is highest (rendezvous hashing:
// every queue picks the same, and a Service's death moves only its pools).
func (q *Queue) owner(t *Ticket) string {
	if o, ok := q.owners[[2]string{t.Mode, t.Build}]; ok {
		return o
	}
	key := t.Mode + "\x00" + groupOf(q.switches, t.Build)
	best, bestHash := "", uint64(0)
	for id, p := range q.services {
		if !p.up {
			continue
		}
		h := fnv.New64a()
		h.Write([]byte(id))
		h.Write([]byte{0})
		h.Write([]byte(key))
		if v := h.Sum64(); best == "" || v > bestHash || v == bestHash && id < best {
			best, bestHash = id, v
		}
	}
	q.owners[[2]string{t.Mode, t.Build}] = best
	return best
}

// run sends tickets to their Services and takes back those whose Service
// died or whose claim lapsed.
func (q *Queue) run() {
	defer close(q.done)
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-q.stop:
			return
		case now := <-t.C:
			q.tick(now)
		}
	}
}

func (q *Queue) tick(now time.Time) {
	batches := map[string][]*Wait{}
	cancels := map[string][]string{}
	q.mu.Lock()
	for _, p := range q.services {
		if up := q.alive(p, now); up != p.up {
			p.up = up
			q.view++
		}
	}
	if q.view != q.routed {
		// A Service came or went, or a switch moved: route every ticket
		// held again.
		q.routed = q.view
		clear(q.owners)
		for _, w := range q.tickets {
			if w.state != waiting && w.state != claimed {
				continue
			}
			if p := q.services[w.holder]; p == nil || !p.up || p.instance != w.instance {
				// Its Service died (a claim it held lapses with it: were
				// it alive after all, its assignment is refused): send it
				// to another.
				delete(q.claims, w)
				w.state, w.since = unsent, now
				q.pending = append(q.pending, w)
			} else if w.state == waiting && q.owner(&w.t) != w.holder {
				cancels[w.holder] = append(cancels[w.holder], w.t.ID) // its pool moved
				w.state, w.since = unsent, now
				q.pending = append(q.pending, w)
			}
		}
	}
	if now.Sub(q.refreshed) > q.opts.Refresh/4 {
		q.refreshed = now
		for _, w := range q.tickets {
			if w.state == waiting && now.Sub(w.sent) > q.opts.Refresh {
				w.state = unsent // to the same Service, unless its pool moved
				q.pending = append(q.pending, w)
			}
		}
	}
	for w := range q.claims {
		if now.After(w.deadline) {
			q.opts.Logger.Info("matchmaker: a claim lapsed; the ticket queues again", "ticket", w.t.ID, "service", w.holder, "match", w.match)
			delete(q.claims, w)
			w.state, w.since = unsent, now
			q.pending = append(q.pending, w)
		}
	}
	keep := q.pending[:0]
	for _, w := range q.pending {
		if q.tickets[w.t.ID] != w || w.state != unsent {
			continue
		}
		o := q.owner(&w.t)
		if o == "" {
			if now.Sub(w.since) > q.opts.Unavailable {
				q.finish(w, Assignment{}, fmt.Errorf("%w: none for %v", ErrUnavailable, q.opts.Unavailable))
			} else {
				keep = append(keep, w)
			}
			continue
		}
		w.state = sending
		batches[o] = append(batches[o], w)
	}
	clear(q.pending[len(keep):])
	q.pending = keep
	q.mu.Unlock()
	for s, ids := range cancels {
		q.publish(q.opts.subjCancel(s), cancelMsg{Queue: q.id, IDs: ids})
	}
	for s, ws := range batches {
		go q.send(s, ws)
	}
}

// send submits ws to Service s.
func (q *Queue) send(s string, ws []*Wait) {
	for len(ws) > 0 {
		n := min(len(ws), maxBatch)
		q.sendBatch(s, ws[:n])
		ws = ws[n:]
	}
}

func (q *Queue) sendBatch(s string, ws []*Wait) {
	req := submitMsg{Queue: q.id, Tickets: make([]Ticket, len(ws))}
	for i, w := range ws {
		req.Tickets[i] = w.t
	}
	var rep *submitReply
	b, err := json.Marshal(req)
	if err == nil {
		var msg *seal.Msg
		ctx, cancel := context.WithTimeout(context.Background(), q.opts.RequestTimeout)
		msg, err = q.c.Request(ctx, q.opts.subjSubmit(s), b, func(m *seal.Msg) bool { return m.From.Role == seal.RoleService && m.From.ID == s })
		cancel()
		if err == nil {
			if rep, err = decode[submitReply](msg.Data); err == nil && rep.Instance != msg.From.Instance {
				err = fmt.Errorf("%w: Service %s instance %x answered for instance %x", ErrTicket, s, msg.From.Instance, rep.Instance)
			}
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, w := range ws {
		if q.tickets[w.t.ID] != w || w.state != sending {
			continue // canceled meanwhile (the Service forgets it by the cancel)
		}
		switch {
		case err != nil:
			w.state = unsent // the next tick tries again
			q.pending = append(q.pending, w)
		case rep.Refused[w.t.ID] != "":
			why := ErrTicket
			if strings.HasPrefix(rep.Refused[w.t.ID], ErrFull.Error()) {
				why = ErrFull
			}
			q.finish(w, Assignment{}, fmt.Errorf("%w: %s", why, rep.Refused[w.t.ID]))
		default:
			w.state, w.holder, w.instance, w.sent = waiting, s, rep.Instance, time.Now()
		}
	}
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		q.opts.Logger.Info("matchmaker: submit", "service", s, "tickets", len(ws), "err", err)
	}
}

// onMsg answers a Service: claims, assignments, releases, timeouts and
// seat requests, each from the Service instance it names.
func (q *Queue) onMsg(msg *seal.Msg) {
	m, err := decode[queueMsg](msg.Data)
	if err != nil {
		q.opts.Logger.Debug("matchmaker: queue message dropped", "err", err)
		respond(msg, queueReply{Error: err.Error()})
		return
	}
	if !serviceSpeaks(msg, m.Service, m.Instance) {
		q.c.Refuse(msg, fmt.Sprintf("a %s naming Service %s instance %x, from %v", m.Op, m.Service, m.Instance, msg.From))
		return
	}
	var rep queueReply
	now := time.Now()
	mine := func(w *Wait) bool { return w != nil && w.holder == m.Service && w.instance == m.Instance }
	q.mu.Lock()
	switch m.Op {
	case "claim":
		for _, c := range m.Claims {
			ok := true
			for _, id := range c.Tickets {
				w := q.tickets[id]
				switch {
				case !mine(w) || w.state == unsent:
					rep.Gone = append(rep.Gone, id)
					ok = false
				case w.state != waiting:
					ok = false
				}
			}
			if !ok {
				continue
			}
			for _, id := range c.Tickets {
				w := q.tickets[id]
				w.state, w.match, w.deadline = claimed, c.Match, now.Add(q.opts.ClaimTimeout)
				q.claims[w] = struct{}{}
			}
			rep.Granted = append(rep.Granted, c.Match)
		}
	case "assign":
		for _, a := range m.Assign {
			w := q.tickets[a.Ticket]
			if !mine(w) || w.state != claimed || w.match != a.Match {
				rep.Refused = append(rep.Refused, a.Ticket)
				continue
			}
			q.finish(w, a, nil)
		}
	case "release":
		for w := range q.claims {
			if mine(w) && w.state == claimed && slices.Contains(m.Matches, w.match) {
				w.state = waiting
				delete(q.claims, w)
			}
		}
	case "expire":
		for _, id := range m.IDs {
			if w := q.tickets[id]; mine(w) && w.state == waiting {
				q.finish(w, Assignment{}, fmt.Errorf("%w: waited %v", ErrTimeout, now.Sub(w.t.Since).Round(time.Second)))
			}
		}
	case "seat":
		w := q.tickets[m.Seat.Ticket]
		if !mine(w) || w.state != claimed || w.match != m.Seat.Match || w.seat == nil {
			rep.Error = "no such backfill claimed"
			break
		}
		seat := w.seat
		q.mu.Unlock()
		tickets, err := seat(m.Seat.Players)
		q.mu.Lock()
		if err != nil {
			rep.Error = err.Error()
		} else {
			rep.Tickets = tickets
		}
	}
	q.mu.Unlock()
	respond(msg, rep)
}

// SetSwitches opens, on every Service and queue of opts.Prefix on nc,
// exactly the switches listed: each lets the players of two builds meet
// (a preview build and the live one, once their versions agree). Nil
// closes them all. The newest call wins.
func SetSwitches(nc *nats.Conn, switches [][2]string, opts *Options) error {
	o := opts.withDefaults()
	if err := checkSwitches(switches); err != nil {
		return errstack.With(err)
	}
	c, err := o.conn(nc, seal.RoleClient, "switches-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err != nil {
		return errstack.With(err)
	}
	defer c.Close()
	b, err := json.Marshal(switchMsg{Switches: switches, At: time.Now().UnixNano()})
	if err == nil {
		err = c.Publish(o.subjSwitch(), b)
	}
	if err == nil {
		err = nc.Flush()
	}
	return errstack.With(err)
}

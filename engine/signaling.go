//go:build !js

package engine

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tongbu/tongbu/transport"
)

// The server's signaling hooks (transport.ServerConfig's Authorize, Admit,
// OfferKey and Refused): the wire version and the ticket of each request,
// and the refusals, counted and logged by reason.

// authorize is the signaling hook: a request without a good ticket is
// refused before its body is read or any WebRTC resource is taken. It
// does not spend the ticket: admitOffer does, once the offer has parsed.
func (s *Server) authorize(r *http.Request) (any, error) {
	wire, err := negotiateWire(r.Header.Get(WireHeader))
	if err != nil {
		s.refusedWith(refuseReason(err), err)
		return nil, signalingRefusal(err)
	}
	if err := checkBuild(s.cfg.Builds, r.Header.Get(BuildHeader)); err != nil {
		s.refusedWith(refuseReason(err), err)
		return nil, signalingRefusal(err)
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok && s.cfg.TicketInQuery {
		token = r.URL.Query().Get("ticket")
	}
	if token == "" {
		err := fmt.Errorf("%w: none presented (Authorization: Bearer <ticket>)", ErrTicketInvalid)
		s.refusedWith("no_ticket", err)
		return nil, signalingRefusal(err)
	}
	t, err := s.check(token, time.Now())
	if err == nil {
		err = s.wireFor(t.Target, wire)
	}
	if err != nil {
		s.refusedWith(refuseReason(err), err)
		return nil, signalingRefusal(err)
	}
	return admission{t, wire}, nil
}

// wireFor returns ErrWireVersion when target needs a newer wire than the
// client reads: a strict room (lockstep.Config.Strict) needs strictWire,
// a world with field groups (interest.Config.Groups) groupsWire, and
// every world movesWire.
func (s *Server) wireFor(target string, wire int) error {
	s.mu.Lock()
	r, w := s.rooms[target], s.worlds[target]
	s.mu.Unlock()
	switch {
	case r != nil:
		return r.wireFor(wire)
	case w != nil && wire < movesWire:
		return fmt.Errorf("%w: world %q numbers its entities' moves, which clients read from wire version %d; the client reads %d: update the client", ErrWireVersion, target, movesWire, wire)
	case w != nil && wire < groupsWire && len(w.world.Config().Groups) > 0:
		return fmt.Errorf("%w: world %q has field groups, which clients read from wire version %d; the client reads %d: update the client", ErrWireVersion, target, groupsWire, wire)
	}
	return nil
}

// admission is what authorize lets through: the ticket, and the wire
// version to write to the client.
type admission struct {
	ticket Ticket
	wire   int
}

// admitOffer is the hook called once an offer has parsed: it spends the
// ticket authorize checked. Of concurrent offers with one ticket, one
// spends it and the others are refused as replays.
func (s *Server) admitOffer(meta any) error {
	t := meta.(admission).ticket
	if err := s.used.use(t, time.Now()); err != nil {
		s.refusedWith(refuseReason(err), err)
		return signalingRefusal(err)
	}
	return nil
}

// offerKey names the ticket an offer uses, so that one ticket holds at
// most two handshakes in progress (transport.ServerConfig.OfferKey): its
// nonce, which every copy of the ticket shares.
func offerKey(meta any) string {
	t := meta.(admission).ticket
	return strconv.FormatUint(t.Nonce, 36)
}

// signalingRefused is the transport's hook for the requests it refuses
// itself (busy, slow or oversized offers, bad SDP).
func (s *Server) signalingRefused(_ int, reason string) {
	s.refusedWith(reason, nil)
}

// refusedWith counts a refused connection by reason and logs it at a
// bounded rate: a flood of forged tickets must not become a flood of log
// lines. Each line counts the refusals since the last by reason.
func (s *Server) refusedWith(reason string, err error) {
	s.metrics.refused(reason)
	if n, byReason, ok := s.refusalLog.add(time.Now(), reason); ok {
		if err == nil {
			err = errors.New(reason)
		}
		s.log.Info("connections refused", "count", n, "by_reason", byReason, "last_err", err)
	}
}

// refusalLog lets one log line through per refusalLogEvery, counting the
// refusals in between by reason.
type refusalLog struct {
	mu       sync.Mutex
	next     time.Time
	count    int
	byReason map[string]int // the metrics' labels: a few dozen at most
}

// refusalLogEvery is the most often a line about refused connections is
// logged.
const refusalLogEvery = 10 * time.Second

// add counts one refusal; when a line is due it returns the refusals since
// the last line, this one included, in all and by reason ("expired=2
// invalid=3").
func (l *refusalLog) add(now time.Time, reason string) (int, string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.count++
	if l.byReason == nil {
		l.byReason = map[string]int{}
	}
	l.byReason[reason]++
	if now.Before(l.next) {
		return 0, "", false
	}
	reasons := make([]string, 0, len(l.byReason))
	for r, n := range l.byReason {
		reasons = append(reasons, r+"="+strconv.Itoa(n))
	}
	slices.Sort(reasons)
	n := l.count
	l.count, l.next = 0, now.Add(refusalLogEvery)
	clear(l.byReason)
	return n, strings.Join(reasons, " "), true
}

// refusalOf returns the kind of refusal err is.
func refusalOf(err error) refusalKind {
	for _, k := range refusalKinds {
		if errors.Is(err, k.err) {
			return k
		}
	}
	return refusalKind{err: err, reason: "forbidden", label: "other", status: http.StatusForbidden}
}

func refuseReason(err error) string { return refusalOf(err).label }

// signalingRefusal is the transport refusal for a ticket check's error:
// its status, and the reason token Dial reads.
func signalingRefusal(err error) error {
	k := refusalOf(err)
	rf := &transport.Refusal{Status: k.status, Reason: k.reason, Err: err}
	var mv *movedError
	if errors.As(err, &mv) {
		rf.Header = mv.header() // where the player went, for its client to follow
	}
	return rf
}

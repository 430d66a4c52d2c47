// Package netlimit bounds what one client network (an IPv4 address, an
// IPv6 /64, as transport.ClientNetworks groups them) may open: how many
// new connections a second, by a token bucket per network, and how many
// it holds at once. The HTTP listener and the ICE-TCP listener share it,
// so that every listener the server opens is bounded the same way.
package netlimit

import (
	"net/netip"
	"sync"
	"time"

	"github.com/tongbu/tongbu/internal/tokens"
)

// Rate is a token bucket per network: each may open Rate things a
// second, after a burst of twice as many. The zero value needs its Rate
// set; a negative Rate allows everything. It is not safe for concurrent
// use: its owner holds its own lock (the listeners count open
// connections under the same one).
type Rate struct {
	Rate    int
	buckets map[netip.Prefix]*tokens.Bucket
}

// Allow takes a token for one new thing from key at now, and reports
// false when its bucket is empty. Buckets that have refilled are
// forgotten on the way, a few a call, so that the map holds only the
// networks that opened something lately.
func (r *Rate) Allow(key netip.Prefix, now time.Time) bool {
	if r.Rate < 0 {
		return true
	}
	if r.buckets == nil {
		r.buckets = map[netip.Prefix]*tokens.Bucket{}
	}
	rate, burst := float64(r.Rate), float64(2*r.Rate)
	n := 0
	for k, b := range r.buckets { // map order: a different few each time
		if n++; n > 4 {
			break
		}
		if k != key && b.Full(now, rate, burst) {
			delete(r.buckets, k)
		}
	}
	b := r.buckets[key]
	if b == nil {
		b = &tokens.Bucket{}
		r.buckets[key] = b
	}
	return b.Take(now, rate, burst)
}

// Len returns the networks with a bucket.
func (r *Rate) Len() int { return len(r.buckets) }

// Share counts what each network holds open, up to PerNetwork each and
// Max in all, under its own lock, with the new-connection Rate beside
// it. The zero value needs its bounds set.
type Share struct {
	PerNetwork int // at most this many open from one network
	Max        int // at most this many open in all (0: no bound)

	mu   sync.Mutex
	open map[netip.Prefix]int
	all  int
	rate Rate
}

// SetRate sets the new things a network may open a second (negative:
// unbounded).
func (s *Share) SetRate(n int) {
	s.mu.Lock()
	s.rate.Rate = n
	s.mu.Unlock()
}

// Why Take refused.
const (
	OK        = ""
	Total     = "total"       // Max are open
	Network   = "per_network" // the network holds PerNetwork
	RateLimit = "rate"        // the network opened too many lately
)

// Take counts one more open from key at now, when the bounds allow it,
// and returns OK; else it returns why not, and counts nothing. An
// unbounded key (bounded false: loopback, a trusted proxy) is counted in
// the total only.
func (s *Share) Take(key netip.Prefix, bounded bool, now time.Time) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.Max > 0 && s.all >= s.Max:
		return Total
	case !bounded:
	case s.open[key] >= s.PerNetwork:
		return Network
	case !s.rate.Allow(key, now):
		return RateLimit
	}
	s.all++
	if bounded {
		if s.open == nil {
			s.open = map[netip.Prefix]int{}
		}
		s.open[key]++
	}
	return OK
}

// Give gives back one open thing of key (taken with the same bounded).
func (s *Share) Give(key netip.Prefix, bounded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all--
	if bounded {
		if s.open[key]--; s.open[key] <= 0 {
			delete(s.open, key)
		}
	}
}

// Open returns how many things are open in all, and from key.
func (s *Share) Open(key netip.Prefix) (all, network int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all, s.open[key]
}

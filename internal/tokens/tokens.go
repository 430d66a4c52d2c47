// Package tokens is the token bucket the server's rate limits share: the
// probes a socket answers, the connections a network opens, a peer's
// messages.
package tokens

import "time"

// Bucket holds tokens that refill at a rate, up to a burst. The zero
// value is full at its first Take. It is not safe for concurrent use.
type Bucket struct {
	tokens float64
	at     time.Time
}

// Take refills b to now and takes one token, reporting whether there was
// one.
func (b *Bucket) Take(now time.Time, rate, burst float64) bool {
	if b.at.IsZero() {
		b.tokens = burst
	} else {
		b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*rate)
	}
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// Full reports whether b will have refilled to burst by now: a bucket
// that may be forgotten.
func (b *Bucket) Full(now time.Time, rate, burst float64) bool {
	return b.at.IsZero() || b.tokens+now.Sub(b.at).Seconds()*rate >= burst
}

package conn

import "time"

// Limits bound a connection: the transport package's Limits, where each
// field and its default are described. It is the same struct (the
// transport converts one to the other, so the compiler holds the two
// alike), kept apart so that the public type keeps its documentation.
type Limits struct {
	MaxUnreliable, MaxReliable     int
	HandshakeTimeout, ICETimeout   time.Duration
	IdleTimeout, KeepAlive         time.Duration
	MaxBufferedUnreliable          int
	MaxReliableQueue               int
	InboxUnreliable, InboxReliable int
}

// WithDefaults returns l with its zero fields set to their defaults.
func WithDefaults(l Limits) Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxUnreliable, DefaultMaxUnreliable)
	def(&l.MaxReliable, 16<<10)
	def(&l.MaxBufferedUnreliable, 64<<10)
	def(&l.MaxReliableQueue, 4<<20)
	def(&l.InboxUnreliable, 1024)
	def(&l.InboxReliable, 1024)
	if l.HandshakeTimeout <= 0 {
		l.HandshakeTimeout = 10 * time.Second
	}
	if l.ICETimeout <= 0 || l.ICETimeout > l.HandshakeTimeout {
		l.ICETimeout = l.HandshakeTimeout / 2
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = 15 * time.Second
	}
	if l.KeepAlive <= 0 || l.KeepAlive > l.IdleTimeout/2 {
		l.KeepAlive = l.IdleTimeout / 3
	}
	return l
}

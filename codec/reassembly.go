package codec

import (
	"fmt"
	"time"
)

// Reassembly defaults.
const (
	DefaultReassemblyBytes   = 1 << 20
	DefaultReassemblyTimeout = 5 * time.Second
)

// ReassemblerConfig bounds what one peer can make a Reassembler hold. Zero
// fields take the defaults.
type ReassemblerConfig struct {
	// MaxParts caps the parts of one message (default DefaultMaxParts, at
	// most MaxPartsLimit).
	MaxParts int
	// MaxBytes caps the payload bytes held across all incomplete messages of
	// the peer (default DefaultReassemblyBytes).
	MaxBytes int
	// MaxMessage caps the size of one reassembled message (default MaxBytes).
	MaxMessage int
	// Timeout is how long an incomplete message is kept after its first part
	// arrived (default DefaultReassemblyTimeout).
	Timeout time.Duration
}

func (c ReassemblerConfig) withDefaults() ReassemblerConfig {
	if c.MaxParts <= 0 {
		c.MaxParts = DefaultMaxParts
	}
	c.MaxParts = min(c.MaxParts, MaxPartsLimit)
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultReassemblyBytes
	}
	if c.MaxMessage <= 0 || c.MaxMessage > c.MaxBytes {
		c.MaxMessage = c.MaxBytes
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultReassemblyTimeout
	}
	return c
}

// ReassemblyStats counts what a Reassembler completed and dropped.
type ReassemblyStats struct {
	Completed  uint64 // messages reassembled
	Expired    uint64 // incomplete messages dropped on timeout
	Refused    uint64 // messages dropped for a cap or a mismatch
	Duplicates uint64 // duplicate parts ignored
	HeldBytes  int    // bytes held now: payloads plus bookkeeping
	HeldMsgs   int    // incomplete messages held now
}

// Reassembler puts split messages back together for one peer. It accepts
// parts in any order, copies what it holds (the caller may reuse its
// packet buffers), and keeps the bytes held under MaxBytes whatever the
// peer sends. It is not safe for concurrent use: the goroutine that owns the
// peer drives it, passing the time explicitly.
type Reassembler struct {
	cfg   ReassemblerConfig
	msgs  map[uint16]*partial
	stats ReassemblyStats
}

type partial struct {
	typ   uint8
	first time.Time
	parts [][]byte // nil until the part arrives
	got   int
	size  int // payload bytes held
	cost  int // size plus bookkeeping, counted against MaxBytes
}

// partialCost is the bookkeeping charged for an incomplete message with n
// parts, so that a peer cannot make the Reassembler hold memory by sending
// many empty first parts.
func partialCost(n int) int { return 64 + 24*n }

// NewReassembler returns a Reassembler with the given limits.
func NewReassembler(cfg ReassemblerConfig) *Reassembler {
	return &Reassembler{cfg: cfg.withDefaults(), msgs: make(map[uint16]*partial)}
}

// Stats returns the counters and what is held now.
func (r *Reassembler) Stats() ReassemblyStats { return r.stats }

// Add takes a frame read by ReadFrame. For an unsplit frame it returns the
// payload at once. For a part it returns the whole message when this part
// completes it, and nil while parts are missing. On error the part is
// dropped (and, for a cap or a mismatch, the whole message with it); the
// peer's other messages are not affected.
func (r *Reassembler) Add(now time.Time, f Frame) ([]byte, error) {
	if !f.Split {
		return f.Payload, nil
	}
	if f.Parts > r.cfg.MaxParts {
		r.stats.Refused++
		return nil, fmt.Errorf("%w: message %d has %d parts, cap %d", ErrTooManyParts, f.MsgID, f.Parts, r.cfg.MaxParts)
	}
	if f.Part < 0 || f.Part >= f.Parts {
		return nil, fmt.Errorf("%w: part %d of %d", ErrBadFrame, f.Part, f.Parts)
	}
	p := r.msgs[f.MsgID]
	if p != nil && now.Sub(p.first) > r.cfg.Timeout {
		r.drop(f.MsgID, p)
		r.stats.Expired++
		p = nil
	}
	if p == nil {
		cost := partialCost(f.Parts)
		if r.stats.HeldBytes+cost > r.cfg.MaxBytes {
			r.Expire(now)
		}
		if r.stats.HeldBytes+cost > r.cfg.MaxBytes {
			r.stats.Refused++
			return nil, fmt.Errorf("%w: no room for message %d of %d parts (%d bytes held, cap %d)",
				ErrPeerBudget, f.MsgID, f.Parts, r.stats.HeldBytes, r.cfg.MaxBytes)
		}
		p = &partial{typ: f.Type, first: now, parts: make([][]byte, f.Parts), cost: cost} // Parts is capped above
		r.msgs[f.MsgID] = p
		r.stats.HeldMsgs++
		r.stats.HeldBytes += cost
	} else if p.typ != f.Type || len(p.parts) != f.Parts {
		r.drop(f.MsgID, p)
		r.stats.Refused++
		return nil, fmt.Errorf("%w: message %d was type %d in %d parts, part says type %d in %d",
			ErrPartMismatch, f.MsgID, p.typ, len(p.parts), f.Type, f.Parts)
	}
	if p.parts[f.Part] != nil {
		r.stats.Duplicates++
		return nil, fmt.Errorf("%w: message %d part %d", ErrDuplicatePart, f.MsgID, f.Part)
	}
	n := len(f.Payload)
	if p.size+n > r.cfg.MaxMessage || r.stats.HeldBytes+n > r.cfg.MaxBytes {
		r.Expire(now) // make room from stale messages before refusing
		if _, live := r.msgs[f.MsgID]; !live || p.size+n > r.cfg.MaxMessage || r.stats.HeldBytes+n > r.cfg.MaxBytes {
			if live {
				r.drop(f.MsgID, p)
			}
			r.stats.Refused++
			return nil, fmt.Errorf("%w: message %d would hold %d bytes (cap %d), peer %d (cap %d)",
				ErrPeerBudget, f.MsgID, p.size+n, r.cfg.MaxMessage, r.stats.HeldBytes+n, r.cfg.MaxBytes)
		}
	}
	// A zero-length part is stored as an empty non-nil slice so that it
	// counts as received.
	p.parts[f.Part] = append(make([]byte, 0, n), f.Payload...)
	p.got++
	p.size += n
	p.cost += n
	r.stats.HeldBytes += n
	if p.got < len(p.parts) {
		return nil, nil
	}
	msg := make([]byte, 0, p.size)
	for _, part := range p.parts {
		msg = append(msg, part...)
	}
	r.drop(f.MsgID, p)
	r.stats.Completed++
	return msg, nil
}

func (r *Reassembler) drop(id uint16, p *partial) {
	delete(r.msgs, id)
	r.stats.HeldBytes -= p.cost
	r.stats.HeldMsgs--
}

// Expire drops every incomplete message whose first part arrived more than
// Timeout before now, and returns how many it dropped. Call it from the
// peer's tick.
func (r *Reassembler) Expire(now time.Time) int {
	n := 0
	for id, p := range r.msgs {
		if now.Sub(p.first) > r.cfg.Timeout {
			r.drop(id, p)
			n++
		}
	}
	r.stats.Expired += uint64(n)
	return n
}

package lockstep

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// MaxViewHoldBytes bounds what a client of an authoritative room holds of
// views still waiting for their parts. A view the bound refuses is handed
// to the game with what it has and Frame.ViewCut set, and Deliver returns
// ErrViewTooLarge for the part that broke it.
const MaxViewHoldBytes = 4 << 20

// ErrViewTooLarge is the error for a view part over MaxViewHoldBytes.
var ErrViewTooLarge = fmt.Errorf("%w: a view over what the client holds", ErrMalformed)

// clientViews is a client's views that came in parts, until they are whole.
type clientViews struct {
	pending map[int]*partView // by frame
	bytes   int               // the change bytes held in pending
}

// partView is one view coming in parts.
type partView struct {
	head  *Frame          // nil until it comes
	parts [][]StateChange // by part number - 1
	got   int
	bytes int
	cut   bool // the client's bound refused it: it is handed on as it is
}

// viewHead takes a view's head from a frames packet: it returns the
// whole frame when the view is whole (it came in one piece, or its parts
// are all here), else it keeps it and reports false.
func (c *Client) viewHead(f Frame) (Frame, bool) {
	v := c.views.pending[f.Number]
	switch {
	case v != nil && v.head != nil:
		return f, false // a copy of a head held
	case f.more == 0 && v == nil:
		return f, true
	case v == nil:
		v = &partView{}
		if c.views.pending == nil {
			c.views.pending = map[int]*partView{}
		}
		c.views.pending[f.Number] = v
	}
	v.head = &f
	return c.viewWhole(f.Number, v)
}

// viewWhole returns the frame of view v once it is whole (or cut), and
// forgets it.
func (c *Client) viewWhole(n int, v *partView) (Frame, bool) {
	if v.head == nil || (!v.cut && v.got < v.head.more) {
		return Frame{}, false
	}
	f := *v.head
	f.more = 0
	f.ViewCut = f.ViewCut || v.cut
	for i := 0; i < len(v.parts) && i < v.head.more; i++ {
		f.Changes = append(f.Changes, v.parts[i]...)
	}
	delete(c.views.pending, n)
	c.views.bytes -= v.bytes
	return f, true
}

// viewPart takes a further part of a view (lifecycle message lifeMore,
// kind lifeViewPart), and plays the frame on if it made the view whole.
func (c *Client) viewPart(now time.Time, r *codec.Reader) error {
	n := r.ReadUvarint()
	i := int(r.ReadUint(MaxViewParts))
	f := Frame{Number: int(min(n, maxFrame))}
	if err := readChanges(r, &f); err != nil {
		return err
	}
	if err := r.Done(); err != nil {
		return fmt.Errorf("%w: view part: %w", ErrMalformed, err)
	}
	switch {
	case c.players() != authPlayers:
		return fmt.Errorf("%w: a view part in a room that sends inputs", ErrMalformed)
	case n > maxFrame || i < 1:
		return fmt.Errorf("%w: view part %d of frame %d", ErrMalformed, i, n)
	case f.Number < c.have || c.hasAhead(f.Number):
		return nil // a view already whole
	case f.Number > c.have+4*maxRunFrames*MaxRedundancy+maxChunkFrames:
		return fmt.Errorf("%w: view part of frame %d, %d held", ErrMalformed, f.Number, c.have)
	}
	v := c.views.pending[f.Number]
	if v == nil {
		v = &partView{}
		if c.views.pending == nil {
			c.views.pending = map[int]*partView{}
		}
		c.views.pending[f.Number] = v
	}
	if v.cut || v.head != nil && i > v.head.more {
		return nil
	}
	for len(v.parts) < i {
		v.parts = append(v.parts, nil)
	}
	if v.parts[i-1] != nil {
		return nil // a repeat
	}
	size := 0
	for _, ch := range f.Changes {
		size += len(ch.Data) + 8
	}
	var err error
	if c.views.bytes+size > MaxViewHoldBytes {
		// Refused: the view goes on as it is, cut, and the game is told.
		v.cut = true
		c.views.bytes -= v.bytes
		v.bytes, v.parts = 0, nil
		err = fmt.Errorf("%w: frame %d, %d bytes held", ErrViewTooLarge, f.Number, c.views.bytes)
	} else {
		v.parts[i-1] = f.Changes
		if len(f.Changes) == 0 {
			v.parts[i-1] = []StateChange{} // held, though empty
		}
		v.got++
		v.bytes += size
		c.views.bytes += size
	}
	if whole, ok := c.viewWhole(f.Number, v); ok {
		c.place(now, whole)
	}
	return err
}

// hasAhead reports whether frame n is held beyond the contiguous frames.
func (c *Client) hasAhead(n int) bool {
	_, ok := c.ahead[n]
	return ok
}

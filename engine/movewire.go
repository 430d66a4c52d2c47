package engine

import (
	"fmt"
	"time"

	"github.com/tongbu/tongbu/codec"
)

// StandbyTTL is the longest a standby place (World.Hold) is held, and a
// client's standby connection waits: a player who lingers near a border
// longer is given a new one.
const StandbyTTL = 10 * time.Minute

// Bounds on a move message's fields (SPEC.md section 9.3).
const (
	maxMoveURL    = 512
	maxMoveTicket = 512
	maxMoveText   = 200
)

// move is the server's word to a client that its player is being
// transferred: the world it goes to, the server to dial (empty: the one
// it is on) and the ticket that takes its booked place there.
type move struct {
	world, url, ticket string
	seamless           bool // the next cell of the same map: the client keeps what it knows
	standby            bool // connect now and wait, parked, for the welcome (World.Standby)
}

func appendMove(dst []byte, m *move) []byte {
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeMove, typeBits)
	w.WriteString(m.world, MaxNameLen)
	w.WriteString(m.url, maxMoveURL)
	w.WriteString(m.ticket, maxMoveTicket)
	w.WriteBool(m.seamless)
	w.WriteBool(m.standby)
	return w.Bytes()
}

func readMove(msg []byte) (*move, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeMove {
		return nil, fmt.Errorf("%w: not a move", ErrMalformed)
	}
	m := &move{world: r.ReadString(MaxNameLen), url: r.ReadString(maxMoveURL), ticket: r.ReadString(maxMoveTicket), seamless: r.ReadBool()}
	if r.Remaining() > 0 { // a move of SPEC.md 9.3 before the standby bit ends here
		m.standby = r.ReadBool()
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("%w: move: %v", ErrMalformed, err)
	}
	if m.world == "" || m.ticket == "" {
		return nil, fmt.Errorf("%w: move without a world or ticket", ErrMalformed)
	}
	return m, nil
}

// appendMoveFail is the client's word that it could not make the move it
// was told to: its player stays where it is.
func appendMoveFail(dst []byte, text string) []byte {
	if len(text) > maxMoveText {
		text = text[:maxMoveText]
	}
	w := codec.NewWriter(dst)
	w.WriteBits(kindEngine, kindBits)
	w.WriteBits(typeMoveFail, typeBits)
	w.WriteString(text, maxMoveText)
	return w.Bytes()
}

func readMoveFail(msg []byte) (string, error) {
	r := codec.NewReader(msg)
	if r.ReadBits(kindBits) != kindEngine || r.ReadBits(typeBits) != typeMoveFail {
		return "", fmt.Errorf("%w: not a move failure", ErrMalformed)
	}
	text := r.ReadString(maxMoveText)
	if err := r.Err(); err != nil {
		return "", fmt.Errorf("%w: move failure: %v", ErrMalformed, err)
	}
	return text, nil
}

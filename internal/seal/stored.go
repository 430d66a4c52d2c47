package seal

import (
	"fmt"
	"time"
)

// Stored records: what a process keeps in a store that others read
// later (package cluster's world checkpoints in a JetStream bucket),
// sealed as a message is, and bound to the record's key rather than to a
// subject. A stored record is not fresh and may be read many times, so
// neither its age nor a repeat is refused: the reader checks what the
// record says of itself (its world, its frame).

// storedSubject is what a stored record under key is bound to.
func storedSubject(key string) string { return "\x00stored." + key }

// SealStored returns payload sealed by c's sender for the store's key.
func (c *Conn) SealStored(key string, payload []byte) []byte {
	return c.s.Seal(storedSubject(key), payload, time.Now())
}

// OpenStored opens a record sealed with SealStored for key, and returns
// who sealed it, when, and its payload. Errors match ErrForged.
func (k *Keys) OpenStored(key string, msg []byte) (Peer, time.Time, []byte, error) {
	var aad []byte
	h, out, err := open(k, &aeads{}, &aad, nil, storedSubject(key), msg)
	if err != nil {
		return h.peer, time.Time{}, nil, err
	}
	if h.bind != nil {
		return h.peer, time.Time{}, nil, fmt.Errorf("%w: a reply stored under %s", ErrForged, key)
	}
	return h.peer, h.at, out, nil
}

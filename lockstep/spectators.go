package lockstep

import (
	"fmt"
	"iter"
	"slices"
	"time"
)

// maxSpectators bounds the spectators watching one room at once.
const maxSpectators = 4096

// spectators are the peers who watch a room's match without playing:
// each sees the frames a delay behind the cut, and sends no input.
type spectators struct {
	peers  []player // the spectators watching now
	ids    []int    // their peer ids, ascending, beside peers
	nextID int      // the next spectator's peer id (ids are not reused)
}

// find returns the spectator with id, or nil.
func (s *spectators) find(id int) *player {
	if i, ok := slices.BinarySearch(s.ids, id); ok {
		return &s.peers[i]
	}
	return nil
}

// add adds a spectator who sees the match delay behind the cut, with a
// peer id of firstID (the room's player count) or above, and returns its
// id and its state.
func (s *spectators) add(firstID int, delay time.Duration, redundancy int, now time.Time) (int, *player, error) {
	if len(s.peers) >= maxSpectators {
		return 0, nil, fmt.Errorf("%w: %d watching", ErrSpectatorsFull, len(s.peers))
	}
	id := max(s.nextID, firstID)
	s.nextID = id + 1
	s.peers = append(s.peers, player{peerState: peerState{redundancy: uint8(redundancy)}})
	s.ids = append(s.ids, id)
	sp := &s.peers[len(s.peers)-1]
	sp.initLife(now)
	sp.spectator, sp.delay = true, delay
	return id, sp, nil
}

// remove forgets the spectator with id; ids below firstID (the room's
// player count) are players'.
func (s *spectators) remove(id, firstID int) error {
	i, ok := slices.BinarySearch(s.ids, id)
	if id < firstID || !ok {
		return fmt.Errorf("%w: no spectator %d", ErrSlot, id)
	}
	s.peers = slices.Delete(s.peers, i, i+1)
	s.ids = slices.Delete(s.ids, i, i+1)
	return nil
}

// all yields each spectator watching, with its peer id, in id order.
func (s *spectators) all() iter.Seq2[int, *player] {
	return func(yield func(int, *player) bool) {
		for i := range s.peers {
			if !yield(s.ids[i], &s.peers[i]) {
				return
			}
		}
	}
}

// advanceVisible moves a spectator's visible frames up to now - delay:
// of the frames before next, cut on cfg's schedule from start.
func (sp *player) advanceVisible(next int, cfg *Config, start, now time.Time) {
	for sp.visible < next && !cfg.cutTime(start, sp.visible).Add(sp.delay).After(now) {
		sp.visible++
	}
}

//go:build !js

package engine

import (
	"time"

	"github.com/tongbu/tongbu/interest"
)

// Kick ends player's connections on this server now, in every room and
// world, with reason (at most 200 bytes) for its client, and refuses its
// resume credentials and the tickets of any session it began before now:
// a ticket the game server issued earlier, or a booking under way, lets
// it in no more. A world lets go of the player's entity (the Leave
// hook), a lockstep room of its slot's connection (the slot plays on,
// absent). A fresh ticket, issued after the kick, admits it again. It
// returns how many connections it ended; package cluster carries a kick
// to every node of a cluster (cluster.Kick).
func (s *Server) Kick(player, reason string) int {
	now := time.Now()
	s.creds.kick(player, now)
	s.mu.Lock()
	var ps []*peer
	for p := range s.peers {
		if p.ticket.Player == player {
			ps = append(ps, p)
		}
	}
	worlds := make([]*World, 0, len(s.worlds))
	for _, w := range s.worlds {
		worlds = append(worlds, w)
	}
	s.mu.Unlock()
	for _, p := range ps {
		p.kick(reason)
	}
	for _, w := range worlds {
		w.Do(func(*interest.World) { w.dropAwayPlayer(player) })
	}
	s.metrics.kicked(len(ps))
	s.log.Info("player kicked", "player", player, "reason", reason, "connections", len(ps))
	return len(ps)
}

// kick tells p's client it was kicked, and closes it: a client of wire
// version 5, which has no such bye, is told it was refused.
func (p *peer) kick(reason string) {
	if p.wire >= 6 {
		p.bye(byeKicked, reason)
		return
	}
	p.bye(byeRefused, "kicked: "+reason)
}

// dropAwayPlayer lets go of player's entity if the world holds it for a
// resume (its path was lost); on the worker.
func (w *World) dropAwayPlayer(player string) {
	if a, ok := w.away[player]; ok {
		w.letGo(player, a)
	}
}

//go:build !js

package engine

import (
	"time"
)

// offerResume gives p's client its resume credential now, and a fresh one
// every resumeRefresh until the connection is released.
func (s *Server) offerResume(p *peer) {
	if s.cfg.ResumeWindow < 0 {
		return
	}
	send := func() {
		var creds []string
		for range resumeCreds {
			tk, err := signTicket(s.cfg.Secret, Ticket{Player: p.ticket.Player, Target: p.ticket.Target, Role: p.ticket.Role,
				Expires: time.Now().Add(resumeTTL)})
			if err != nil {
				return
			}
			creds = append(creds, tk)
		}
		select {
		case <-p.conn.Done():
			return
		default:
		}
		p.conn.SendReliable(appendResume(nil, creds))
		p.resumeMu.Lock()
		if p.resume != nil {
			p.resume.Reset(resumeRefresh)
		}
		p.resumeMu.Unlock()
	}
	p.resumeMu.Lock()
	if p.released {
		p.resumeMu.Unlock()
		return
	}
	p.resume = time.AfterFunc(resumeRefresh, send)
	p.resumeMu.Unlock()
	send()
}

// stopResume stops the refreshes of p's credential.
func (p *peer) stopResume() {
	p.resumeMu.Lock()
	p.released = true
	if p.resume != nil {
		p.resume.Stop()
		p.resume = nil
	}
	p.resumeMu.Unlock()
}
